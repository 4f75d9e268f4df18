# tests/scripts/test_gfx12_emulate_loader.py: the instruction-emulator harness's code-object loader and
# launch set-up (tools/scripts/gfx12_emulate.py, docs/RDNA4.md) on gfx1201 objects sagejit-precompile
# builds with clang; it needs no emulator (CI has none), only clang and the LLVM tools it compares with.
find_program(SAGEJIT_PYTHON3 python3 REQUIRED)
if(TARGET sagejit-precompile AND SAGEJIT_CLANG_EXECUTABLE AND SAGEJIT_LLVM_READELF AND SAGEJIT_LLVM_OBJDUMP)
  add_test(NAME test_gfx12_emulate_loader
           COMMAND ${SAGEJIT_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/scripts/test_gfx12_emulate_loader.py
                   $<TARGET_FILE:sagejit-precompile> ${SAGEJIT_LLVM_READELF} ${SAGEJIT_LLVM_OBJDUMP})
  set_tests_properties(test_gfx12_emulate_loader PROPERTIES LABELS cpu TIMEOUT 300 ENVIRONMENT "SAGEJIT_LOG=warn")
endif()
