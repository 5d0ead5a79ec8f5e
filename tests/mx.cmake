# MX / NVFP4 block quantization (DESIGN.md section 5, include/mxpack/mx.h).
mxpack_add_test(mx_test ${CMAKE_CURRENT_SOURCE_DIR}/mx_test.cc)
add_test(NAME mx_cli_test COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/mx_cli_test.sh
         $<TARGET_FILE:mxpack_cli>)
set_tests_properties(mx_cli_test PROPERTIES LABELS "unit;cli" TIMEOUT 120)
