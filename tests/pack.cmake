# Packed layouts and tcgen05.cp decompression (DESIGN.md section 2).
mxpack_add_test(pack_bitorder_test ${CMAKE_CURRENT_SOURCE_DIR}/pack_bitorder_test.cc)
mxpack_add_test(pack_test ${CMAKE_CURRENT_SOURCE_DIR}/pack_test.cc HWY)
