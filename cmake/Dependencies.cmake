# Required libraries (Debian packages: libfmt-dev nlohmann-json3-dev doctest-dev libcli11-dev libxxhash-dev).
find_package(fmt REQUIRED)            # used header-only (fmt::fmt-header-only): no libfmt.so at run time
find_package(nlohmann_json 3.10 REQUIRED)
find_package(CLI11 REQUIRED)
if(SAGEJIT_BUILD_TESTS)
  find_package(doctest REQUIRED)       # tests only: a wheel build does not need it
endif()
find_package(Threads REQUIRED)

# xxHash ships no CMake config on Debian 12; we use it header-only (XXH_INLINE_ALL).
find_path(XXHASH_INCLUDE_DIR xxhash.h REQUIRED)
add_library(sagejit_xxhash INTERFACE)
target_include_directories(sagejit_xxhash INTERFACE ${XXHASH_INCLUDE_DIR})
target_compile_definitions(sagejit_xxhash INTERFACE XXH_INLINE_ALL)

# Optional parts: detected, never required. The GPU runtimes themselves are loaded with dlopen at
# run time, so these only decide which headers/tools the tests and the summary can rely on.
find_path(SAGEJIT_CUDA_INCLUDE_DIR cuda.h PATHS /usr/local/cuda/include ENV CUDA_HOME PATH_SUFFIXES include)
find_path(SAGEJIT_NVRTC_INCLUDE_DIR nvrtc.h PATHS /usr/local/cuda/include ENV CUDA_HOME PATH_SUFFIXES include)
find_path(SAGEJIT_HIP_INCLUDE_DIR hip/hip_runtime_api.h PATHS /opt/rocm/include /usr/include)
find_program(SAGEJIT_CLANG_EXECUTABLE NAMES clang++-22 clang++-21 clang++-20)
find_program(SAGEJIT_NVCC_EXECUTABLE nvcc PATHS /usr/local/cuda/bin)
find_program(SAGEJIT_LLVM_OBJDUMP NAMES llvm-objdump-22 llvm-objdump-21 llvm-objdump-20 llvm-objdump)
find_program(SAGEJIT_LLVM_READELF NAMES llvm-readelf-22 llvm-readelf-21 llvm-readelf-20 llvm-readelf)
find_library(SAGEJIT_LIBAMDHIP64 NAMES amdhip64 PATHS /opt/rocm/lib)
