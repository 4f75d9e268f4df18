# The installed package as a consumer sees it: `cmake --install` into a scratch prefix, then
# examples/host_app.cpp built against it with find_package(sagejit CONFIG) and with pkg-config, as
# C++17 (cmake/check_install_script.cmake says what is checked).
find_program(SAGEJIT_PKG_CONFIG pkg-config)
# A sanitized libsagejit.so cannot be loaded by an uninstrumented consumer (ASan must come first), so
# the consumer's view is checked in the normal build only.
if(SAGEJIT_SANITIZE)
  message(STATUS "test_api_install: not registered in a sanitizer build (an uninstrumented consumer cannot load it)")
elseif(TARGET sagejit)
  set(sagejit_install_cc "")
  if(CMAKE_C_COMPILER)
    set(sagejit_install_cc -DCC=${CMAKE_C_COMPILER})
  endif()
  add_test(NAME test_api_install
    COMMAND ${CMAKE_COMMAND} -DBUILD_DIR=${PROJECT_BINARY_DIR} -DSOURCE_DIR=${PROJECT_SOURCE_DIR}
            -DWORK_DIR=${PROJECT_BINARY_DIR}/api_install -DLIBDIR=${CMAKE_INSTALL_LIBDIR}
            -DGENERATOR=${CMAKE_GENERATOR} -DMAKE_PROGRAM=${CMAKE_MAKE_PROGRAM} -DCXX=${CMAKE_CXX_COMPILER}
            ${sagejit_install_cc} -DPKG_CONFIG=${SAGEJIT_PKG_CONFIG} -DSTANDARD=17
            -P ${PROJECT_SOURCE_DIR}/cmake/check_install_script.cmake)
  # The whole install tree is written: no other test may run `cmake --install` into it meanwhile.
  set_tests_properties(test_api_install PROPERTIES LABELS cpu TIMEOUT 180 RESOURCE_LOCK sagejit_install)
endif()
