# MX / NVFP4 block quantization (DESIGN.md section 5, include/mxpack/mx.h).
mxpack_add_test(mx_test ${CMAKE_CURRENT_SOURCE_DIR}/mx_test.cc)
