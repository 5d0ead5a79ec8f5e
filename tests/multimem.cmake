# multimem (DESIGN.md section 4): validator, scalar model, SIMD kernels.
mxpack_add_test(multimem_validator_test ${CMAKE_CURRENT_LIST_DIR}/multimem_validator_test.cc)
mxpack_add_test(multimem_model_test ${CMAKE_CURRENT_LIST_DIR}/multimem_model_test.cc)
mxpack_add_test(multimem_simd_test ${CMAKE_CURRENT_LIST_DIR}/multimem_simd_test.cc HWY)
