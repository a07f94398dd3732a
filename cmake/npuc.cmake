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
