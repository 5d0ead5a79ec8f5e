# safetensors I/O and whole-checkpoint quantization (quantize-model,
# dequantize-model, inspect, demo).
mxpack_add_test(safetensors_test ${CMAKE_CURRENT_LIST_DIR}/safetensors_test.cc)
mxpack_add_test(model_test ${CMAKE_CURRENT_LIST_DIR}/model_test.cc TIMEOUT 300)
target_link_libraries(model_test PRIVATE nlohmann_json::nlohmann_json)

# The CLI end to end: outputs, reports, determinism and error paths.
add_test(NAME model_cli_test
         COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/model_cli_test.sh $<TARGET_FILE:mxpack_cli>)
set_tests_properties(model_cli_test PROPERTIES LABELS "unit;cli" TIMEOUT 300)

# Interoperability with the reference implementation (Python `safetensors`
# from PyPI, with numpy) in a virtualenv kept in the build tree; exit code 77
# (SKIPPED, with the reason printed) when python3 venv/pip or PyPI is not
# available.
add_test(NAME model_interop_test
         COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/model_interop_test.sh
                 $<TARGET_FILE:mxpack_cli> ${CMAKE_BINARY_DIR}/venv-safetensors
                 ${CMAKE_CURRENT_LIST_DIR}/model_interop.py)
set_tests_properties(model_interop_test PROPERTIES LABELS "unit;interop" TIMEOUT 600
                     SKIP_RETURN_CODE 77)
