# tests/test_sm90_kernel.cpp reads register and frame sizes from the cubins it compiles with the
# tools' ELF reader; without the tools (SAGEJIT_BUILD_TOOLS=OFF) it only checks that they compile.
if(TARGET test_sm90_kernel AND TARGET sagejit_tool_support)
  target_link_libraries(test_sm90_kernel PRIVATE sagejit_tool_support)
  target_compile_definitions(test_sm90_kernel PRIVATE SAGEJIT_HAVE_CODE_OBJECT_STATS=1)
endif()
