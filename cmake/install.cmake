# `cmake --install`: the public headers, the library (static, or shared with
# BUILD_SHARED_LIBS), the `mxpack` CLI and an exported CMake package, so that
# a consumer writes
#   find_package(mxpack 0.1 REQUIRED)
#   target_link_libraries(app PRIVATE mxpack::mxpack)
# tests/install/ configures, builds and runs such a consumer against an
# installed copy.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/mxpack
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT devel
        FILES_MATCHING PATTERN "*.h"
        # The CUDA backend (mxpack_cuda) is built for the CLI and its tests only.
        PATTERN "cuda.h" EXCLUDE)
install(TARGETS mxpack EXPORT mxpackTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT devel
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT runtime
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT runtime)
install(TARGETS mxpack_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
        COMPONENT runtime)

set(MXPACK_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/mxpack)
install(EXPORT mxpackTargets NAMESPACE mxpack:: DESTINATION ${MXPACK_CMAKE_DIR}
        COMPONENT devel)
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/mxpackConfig.cmake.in
  ${PROJECT_BINARY_DIR}/mxpackConfig.cmake INSTALL_DESTINATION ${MXPACK_CMAKE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/mxpackConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/mxpackConfig.cmake
              ${PROJECT_BINARY_DIR}/mxpackConfigVersion.cmake
        DESTINATION ${MXPACK_CMAKE_DIR} COMPONENT devel)
