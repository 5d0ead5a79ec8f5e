# SIMD conversions: every compiled target against the scalar reference.
mxpack_add_test(convert_test ${CMAKE_CURRENT_SOURCE_DIR}/convert_test.cc)
target_link_libraries(convert_test PRIVATE hwy::hwy)
