# libFuzzer targets (SAGEJIT_FUZZ=ON, as `make sanitize` configures). libFuzzer needs clang; the
# project's compiler is usually g++, so the fuzzer is compiled directly with clang++ over exactly the
# sources it needs (the tuning loader and the core helpers; config_id is inline in
# core/tile_config.hpp), independent of the main toolchain.
# Output: <build>/fuzz/fuzz_tuning_loader, run briefly by tools/scripts/run_fuzzers.sh.
if(NOT SAGEJIT_FUZZ)
  return()
endif()

if(CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  set(sagejit_fuzz_cxx ${CMAKE_CXX_COMPILER})
else()
  find_program(sagejit_fuzz_cxx NAMES clang++-22 clang++-21 clang++-20 clang++)
endif()
if(NOT sagejit_fuzz_cxx)
  message(WARNING "SAGEJIT_FUZZ=ON but no clang++ found: the libFuzzer targets are not built")
  return()
endif()

set(sagejit_fuzz_dir ${PROJECT_BINARY_DIR}/fuzz)
set(sagejit_fuzz_runtime_sources
  tuning/problem_key.cpp tuning/table_file.cpp tuning/tuning_table.cpp dev/table_merge.cpp tuning/miss_record.cpp
  jit/kernel_config.cpp core/target.cpp core/error.cpp core/log.cpp core/env.cpp core/types.cpp)
list(TRANSFORM sagejit_fuzz_runtime_sources PREPEND ${PROJECT_SOURCE_DIR}/runtime/src/)
set(sagejit_fuzz_sources ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/fuzz_tuning_loader.cpp ${sagejit_fuzz_runtime_sources})
file(GLOB sagejit_fuzz_headers CONFIGURE_DEPENDS
     ${PROJECT_SOURCE_DIR}/runtime/src/tuning/*.hpp ${PROJECT_SOURCE_DIR}/runtime/src/core/*.hpp)
get_target_property(sagejit_fmt_includes fmt::fmt-header-only INTERFACE_INCLUDE_DIRECTORIES)
get_target_property(sagejit_json_includes nlohmann_json::nlohmann_json INTERFACE_INCLUDE_DIRECTORIES)
# Only non-default dirs: "-isystem /usr/include" would break the #include_next of the C++ headers.
set(sagejit_fuzz_include_dirs)
foreach(dir IN LISTS sagejit_fmt_includes sagejit_json_includes)
  if(dir AND NOT dir IN_LIST CMAKE_CXX_IMPLICIT_INCLUDE_DIRECTORIES AND NOT dir STREQUAL "/usr/include")
    list(APPEND sagejit_fuzz_include_dirs ${dir})
  endif()
endforeach()
list(REMOVE_DUPLICATES sagejit_fuzz_include_dirs)
set(sagejit_fuzz_includes)
foreach(dir IN LISTS sagejit_fuzz_include_dirs)
  list(APPEND sagejit_fuzz_includes -isystem ${dir})
endforeach()

add_custom_command(
  OUTPUT ${sagejit_fuzz_dir}/fuzz_tuning_loader
  COMMAND ${CMAKE_COMMAND} -E make_directory ${sagejit_fuzz_dir}
  COMMAND ${sagejit_fuzz_cxx} -std=c++20 -g -O1 -fno-omit-frame-pointer
          -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
          -DFMT_HEADER_ONLY=1
          -I${PROJECT_SOURCE_DIR}/runtime/include -I${PROJECT_SOURCE_DIR}/runtime/src
          -I${PROJECT_SOURCE_DIR}/kernel_src ${sagejit_fuzz_includes}
          ${sagejit_fuzz_sources} -o ${sagejit_fuzz_dir}/fuzz_tuning_loader
  DEPENDS ${sagejit_fuzz_sources} ${sagejit_fuzz_headers}
  COMMENT "Building libFuzzer target fuzz_tuning_loader with ${sagejit_fuzz_cxx}"
  VERBATIM)
add_custom_target(fuzz_tuning_loader ALL DEPENDS ${sagejit_fuzz_dir}/fuzz_tuning_loader)
