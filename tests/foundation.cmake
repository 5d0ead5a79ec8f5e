# Foundation: format traits, scalar reference, CLI, CUDA host cross-check and
# the opt-in 2^32 sweep.
mxpack_add_test(scalar_test ${CMAKE_CURRENT_SOURCE_DIR}/scalar_test.cc)

add_test(NAME cli_test COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cli_test.sh
         $<TARGET_FILE:mxpack_cli>)
set_tests_properties(cli_test PROPERTIES LABELS "unit;cli" TIMEOUT 300)

if(MXPACK_CUDA_INCLUDE_DIR)
  mxpack_add_test(cuda_host_test ${CMAKE_CURRENT_SOURCE_DIR}/cuda_host_test.cc
                  LABELS cuda-host TIMEOUT 900)
  target_include_directories(cuda_host_test SYSTEM PRIVATE ${MXPACK_CUDA_INCLUDE_DIR})
else()
  # Registered so the absence is visible: reports SKIPPED (exit code 77).
  add_test(NAME cuda_host_test COMMAND sh -c
           "echo 'SKIPPED: CUDA toolkit headers (cuda_fp8.hpp) not found'; exit 77")
  set_tests_properties(cuda_host_test PROPERTIES LABELS cuda-host SKIP_RETURN_CODE 77)
endif()

mxpack_add_test(exhaustive_scalar_test
                ${CMAKE_CURRENT_SOURCE_DIR}/exhaustive_scalar_test.cc
                LABELS exhaustive TIMEOUT 14400 NO_DISCOVER)
