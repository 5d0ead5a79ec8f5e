# CUDA backend tests (cmake/cuda.cmake). The forms test and the gpu-verify
# CLI test run in every build; the PTX inspection and the runtime tests need
# the backend and are registered only when it is built. Runtime tests report
# SKIPPED (GTEST_SKIP) with the reason when no capable GPU is present.
mxpack_add_test(cuda_backend_forms_test cuda_backend_forms_test.cc)
target_link_libraries(cuda_backend_forms_test PRIVATE mxpack_cuda)

add_test(NAME cuda_backend_gpu_verify_test
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cuda_backend_gpu_verify_test.sh
                 $<TARGET_FILE:mxpack_cli>)
set_tests_properties(cuda_backend_gpu_verify_test PROPERTIES LABELS unit TIMEOUT 120)

if(MXPACK_CUDA_ENABLED)
  mxpack_add_test(cuda_backend_ptx_test cuda_backend_ptx_test.cc)
  target_link_libraries(cuda_backend_ptx_test PRIVATE mxpack_cuda)
  target_compile_definitions(cuda_backend_ptx_test PRIVATE
                             MXPACK_CUDA_PTX_DIR="${MXPACK_CUDA_PTX_DIR}")
  add_dependencies(cuda_backend_ptx_test mxpack_cuda_ptx)

  mxpack_add_test(cuda_backend_runtime_test cuda_backend_runtime_test.cc)
  target_link_libraries(cuda_backend_runtime_test PRIVATE mxpack_cuda)
endif()
