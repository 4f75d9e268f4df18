# The ROCm root test (docs/RDNA4.md, "hipRTC in CI"): tests/scripts/hiprtc_root_test.sh makes (or
# reuses) a Debian unstable root with ROCm 6.4's hipRTC, comgr and HIP runtime under the build tree,
# runs sagejit's own tools inside it (chroot, the build tree bind-mounted at its own path): the HIP
# device layer must report 0 devices and why, and sagejit-precompile --compiler hiprtc
# --all-specializations builds every gfx1201 and gfx1200 object; hiprtc_objects_check then puts each
# through the ISA checks clang's objects get (tests/gfx12_isa_checks.hpp). It needs root and the
# network the first time; where the root cannot be made it FAILS (it never skips): CI has both.
# Labelled rocm-root, not cpu: the sanitizer build (ctest -L cpu) does not run it.
add_executable(hiprtc_objects_check ${CMAKE_CURRENT_SOURCE_DIR}/hiprtc_objects_check.cpp)
target_link_libraries(hiprtc_objects_check PRIVATE sagejit_dev sagejit_test_main doctest::doctest)
target_include_directories(hiprtc_objects_check PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
target_compile_definitions(hiprtc_objects_check PRIVATE
  SAGEJIT_TEST_OBJDUMP="${SAGEJIT_LLVM_OBJDUMP}" SAGEJIT_TEST_READELF="${SAGEJIT_LLVM_READELF}")
add_test(NAME test_hiprtc_root
         COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/scripts/hiprtc_root_test.sh ${PROJECT_BINARY_DIR}
                 $<TARGET_FILE:hiprtc_objects_check> $<TARGET_FILE:sagejit-precompile> $<TARGET_FILE:sagejit-info>)
set_tests_properties(test_hiprtc_root PROPERTIES LABELS rocm-root TIMEOUT 2400)
