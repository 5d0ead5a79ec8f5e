# The Python extension module `mxpack._mxpack` (nanobind), built by
# scikit-build-core from pyproject.toml: `pip install .` configures this
# project with -DMXPACK_PYTHON=ON. Off by default, so normal builds are
# unaffected.
option(MXPACK_PYTHON "Build the nanobind Python module (pip install .)" OFF)

if(MXPACK_PYTHON)
  # The static library is linked into a shared module.
  set_target_properties(mxpack PROPERTIES POSITION_INDEPENDENT_CODE ON)

  find_package(Python 3.9 REQUIRED COMPONENTS Interpreter Development.Module)
  if(NOT nanobind_DIR)
    execute_process(
      COMMAND "${Python_EXECUTABLE}" -m nanobind --cmake_dir
      OUTPUT_VARIABLE nanobind_DIR OUTPUT_STRIP_TRAILING_WHITESPACE
      RESULT_VARIABLE _mxpack_nb_result)
    if(NOT _mxpack_nb_result EQUAL 0)
      message(FATAL_ERROR
        "MXPACK_PYTHON=ON needs nanobind in ${Python_EXECUTABLE} "
        "(pip install nanobind), or -Dnanobind_DIR=...")
    endif()
  endif()
  find_package(nanobind CONFIG REQUIRED)

  # Every python/src/*.cc is part of the module.
  file(GLOB MXPACK_PYTHON_SOURCES CONFIGURE_DEPENDS
       ${CMAKE_CURRENT_SOURCE_DIR}/python/src/*.cc)
  nanobind_add_module(_mxpack NB_STATIC ${MXPACK_PYTHON_SOURCES})
  target_include_directories(_mxpack PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
  target_compile_options(_mxpack PRIVATE ${MXPACK_WARNINGS})
  target_link_libraries(_mxpack PRIVATE mxpack)
  # nanobind's headers are not written for our warning flags.
  if(TARGET nanobind-static)
    set_target_properties(nanobind-static PROPERTIES SYSTEM ON)
  endif()
  # The wheel's install prefix is the package directory (pyproject.toml
  # wheel.install-dir = "mxpack").
  install(TARGETS _mxpack LIBRARY DESTINATION . COMPONENT python)
endif()
