# Optional CUDA backend (issue 8): library `mxpack_cuda` (include/mxpack/cuda.h),
# linked into the CLI for `mxpack gpu-verify`.
#
#   -DMXPACK_CUDA=AUTO (default)  build the backend when nvcc is found
#   -DMXPACK_CUDA=ON              require it
#   -DMXPACK_CUDA=OFF             host-only: the API reports kUnavailable
#                                 "built without CUDA"
#
# Device code is built for sm_100a (tcgen05, fp4/fp6/ue8m0 cvt, cvt.rs, fp8
# multimem) and sm_90 (+ compute_90 PTX for newer GPUs: fp8 cvt, f16/bf16/f32
# and integer multimem). The CUDA runtime is linked statically and the driver
# is reached through cudaGetDriverEntryPointByVersion, so the binaries start
# on machines without a GPU driver. For the PTX-inspection test the build
# also keeps `<build>/cuda_ptx/<kernel>.<arch>.ptx` and a ptxas-assembled
# `<kernel>.sm_100a.cubin`.
set(MXPACK_CUDA AUTO CACHE STRING "Build the CUDA backend: AUTO, ON or OFF")
set_property(CACHE MXPACK_CUDA PROPERTY STRINGS AUTO ON OFF)

set(MXPACK_CUDA_ENABLED OFF)
if(NOT MXPACK_CUDA STREQUAL "OFF")
  include(CheckLanguage)
  if(NOT CMAKE_CUDA_COMPILER)
    find_program(MXPACK_NVCC nvcc HINTS ENV CUDA_HOME ENV CUDA_PATH /usr/local/cuda
                 PATH_SUFFIXES bin)
    if(MXPACK_NVCC)
      set(CMAKE_CUDA_COMPILER "${MXPACK_NVCC}" CACHE FILEPATH "CUDA compiler")
    endif()
  endif()
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    set(MXPACK_CUDA_ENABLED ON)
  elseif(MXPACK_CUDA STREQUAL "ON")
    message(FATAL_ERROR "MXPACK_CUDA=ON but no CUDA compiler (nvcc) was found; "
                        "set CUDACXX or CMAKE_CUDA_COMPILER, or use -DMXPACK_CUDA=OFF")
  else()
    message(STATUS "mxpack: no nvcc found, building without the CUDA backend")
  endif()
endif()

set(MXPACK_CUDA_HOST_SOURCES
  ${PROJECT_SOURCE_DIR}/src/cuda/forms.cc
  ${PROJECT_SOURCE_DIR}/src/cuda/verify.cc)
set(MXPACK_CUDA_KERNELS kernels_cvt kernels_tcgen05 kernels_multimem)

if(MXPACK_CUDA_ENABLED)
  # The architectures are passed as explicit -gencode flags (CMake 3.25 does
  # not know sm_100a); OFF keeps CMake from adding its own.
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
    set(CMAKE_CUDA_ARCHITECTURES OFF)
  endif()
  enable_language(CUDA)
  find_package(CUDAToolkit REQUIRED)
  message(STATUS "mxpack: CUDA backend on (nvcc ${CMAKE_CUDA_COMPILER_VERSION}, "
                 "sm_100a + sm_90)")
  set(MXPACK_CUDA_GENCODE
    "SHELL:-gencode arch=compute_100a,code=sm_100a"
    "SHELL:-gencode arch=compute_90,code=[sm_90,compute_90]")
  set(MXPACK_CUDA_KERNEL_SOURCES "")
  foreach(k ${MXPACK_CUDA_KERNELS})
    list(APPEND MXPACK_CUDA_KERNEL_SOURCES ${PROJECT_SOURCE_DIR}/src/cuda/${k}.cu)
  endforeach()
  add_library(mxpack_cuda STATIC
    ${MXPACK_CUDA_HOST_SOURCES}
    ${PROJECT_SOURCE_DIR}/src/cuda/runtime.cc
    ${MXPACK_CUDA_KERNEL_SOURCES})
  target_compile_definitions(mxpack_cuda PUBLIC MXPACK_HAVE_CUDA=1)
  target_compile_options(mxpack_cuda PRIVATE
    $<$<COMPILE_LANGUAGE:CXX>:${MXPACK_WARNINGS}>
    $<$<COMPILE_LANGUAGE:CUDA>:${MXPACK_CUDA_GENCODE}>
    $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall,-Wextra>
    $<$<AND:$<COMPILE_LANGUAGE:CUDA>,$<BOOL:${MXPACK_WERROR}>>:--Werror=all-warnings>)
  set_target_properties(mxpack_cuda PROPERTIES CUDA_STANDARD 17 CUDA_STANDARD_REQUIRED ON
                        CUDA_RUNTIME_LIBRARY Static)
  target_include_directories(mxpack_cuda PRIVATE ${PROJECT_SOURCE_DIR})
  # cudart_static (plus dl/rt/pthread); never libcuda.so.
  target_link_libraries(mxpack_cuda PUBLIC mxpack PRIVATE CUDA::cudart_static
                        absl::str_format absl::strings)
  target_include_directories(mxpack_cuda PRIVATE ${CUDAToolkit_INCLUDE_DIRS})

  # Kept PTX per kernel file and architecture, and the sm_100a cubins
  # assembled by ptxas, for tests/cuda_backend.cmake.
  set(MXPACK_CUDA_PTX_DIR ${PROJECT_BINARY_DIR}/cuda_ptx)
  set(MXPACK_CUDA_PTX_FILES "")
  foreach(k ${MXPACK_CUDA_KERNELS})
    set(src ${PROJECT_SOURCE_DIR}/src/cuda/${k}.cu)
    foreach(arch sm_100a sm_90)
      string(REPLACE "sm_" "compute_" virt ${arch})
      set(ptx ${MXPACK_CUDA_PTX_DIR}/${k}.${arch}.ptx)
      add_custom_command(OUTPUT ${ptx}
        COMMAND ${CMAKE_COMMAND} -E make_directory ${MXPACK_CUDA_PTX_DIR}
        COMMAND ${CMAKE_CUDA_COMPILER} -std=c++17 -ptx -arch=${virt}
                -I${PROJECT_SOURCE_DIR} ${src} -o ${ptx}
        DEPENDS ${src} ${PROJECT_SOURCE_DIR}/src/cuda/kernels.h
                ${PROJECT_SOURCE_DIR}/src/cuda/kernels_common.cuh
                ${PROJECT_SOURCE_DIR}/src/cuda/cvt_forms.inc
                ${PROJECT_SOURCE_DIR}/src/cuda/tmem_forms.inc
                ${PROJECT_SOURCE_DIR}/src/cuda/tmem_ld_forms.inc
                ${PROJECT_SOURCE_DIR}/src/cuda/tmem_st_forms.inc
                ${PROJECT_SOURCE_DIR}/src/cuda/multimem_forms.inc
        COMMENT "nvcc -ptx ${k}.cu for ${arch}"
        VERBATIM)
      list(APPEND MXPACK_CUDA_PTX_FILES ${ptx})
    endforeach()
    set(cubin ${MXPACK_CUDA_PTX_DIR}/${k}.sm_100a.cubin)
    get_filename_component(nvcc_dir ${CMAKE_CUDA_COMPILER} DIRECTORY)
    find_program(MXPACK_PTXAS ptxas HINTS ${nvcc_dir} REQUIRED)
    add_custom_command(OUTPUT ${cubin}
      COMMAND ${MXPACK_PTXAS} -arch=sm_100a ${MXPACK_CUDA_PTX_DIR}/${k}.sm_100a.ptx
              -o ${cubin}
      DEPENDS ${MXPACK_CUDA_PTX_DIR}/${k}.sm_100a.ptx
      COMMENT "ptxas ${k}.sm_100a.ptx -> ${k}.sm_100a.cubin"
      VERBATIM)
    list(APPEND MXPACK_CUDA_PTX_FILES ${cubin})
  endforeach()
  add_custom_target(mxpack_cuda_ptx ALL DEPENDS ${MXPACK_CUDA_PTX_FILES})
else()
  add_library(mxpack_cuda STATIC ${MXPACK_CUDA_HOST_SOURCES}
              ${PROJECT_SOURCE_DIR}/src/cuda/unavailable.cc)
  target_compile_options(mxpack_cuda PRIVATE ${MXPACK_WARNINGS})
  target_include_directories(mxpack_cuda PRIVATE ${PROJECT_SOURCE_DIR})
  target_link_libraries(mxpack_cuda PUBLIC mxpack PRIVATE absl::str_format absl::strings)
endif()
target_link_libraries(mxpack_cuda PRIVATE Threads::Threads)
add_library(mxpack::cuda ALIAS mxpack_cuda)
target_link_libraries(mxpack_cli PRIVATE mxpack_cuda)
