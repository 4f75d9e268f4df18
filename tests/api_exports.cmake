# The shared library exports only the C ABI (sagejit_*) and the public C++ API; everything else is
# hidden. cmake/check_exports_script.cmake lists what is allowed and why.
if(TARGET sagejit AND CMAKE_NM)
  add_test(NAME test_api_exports
    COMMAND ${CMAKE_COMMAND} -DLIBRARY=$<TARGET_FILE:sagejit> -DNM=${CMAKE_NM}
            -P ${PROJECT_SOURCE_DIR}/cmake/check_exports_script.cmake)
  set_tests_properties(test_api_exports PROPERTIES LABELS cpu TIMEOUT 60)
endif()
