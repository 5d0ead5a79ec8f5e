# safetensors support (src/io, src/model): the JSON header parser/writer comes
# from Debian's nlohmann-json3-dev; the model metadata records the version.
find_package(nlohmann_json 3 REQUIRED)
target_link_libraries(mxpack PRIVATE nlohmann_json::nlohmann_json)
target_compile_definitions(mxpack PRIVATE MXPACK_LIB_VERSION="${PROJECT_VERSION}")
