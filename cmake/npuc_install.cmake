# `cmake --install <build> --prefix P` lays out:
#   P/bin/npuc                               the CLI (the compiler; statically linked against npuc's libraries)
#   P/share/npuc/targets/*.yaml              the target files
#   P/include/npuc/npuc.h                    the C API
#   P/include/npuc/{runtime,tensor,dtype,error}.hpp   the C++ runtime API
#   P/include/npuc/custom_op.h               the custom-op plugin ABI (plugins build against it alone)
#   P/include/npuc/openvx_compat.h           RKNN-style OpenVX kernels over that ABI (header only)
#   P/lib/libnpuc.so{,.0.1,.0.1.0}           C API + C++ runtime API (src/capi/CMakeLists.txt says why one shared library)
#   P/lib/cmake/npuc/npucConfig.cmake, npucConfigVersion.cmake, npucTargets*.cmake
# so that a client does
#   find_package(npuc REQUIRED)
#   target_link_libraries(app PRIVATE npuc::runtime)
# include/npuc/model.hpp (the compiler API) is not installed: its implementation (npuc_driver and the compiler
# libraries, with protobuf/ONNX/yaml-cpp/xlsxwriter behind them) is not part of the runtime library; the
# installed compiler is the `npuc` binary.
include(CMakePackageConfigHelpers)

install(TARGETS npuc_shared EXPORT npucTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT runtime NAMELINK_COMPONENT dev
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT dev
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT runtime)
install(FILES
  ${PROJECT_SOURCE_DIR}/include/npuc/npuc.h
  ${PROJECT_SOURCE_DIR}/include/npuc/runtime.hpp
  ${PROJECT_SOURCE_DIR}/include/npuc/tensor.hpp
  ${PROJECT_SOURCE_DIR}/include/npuc/dtype.hpp
  ${PROJECT_SOURCE_DIR}/include/npuc/error.hpp
  ${PROJECT_SOURCE_DIR}/include/npuc/custom_op.h
  ${PROJECT_SOURCE_DIR}/include/npuc/openvx_compat.h
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/npuc COMPONENT dev)
install(TARGETS npuc RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT compiler)
# The target files the compiler reads. The binary's built-in search path is the source tree's targets/; an
# installed npuc used without the source tree needs NPUC_TARGETS_DIR=P/share/npuc/targets (docs/runtime-api.md).
install(DIRECTORY ${PROJECT_SOURCE_DIR}/targets/ DESTINATION ${CMAKE_INSTALL_DATADIR}/npuc/targets COMPONENT compiler
  FILES_MATCHING PATTERN "*.yaml")

set(NPUC_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/npuc)
install(EXPORT npucTargets NAMESPACE npuc:: DESTINATION ${NPUC_CMAKE_DIR} COMPONENT dev)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/npucConfig.cmake.in
  ${PROJECT_BINARY_DIR}/cmake/npucConfig.cmake INSTALL_DESTINATION ${NPUC_CMAKE_DIR})
# 0.x: a minor release may change the API, so only the same MAJOR.MINOR is compatible.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/cmake/npucConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/cmake/npucConfig.cmake ${PROJECT_BINARY_DIR}/cmake/npucConfigVersion.cmake
  DESTINATION ${NPUC_CMAKE_DIR} COMPONENT dev)
