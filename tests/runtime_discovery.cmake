# tests/test_runtime_discovery.cpp builds fake torch/, rocm_sdk, ROCM_PATH, /opt/rocm-* and
# /usr/local/cuda-* trees out of stand-ins of the GPU runtime libraries (tests/runtime_stub.c), one
# per kind and version, each in its own directory under discovery_stubs/<target>/ and named as the
# real file. Rule (e) (sonames through the dynamic linker) is tested through LD_LIBRARY_PATH set to
# discovery_stubs/sonames/, which holds every version, so the machine's own libraries (Debian's
# libamdhip64.so.5, an installed ROCm) never decide the answer.
if(TARGET test_runtime_discovery)
  set(stub_root ${CMAKE_CURRENT_BINARY_DIR}/discovery_stubs)
  set(stub_targets "")
  # name kind version file [sonames|rocm7]
  foreach(stub IN ITEMS "hip5;HIP;5;libamdhip64.so.5;sonames" "hip6;HIP;6;libamdhip64.so.6;sonames"
                        "hip7;HIP;7;libamdhip64.so.7;sonames;rocm7" "hip_without_init;HIP_WITHOUT_INIT;6;libamdhip64.so.6;"
                        "hip6_with_hiprtc;HIP_WITH_HIPRTC;6;libamdhip64.so.6;"
                        "hiprtc6;HIPRTC;6;libhiprtc.so.6;sonames" "hiprtc7;HIPRTC;7;libhiprtc.so.7;sonames;rocm7"
                        "nvrtc12;NVRTC;12;libnvrtc.so.12;sonames" "nvrtc13;NVRTC;13;libnvrtc.so.13;sonames")
    list(GET stub 0 name)
    list(GET stub 1 kind)
    list(GET stub 2 version)
    list(GET stub 3 file)
    list(GET stub 4 in_sonames)
    list(LENGTH stub fields)
    set(in_rocm7 OFF)
    if(fields GREATER 5)
      set(in_rocm7 ON)
    endif()
    set(target sagejit_discovery_stub_${name})
    add_library(${target} SHARED ${CMAKE_CURRENT_SOURCE_DIR}/runtime_stub.c)
    set_target_properties(${target} PROPERTIES PREFIX "" SUFFIX "" OUTPUT_NAME ${file}
                          LIBRARY_OUTPUT_DIRECTORY ${stub_root}/${name} C_VISIBILITY_PRESET hidden)
    target_compile_definitions(${target} PRIVATE SAGEJIT_STUB_${kind} SAGEJIT_STUB_VERSION=${version})
    target_link_options(${target} PRIVATE -Wl,-soname,${file})
    if(in_sonames)
      add_custom_command(TARGET ${target} POST_BUILD
        COMMAND ${CMAKE_COMMAND} -E make_directory ${stub_root}/sonames
        COMMAND ${CMAKE_COMMAND} -E copy $<TARGET_FILE:${target}> ${stub_root}/sonames/${file})
    endif()
    if(in_rocm7)
      add_custom_command(TARGET ${target} POST_BUILD
        COMMAND ${CMAKE_COMMAND} -E make_directory ${stub_root}/rocm7/lib
        COMMAND ${CMAKE_COMMAND} -E copy $<TARGET_FILE:${target}> ${stub_root}/rocm7/lib/${file})
    endif()
    list(APPEND stub_targets ${target})
  endforeach()
  add_dependencies(test_runtime_discovery ${stub_targets})
  target_compile_definitions(test_runtime_discovery PRIVATE SAGEJIT_DISCOVERY_STUBS="${stub_root}")
  # SAGEJIT_*_LIBRARY and SAGEJIT_LIBRARY_DIRS empty: the process-wide case must see only what it hands over.
  set_tests_properties(test_runtime_discovery PROPERTIES ENVIRONMENT
    "SAGEJIT_LOG=warn;LD_LIBRARY_PATH=${stub_root}/sonames;SAGEJIT_HIP_LIBRARY=;SAGEJIT_HIPRTC_LIBRARY=;SAGEJIT_NVRTC_LIBRARY=;SAGEJIT_LIBRARY_DIRS=")
endif()

# The complaint of issue 14 end to end: with ROCM_PATH at a ROCm 7 tree, sagejit-info chose Debian's
# libamdhip64.so.5 (a soname) for both the runtime and hipRTC. Now ROCM_PATH (d) comes before the
# sonames (e), hipRTC comes from the runtime's ROCm, and the table says by which rule.
if(TARGET test_runtime_discovery AND TARGET sagejit-info)
  add_test(NAME test_runtime_discovery_info COMMAND sagejit-info)
  set_tests_properties(test_runtime_discovery_info PROPERTIES LABELS cpu TIMEOUT 120
    ENVIRONMENT "SAGEJIT_LOG=warn;ROCM_PATH=${stub_root}/rocm7;SAGEJIT_HIP_LIBRARY=;SAGEJIT_HIPRTC_LIBRARY=;SAGEJIT_LIBRARY_DIRS="
    PASS_REGULAR_EXPRESSION "HIP runtime +found +\\(d\\) ROCM_PATH +[^\n]*/rocm7/lib/libamdhip64\\.so\\.7\nhipRTC +found +next to the HIP runtime \\(one ROCm\\) +[^\n]*/rocm7/lib/libhiprtc\\.so\\.7")
endif()
