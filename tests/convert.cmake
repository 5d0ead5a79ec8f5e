# SIMD conversions: every compiled target against the scalar reference.
mxpack_add_test(convert_test ${CMAKE_CURRENT_SOURCE_DIR}/convert_test.cc)
target_link_libraries(convert_test PRIVATE hwy::hwy)
# Opt-in: all 2^32 f32 inputs, every format, policy and compiled target
# (see the file comment for exactly what is compared); ~1300 CPU-seconds, about
# 11 min on 2 idle cores (46 min wall measured on a shared, loaded machine).
mxpack_add_test(exhaustive_simd_test ${CMAKE_CURRENT_SOURCE_DIR}/exhaustive_simd_test.cc
                LABELS exhaustive TIMEOUT 7200 NO_DISCOVER)
target_link_libraries(exhaustive_simd_test PRIVATE hwy::hwy)
