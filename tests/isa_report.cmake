# sagejit-isa-report end to end (the counter and model themselves: tests/test_isa_cost_model.cpp):
# the tool compiles two gfx1201 configs with the offline clang, finds their key loops and writes the
# table and the JSON. Registered only when clang and llvm-objdump (22) were found at configure time.
if(TARGET sagejit-isa-report AND SAGEJIT_CLANG_EXECUTABLE AND SAGEJIT_LLVM_OBJDUMP)
  add_test(NAME test_isa_report_tool
           COMMAND sagejit-isa-report --arch gfx1201 --head-dim 64 --causal 0 --objdump ${SAGEJIT_LLVM_OBJDUMP}
                   --json ${CMAKE_CURRENT_BINARY_DIR}/isa-report-test.json)
  set_tests_properties(test_isa_report_tool PROPERTIES LABELS cpu TIMEOUT 600
                       PASS_REGULAR_EXPRESSION "gfx1201 +bf16 D=64 +block_n=64,rows_per_wave=32,stages=2,waves=4 +clang [0-9.]+ +[0-9]+ +[0-9]+ +0 "
                       FAIL_REGULAR_EXPRESSION "configs failed")
endif()
