# Install rules (included by runtime/CMakeLists.txt): the shared library with its public headers, a
# CMake package (find_package(sagejit CONFIG) -> sagejit::sagejit), a pkg-config file, the Python
# package, and a precompiled system cache when the build tree has one. Kernel sources and tuning
# tables are embedded in the library; the tools install themselves (tools/CMakeLists.txt).
include(CMakePackageConfigHelpers)

set(SAGEJIT_CMAKE_INSTALL_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/sagejit)

# Consumers compile only the public headers (std::optional, std::string_view: C++17).
target_compile_features(sagejit INTERFACE cxx_std_17)
set_target_properties(sagejit PROPERTIES EXPORT_NAME sagejit)

# Only the shared library is exported: the static one and the OBJECT library carry internal headers
# and header-only dependencies (fmt, nlohmann_json, xxHash) that consumers never see.
install(TARGETS sagejit EXPORT sagejitTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
set(sagejit_public_headers sagejit.hpp sagejit.h error.hpp types.hpp export.hpp)
list(TRANSFORM sagejit_public_headers PREPEND ${PROJECT_SOURCE_DIR}/runtime/include/sagejit/)
install(FILES ${sagejit_public_headers} ${PROJECT_BINARY_DIR}/runtime/generated_include/sagejit/version.h
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/sagejit)
install(EXPORT sagejitTargets NAMESPACE sagejit:: DESTINATION ${SAGEJIT_CMAKE_INSTALL_DIR}
  FILE sagejitTargets.cmake)

set(sagejit_config_in ${CMAKE_CURRENT_BINARY_DIR}/sagejitConfig.cmake.in)
file(WRITE ${sagejit_config_in} [=[
@PACKAGE_INIT@
# sagejit::sagejit: the shared library (C++ API <sagejit/sagejit.hpp>, C ABI <sagejit/sagejit.h>).
include("${CMAKE_CURRENT_LIST_DIR}/sagejitTargets.cmake")
check_required_components(sagejit)
]=])
configure_package_config_file(${sagejit_config_in} ${CMAKE_CURRENT_BINARY_DIR}/sagejitConfig.cmake
  INSTALL_DESTINATION ${SAGEJIT_CMAKE_INSTALL_DIR})
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/sagejitConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMajorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/sagejitConfig.cmake ${CMAKE_CURRENT_BINARY_DIR}/sagejitConfigVersion.cmake
  DESTINATION ${SAGEJIT_CMAKE_INSTALL_DIR})

# pkg-config: the prefix is found from the .pc file's own location (${pcfiledir}), so the install
# tree can be moved or installed with `cmake --install --prefix`.
file(RELATIVE_PATH sagejit_pc_libdir ${CMAKE_INSTALL_PREFIX} ${CMAKE_INSTALL_FULL_LIBDIR})
file(RELATIVE_PATH sagejit_pc_includedir ${CMAKE_INSTALL_PREFIX} ${CMAKE_INSTALL_FULL_INCLUDEDIR})
file(RELATIVE_PATH sagejit_pc_prefix ${CMAKE_INSTALL_FULL_LIBDIR}/pkgconfig ${CMAKE_INSTALL_PREFIX})
file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/sagejit.pc
"prefix=\${pcfiledir}/${sagejit_pc_prefix}
libdir=\${prefix}/${sagejit_pc_libdir}
includedir=\${prefix}/${sagejit_pc_includedir}

Name: sagejit
Description: SageAttention runtime with JIT-compiled kernels for AMD RDNA4 (hipRTC) and NVIDIA (NVRTC)
Version: ${PROJECT_VERSION}
Libs: -L\${libdir} -lsagejit
Cflags: -I\${includedir}
")
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/sagejit.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

# Python package (ctypes over the C ABI): <datadir>/sagejit/python/sagejit; it finds the library
# through the relative path written here (the install tree stays relocatable).
set(sagejit_python_dir ${CMAKE_INSTALL_DATADIR}/sagejit/python)
file(RELATIVE_PATH sagejit_lib_from_package ${CMAKE_INSTALL_PREFIX}/${sagejit_python_dir}/sagejit
     ${CMAKE_INSTALL_FULL_LIBDIR})
file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/python_install_location.py
"# Written by cmake/Install.cmake: where libsagejit is, relative to this package.
LIBDIR_FROM_PACKAGE = \"${sagejit_lib_from_package}\"
")
install(DIRECTORY ${PROJECT_SOURCE_DIR}/python/sagejit DESTINATION ${sagejit_python_dir}
  FILES_MATCHING PATTERN "*.py" PATTERN "__pycache__" EXCLUDE)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/python_install_location.py DESTINATION ${sagejit_python_dir}/sagejit
  RENAME _install_location.py)

# A system cache precompiled into the build tree
# (`sagejit-precompile --system-cache <build>/share/sagejit/cache`) becomes the read-only cache that
# the runtime searches first (<datadir>/sagejit/cache, see cache/cache_location.cpp).
install(DIRECTORY ${PROJECT_BINARY_DIR}/share/sagejit/cache/ DESTINATION ${CMAKE_INSTALL_DATADIR}/sagejit/cache
  OPTIONAL)
