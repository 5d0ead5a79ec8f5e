# Python bindings (python/, cmake/python.cmake): a fixture that creates
# <build>/venv-python and runs `pip install .` of this repository into it
# (incremental build in <build>/py-build), then the pytest suite, which
# compares every binding bit for bit with the C++ CLI ($MXPACK_CLI).
# Both report "skipped" when python3, venv or Python.h are unavailable.
find_program(MXPACK_PYTHON3_EXECUTABLE NAMES python3 python)
if(NOT MXPACK_PYTHON3_EXECUTABLE)
  set(MXPACK_PYTHON3_EXECUTABLE python3)
endif()

# The module is built with this build's MXPACK_WERROR (CI: ON).
add_test(NAME python_setup
  COMMAND bash ${PROJECT_SOURCE_DIR}/python/tests/setup_venv.sh
          ${CMAKE_BINARY_DIR} ${PROJECT_SOURCE_DIR} ${MXPACK_PYTHON3_EXECUTABLE}
          ${MXPACK_WERROR})
set_tests_properties(python_setup PROPERTIES
  FIXTURES_SETUP mxpack_python LABELS python TIMEOUT 1800
  SKIP_RETURN_CODE 77 RESOURCE_LOCK mxpack_python_venv)

add_test(NAME python_pytest
  COMMAND bash ${PROJECT_SOURCE_DIR}/python/tests/run_pytest.sh
          ${CMAKE_BINARY_DIR} ${PROJECT_SOURCE_DIR})
set_tests_properties(python_pytest PROPERTIES
  FIXTURES_REQUIRED mxpack_python LABELS python TIMEOUT 600
  SKIP_RETURN_CODE 77 RESOURCE_LOCK mxpack_python_venv
  ENVIRONMENT "MXPACK_CLI=$<TARGET_FILE:mxpack_cli>")
