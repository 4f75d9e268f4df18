# test_oracle_check judges outputs with the tools' oracle (tools/support/oracle_check); without the
# tools (SAGEJIT_BUILD_TOOLS=OFF) it skips.
if(TARGET test_oracle_check AND TARGET sagejit_tool_support)
  target_link_libraries(test_oracle_check PRIVATE sagejit_tool_support)
  target_compile_definitions(test_oracle_check PRIVATE SAGEJIT_HAVE_TOOL_SUPPORT=1)
endif()
