# Shared build settings for npuc's own targets (third-party code never gets -Werror).
set(NPUC_WARNINGS -Wall -Wextra -Werror -Wno-unused-parameter)
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  # GCC 12 false positives in libstdc++ and yaml-cpp header code at -O2/-O3 (GCC bugs 105329, 108088, 106393).
  list(APPEND NPUC_WARNINGS -Wno-restrict -Wno-free-nonheap-object -Wno-dangling-pointer)
elseif(CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  # `#pragma GCC unroll` is a hint; clang (the fuzz preset, with sanitizers) reports the loops it does not unroll.
  list(APPEND NPUC_WARNINGS -Wno-pass-failed)
endif()
# No implicit a*b+c -> fma contraction anywhere: the reference kernels define every rounding step.
add_compile_options(-ffp-contract=off)

if(NPUC_SANITIZE)
  add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    # The sanitizers' instrumentation makes GCC's -Wmaybe-uninitialized report libstdc++'s own std::regex / std::function
    # moves (tools/npuc/cli_common.cpp); the release build keeps the warning, and ASan / UBSan check at run time.
    list(APPEND NPUC_WARNINGS -Wno-maybe-uninitialized)
  endif()
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
endfunction()

# Per-layer code builds at -O1 (issue 52: a first build in minutes; -O1 cuts its compile time by a third, -O2 by a
# tenth): importers, graph passes, target checks, pre/post planning, memory planning, code generation, the package
# writer / reader / checks, the driver and the CLI rewrite graphs and keep books, per node or per layer. What runs
# per element or per inference (the kernels, the reference engine, the runtime's executor, image and pre-processing
# code, calibration and quantization) keeps the build type's level. Floating-point results do not depend on the
# level (-ffp-contract=off, SSE arithmetic). Debug builds keep -O0. With NPUC_UNITY (the release preset) these
# libraries also compile in unity batches of NPUC_UNITY_BATCH files: their files share heavy headers (protobuf,
# yaml-cpp, nlohmann-json, fmt) and the same template instantiations, parsed and compiled once per batch instead of
# once per file. The price is that names local to a file (anonymous namespaces, static functions, file-level using
# declarations) share a batch: two files of one library never define the same local name (the build fails on a
# redefinition, and a different overload of the same name would be picked silently). npuc_per_layer_code(targets...)
# applies both; CMakeLists.txt lists the targets in one place.
set(NPUC_PER_LAYER_OPT $<$<NOT:$<CONFIG:Debug>>:-O1>)
function(npuc_per_layer_code)
  foreach(t ${ARGN})
    target_compile_options(${t} PRIVATE ${NPUC_PER_LAYER_OPT})
    if(NPUC_UNITY)
      set_target_properties(${t} PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE ${NPUC_UNITY_BATCH})
    endif()
  endforeach()
endfunction()

# Test code compiles at -O1 (issue 52: a first build in minutes): it calls the libraries, which keep the build
# type's level, and at -O3 GoogleTest's macros cost twice the compile time for no benefit. Floating-point results do
# not depend on the level (-ffp-contract=off, SSE arithmetic). npuc_test_options(target) applies it.
set(NPUC_TEST_OPT -O1)
function(npuc_test_options target)
  target_compile_options(${target} PRIVATE ${NPUC_WARNINGS} ${NPUC_TEST_OPT})
endfunction()
