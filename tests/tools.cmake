# tests/test_tools_cli.cpp runs the command-line tools as a user would: it needs their paths and must
# be rebuilt after them. Without the tools (SAGEJIT_BUILD_TOOLS=OFF) the test only says it is skipped.
if(TARGET test_tools_cli AND TARGET sagejit-precompile AND TARGET sagejit-cache AND TARGET sagejit-info
   AND TARGET sagejit-autotune AND TARGET sagejit-selftest)
  add_dependencies(test_tools_cli sagejit-precompile sagejit-cache sagejit-info sagejit-autotune sagejit-selftest)
  target_link_libraries(test_tools_cli PRIVATE sagejit_tool_support)
  target_compile_definitions(test_tools_cli PRIVATE
    SAGEJIT_TOOL_PRECOMPILE="$<TARGET_FILE:sagejit-precompile>"
    SAGEJIT_TOOL_CACHE="$<TARGET_FILE:sagejit-cache>"
    SAGEJIT_TOOL_INFO="$<TARGET_FILE:sagejit-info>"
    SAGEJIT_TOOL_AUTOTUNE="$<TARGET_FILE:sagejit-autotune>"
    SAGEJIT_TOOL_SELFTEST="$<TARGET_FILE:sagejit-selftest>")
endif()
