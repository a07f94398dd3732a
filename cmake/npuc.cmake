# Shared build settings for npuc's own targets (third-party code never gets -Werror).
set(NPUC_WARNINGS -Wall -Wextra -Werror -Wno-unused-parameter)
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  # GCC 12 false positives in libstdc++ and yaml-cpp header code at -O2/-O3 (GCC bugs 105329, 108088, 106393).
  list(APPEND NPUC_WARNINGS -Wno-restrict -Wno-free-nonheap-object -Wno-dangling-pointer)
  # GCC 12 at -O3 also reports std::string's own copies (char_traits::copy inlined into operator+ / insert) as
  # out-of-bounds memcpy wherever the inliner happens to take them, which the precompiled standard headers change
  # (GCC bugs 105651, 107138). Fixed in GCC 13; clang (the fuzz preset) and the sanitizers keep checking.
  if(CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
    list(APPEND NPUC_WARNINGS -Wno-stringop-overflow -Wno-stringop-overread -Wno-array-bounds)
  endif()
elseif(CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  # `#pragma GCC unroll` is a hint; clang (the fuzz preset, with sanitizers) reports the loops it does not unroll.
  list(APPEND NPUC_WARNINGS -Wno-pass-failed)
endif()
# No implicit a*b+c -> fma contraction anywhere: the reference kernels define every rounding step.
add_compile_options(-ffp-contract=off)

if(NPUC_SANITIZE)
  add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
  add_link_options(-fsanitize=address,undefined)
endif()
if(NPUC_FUZZ)
  add_compile_options(-fsanitize=fuzzer-no-link)
endif()

# npuc_library(name SOURCES... [DEPS ...] [PUBLIC_DEPS ...])
# One static library per source folder; DEPS are what the architecture map allows that folder.
function(npuc_library name)
  cmake_parse_arguments(A "" "" "SOURCES;DEPS;PUBLIC_DEPS" ${ARGN})
  add_library(${name} STATIC ${A_SOURCES})
  target_compile_options(${name} PRIVATE ${NPUC_WARNINGS})
  target_include_directories(${name} PUBLIC ${PROJECT_SOURCE_DIR}/src ${PROJECT_SOURCE_DIR}/include)
  target_link_libraries(${name} PUBLIC ${A_DEPS} ${A_PUBLIC_DEPS})
  npuc_use_pch(${name})
endfunction()

# Precompiled headers (issue 52: a first build in minutes). The standard library and fmt are parsed once per build
# instead of once per source file: one precompiled header for the libraries, the CLI and the Python module
# (`npuc_pch`), one with GoogleTest too for the tests (`npuc_test_pch`, compiled at NPUC_TEST_OPT). Each target reuses
# one of them (`npuc_use_pch`); sources compiled with their own instruction-set flags (the x86 kernels) skip it.
# Only third-party headers go in: a change to npuc's own headers rebuilds what includes them, as before.
option(NPUC_PCH "Precompile the standard library, fmt (and GoogleTest for the tests) once per build" ON)
# Test code is compiled at -O1: it calls the libraries (compiled at the build type's level), and at -O3 GoogleTest's
# macros cost twice the compile time for no benefit. Floating-point results do not depend on the level
# (-ffp-contract=off, SSE arithmetic).
set(NPUC_TEST_OPT -O1)
set(NPUC_PCH_HEADERS <algorithm> <array> <atomic> <chrono> <cmath> <cstdint> <cstdio> <cstdlib> <cstring> <filesystem>
    <fstream> <functional> <limits> <map> <memory> <mutex> <numeric> <optional> <set> <span> <sstream> <string>
    <string_view> <thread> <unordered_map> <utility> <variant> <vector> <fmt/format.h>)

# npuc_pch_targets(): the precompiled-header holders (call after find_package(fmt) / find_package(GTest)): one for
# the libraries (-fPIC), one for executables (-fPIE: a precompiled header is used only with the flags it was made
# with), one for the tests (executables, with GoogleTest and NPUC_TEST_OPT).
function(npuc_pch_holder name opts headers)
  add_library(${name} OBJECT ${PROJECT_BINARY_DIR}/npuc_pch.cpp)
  target_compile_options(${name} PRIVATE ${NPUC_WARNINGS} ${opts})
  target_link_libraries(${name} PRIVATE fmt::fmt)
  target_precompile_headers(${name} PRIVATE ${headers})
endfunction()

function(npuc_pch_targets)
  if(NOT NPUC_PCH)
    return()
  endif()
  file(WRITE ${PROJECT_BINARY_DIR}/npuc_pch.cpp "// Holds a precompiled header npuc's targets reuse.\n")
  npuc_pch_holder(npuc_pch "" "${NPUC_PCH_HEADERS}")
  npuc_pch_holder(npuc_exe_pch "-fPIE" "${NPUC_PCH_HEADERS}")
  set_target_properties(npuc_exe_pch PROPERTIES POSITION_INDEPENDENT_CODE OFF)
  if(TARGET GTest::gtest)
    npuc_pch_holder(npuc_test_pch "-fPIE;${NPUC_TEST_OPT}" "${NPUC_PCH_HEADERS};<gtest/gtest.h>")
    set_target_properties(npuc_test_pch PROPERTIES POSITION_INDEPENDENT_CODE OFF)
    target_link_libraries(npuc_test_pch PRIVATE GTest::gtest)
  endif()
endfunction()

# npuc_use_pch(target [TEST]): the target's sources start from the shared precompiled header of its kind (TEST: the
# tests' one, and NPUC_TEST_OPT).
function(npuc_use_pch target)
  cmake_parse_arguments(A "TEST" "" "" ${ARGN})
  if(A_TEST)
    target_compile_options(${target} PRIVATE ${NPUC_TEST_OPT})
  endif()
  if(NOT NPUC_PCH)
    return()
  endif()
  get_target_property(type ${target} TYPE)
  if(A_TEST)
    target_precompile_headers(${target} REUSE_FROM npuc_test_pch)
  elseif(type STREQUAL "EXECUTABLE")
    target_precompile_headers(${target} REUSE_FROM npuc_exe_pch)
  else()
    target_precompile_headers(${target} REUSE_FROM npuc_pch)
  endif()
endfunction()
