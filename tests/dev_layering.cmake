# The runtime (libsagejit.so) never includes the dev library (runtime/src/dev/): see
# cmake/check_dev_layering_script.cmake.
add_test(NAME test_dev_layering
  COMMAND ${CMAKE_COMMAND} -DSOURCE_DIR=${PROJECT_SOURCE_DIR}/runtime/src
          -P ${PROJECT_SOURCE_DIR}/cmake/check_dev_layering_script.cmake)
set_tests_properties(test_dev_layering PROPERTIES LABELS cpu TIMEOUT 60)
