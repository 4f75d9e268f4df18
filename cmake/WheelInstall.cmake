# Install rules of the Python wheel (SAGEJIT_PYTHON_WHEEL, set by pyproject.toml). scikit-build-core
# installs into the wheel's platlib root and copies python/sagejit there as the package `sagejit/`;
# everything binary goes inside that package so that the wheel is relocatable:
#   sagejit/libsagejit.so      the library (found by sagejit/_library.py next to the package files)
#   sagejit/_bin/sagejit-*     the programs (tools/CMakeLists.txt; pip's entry points start them)
#   sagejit/include/sagejit/   the public headers, for C and C++ callers of the wheel's library
#   sagejit/cache/             an optional precompiled system cache (SAGEJIT_WHEEL_PRECOMPILE below),
#                              which a wheel's runtime finds next to itself (cache/cache_location.cpp)
install(TARGETS sagejit LIBRARY DESTINATION sagejit)
set(sagejit_public_headers sagejit.hpp sagejit.h error.hpp types.hpp export.hpp)
list(TRANSFORM sagejit_public_headers PREPEND ${PROJECT_SOURCE_DIR}/runtime/include/sagejit/)
install(FILES ${sagejit_public_headers} ${PROJECT_BINARY_DIR}/runtime/generated_include/sagejit/version.h
  DESTINATION sagejit/include/sagejit)

# `pip wheel . -Ccmake.define.SAGEJIT_WHEEL_PRECOMPILE=gfx1201;gfx1200` compiles those archs' kernels
# at build time (clang-22 needed then) so that the first call on such a GPU loads instead of compiling:
# every specialization the shipped tables can reach (bf16/fp16, both kernel head dims, which also
# serve the zero-padded ones, causal, the LSE output of ring attention and key masks, each alone and
# together: --all-specializations), 40 objects per gfx12 arch before the key-mask
# variants doubled them. A miss (a user's own table entry) compiles with hipRTC on first call.
set(SAGEJIT_WHEEL_PRECOMPILE "" CACHE STRING "GPU archs whose kernels the wheel ships precompiled")
if(SAGEJIT_WHEEL_PRECOMPILE)
  if(NOT SAGEJIT_BUILD_TOOLS)
    message(FATAL_ERROR "SAGEJIT_WHEEL_PRECOMPILE needs the tools (SAGEJIT_BUILD_TOOLS=ON)")
  endif()
  set(sagejit_wheel_cache ${PROJECT_BINARY_DIR}/wheel-cache)
  set(sagejit_precompile_args)
  foreach(arch IN LISTS SAGEJIT_WHEEL_PRECOMPILE)
    list(APPEND sagejit_precompile_args --arch ${arch})
  endforeach()
  add_custom_target(sagejit_wheel_precompile ALL
    COMMAND sagejit-precompile ${sagejit_precompile_args} --all-specializations --system-cache ${sagejit_wheel_cache}
    COMMENT "Precompiling the kernels of ${SAGEJIT_WHEEL_PRECOMPILE} into the wheel's system cache"
    VERBATIM)
  install(DIRECTORY ${sagejit_wheel_cache}/ DESTINATION sagejit/cache)
endif()
