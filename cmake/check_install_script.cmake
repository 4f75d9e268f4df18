# cmake -DBUILD_DIR=<build tree> -DSOURCE_DIR=<checkout> -DWORK_DIR=<scratch dir> -DLIBDIR=<lib>
#       -DGENERATOR=<generator> [-DMAKE_PROGRAM=...] -DCXX=<c++ compiler> [-DCC=<c compiler>]
#       [-DPKG_CONFIG=<pkg-config>] -DSTANDARD=17 -P check_install_script.cmake
# A consumer's view of sagejit: installs the build tree into a scratch prefix, then builds
# examples/host_app.cpp against that prefix alone, twice:
#  1. as a CMake project of its own (examples/CMakeLists.txt, find_package(sagejit CONFIG REQUIRED)
#     -> sagejit::sagejit);
#  2. with the flags of `pkg-config --cflags --libs sagejit`;
# both with -std=c++<STANDARD> -pedantic-errors (the standard the exported target promises), plus a
# C program over <sagejit/sagejit.h> with pkg-config's flags. Each program is then run: without a GPU
# it must say "skipped" and exit 0, and it must load the installed libsagejit.so.
foreach(var BUILD_DIR SOURCE_DIR WORK_DIR LIBDIR GENERATOR CXX STANDARD)
  if(NOT ${var})
    message(FATAL_ERROR "check_install_script.cmake: -D${var}=... is required")
  endif()
endforeach()

function(run what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE result OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT result EQUAL 0)
    message(FATAL_ERROR "${what} failed (${result}):\n${ARGN}\n${out}\n${err}")
  endif()
  set(run_output "${out}${err}" PARENT_SCOPE)
endfunction()

# Runs a built program; it must exit 0 and resolve libsagejit from the scratch prefix.
function(check_program what program)
  run("${what}: running" ${program} --shape 1,2,256,128 --iterations 1)
  message(STATUS "${what}: ${run_output}")
  execute_process(COMMAND ldd ${program} OUTPUT_VARIABLE ldd_output RESULT_VARIABLE ldd_result)
  if(ldd_result EQUAL 0 AND NOT ldd_output MATCHES "libsagejit\\.so[.0-9]* => ${prefix}/")
    message(FATAL_ERROR "${what}: does not load libsagejit from ${prefix}:\n${ldd_output}")
  endif()
endfunction()

set(prefix ${WORK_DIR}/prefix)
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})
run("cmake --install" ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})
foreach(file include/sagejit/sagejit.hpp include/sagejit/sagejit.h include/sagejit/version.h
             ${LIBDIR}/cmake/sagejit/sagejitConfig.cmake ${LIBDIR}/pkgconfig/sagejit.pc)
  if(NOT EXISTS ${prefix}/${file})
    message(FATAL_ERROR "cmake --install did not install ${file} under ${prefix}")
  endif()
endforeach()
file(GLOB internal_headers ${prefix}/include/sagejit/*/*)
if(internal_headers)
  message(FATAL_ERROR "internal headers were installed: ${internal_headers}")
endif()

# 1. find_package(sagejit CONFIG REQUIRED) from a separate project.
set(flags "-Wall -Wextra -pedantic-errors")
set(generator_args -G ${GENERATOR})
if(MAKE_PROGRAM)
  list(APPEND generator_args -DCMAKE_MAKE_PROGRAM=${MAKE_PROGRAM})
endif()
run("configuring examples/ against ${prefix}" ${CMAKE_COMMAND} -S ${SOURCE_DIR}/examples -B ${WORK_DIR}/consumer
    ${generator_args} -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_CXX_COMPILER=${CXX} -DCMAKE_BUILD_TYPE=Release
    -DCMAKE_CXX_FLAGS=${flags} -DCMAKE_CXX_STANDARD=${STANDARD} -DCMAKE_FIND_PACKAGE_NO_SYSTEM_PACKAGE_REGISTRY=ON)
file(STRINGS ${WORK_DIR}/consumer/CMakeCache.txt found_dir REGEX "^sagejit_DIR:")
if(NOT found_dir STREQUAL "sagejit_DIR:PATH=${prefix}/${LIBDIR}/cmake/sagejit")
  message(FATAL_ERROR "find_package(sagejit) found another sagejit: ${found_dir}")
endif()
run("building examples/ against ${prefix}" ${CMAKE_COMMAND} --build ${WORK_DIR}/consumer)
check_program("find_package host_app" ${WORK_DIR}/consumer/host_app)

# 2. pkg-config --cflags --libs sagejit, only the scratch prefix's .pc file visible.
if(NOT PKG_CONFIG)
  message(STATUS "pkg-config not found: the pkg-config build is not checked")
  return()
endif()
run("pkg-config" ${CMAKE_COMMAND} -E env PKG_CONFIG_LIBDIR=${prefix}/${LIBDIR}/pkgconfig PKG_CONFIG_PATH=
    ${PKG_CONFIG} --cflags --libs sagejit)
string(STRIP "${run_output}" pc_flags)
separate_arguments(pc_flags UNIX_COMMAND "${pc_flags}")
message(STATUS "pkg-config --cflags --libs sagejit: ${pc_flags}")
separate_arguments(warning_flags UNIX_COMMAND "${flags}")
run("compiling host_app.cpp with pkg-config's flags" ${CXX} -std=c++${STANDARD} ${warning_flags}
    ${SOURCE_DIR}/examples/host_app.cpp ${pc_flags} -ldl -Wl,-rpath,${prefix}/${LIBDIR} -o ${WORK_DIR}/host_app_pc)
check_program("pkg-config host_app" ${WORK_DIR}/host_app_pc)

if(CC)
  # The C ABI header on its own, C99, with the compile-time version macros.
  file(WRITE ${WORK_DIR}/c_consumer.c [=[
#include <stdio.h>
#include <string.h>

#include <sagejit/sagejit.h>

int main(void) {
  if (strcmp(sagejit_version(), SAGEJIT_VERSION_STRING) != 0) {
    fprintf(stderr, "library %s, headers %s\n", sagejit_version(), SAGEJIT_VERSION_STRING);
    return 1;
  }
  printf("sagejit %s (C ABI)\n", sagejit_version());
  return 0;
}
]=])
  run("compiling a C program with pkg-config's flags" ${CC} -std=c99 ${warning_flags} ${WORK_DIR}/c_consumer.c
      ${pc_flags} -Wl,-rpath,${prefix}/${LIBDIR} -o ${WORK_DIR}/c_consumer)
  run("running the C program" ${WORK_DIR}/c_consumer)
  message(STATUS "C consumer: ${run_output}")
endif()
