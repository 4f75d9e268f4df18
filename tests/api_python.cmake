# The Python binding's tests (python/tests, pytest) against this build's libsagejit.so. Tests that
# need torch skip without it; GPU tests skip without a CUDA/ROCm device.
find_package(Python3 COMPONENTS Interpreter QUIET)
if(SAGEJIT_SANITIZE)
  # The interpreter is not instrumented: it cannot load a sanitized libsagejit.so (ASan must come first).
  message(STATUS "test_api_python: not registered in a sanitizer build (python is not instrumented)")
elseif(Python3_Interpreter_FOUND AND TARGET sagejit)
  execute_process(COMMAND ${Python3_EXECUTABLE} -c "import pytest" RESULT_VARIABLE sagejit_no_pytest
                  OUTPUT_QUIET ERROR_QUIET)
  if(sagejit_no_pytest EQUAL 0)
    add_test(NAME test_api_python
      COMMAND ${Python3_EXECUTABLE} -m pytest -q -p no:cacheprovider ${PROJECT_SOURCE_DIR}/python/tests
      WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}/python)
    set_tests_properties(test_api_python PROPERTIES LABELS cpu TIMEOUT 300
      ENVIRONMENT "SAGEJIT_LIBRARY=$<TARGET_FILE:sagejit>;SAGEJIT_LOG=warn;PYTHONDONTWRITEBYTECODE=1")
  endif()
endif()
