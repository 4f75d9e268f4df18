# cmake -DLIBRARY=<libsagejit.so> -DNM=<nm> -P check_exports_script.cmake
# Fails when the shared library exports anything beyond:
#  - the C ABI: sagejit_* functions (sagejit/sagejit.h);
#  - the public C++ API: the functions declared SAGEJIT_API in sagejit/{sagejit,types,error}.hpp and
#    the type info / vtable of sagejit::Error (exported so that hosts can catch it);
#  - weak (vague-linkage) instances of std:: / __gnu_cxx:: templates and their type info: libstdc++
#    declares its namespace with default visibility, so an instantiation the library emits (e.g. a
#    std::vector<std::string> member) is exported as a weak symbol; the dynamic linker merges it
#    with the host's copy, and nothing of sagejit's internals is reachable through it;
#  - the linker's own markers (_init, _fini, __bss_start, _edata, _end).
if(NOT LIBRARY OR NOT NM)
  message(FATAL_ERROR "usage: cmake -DLIBRARY=... -DNM=... -P check_exports_script.cmake")
endif()
execute_process(COMMAND ${NM} -D --defined-only -C ${LIBRARY} OUTPUT_VARIABLE symbols RESULT_VARIABLE result)
if(NOT result EQUAL 0)
  message(FATAL_ERROR "${NM} failed on ${LIBRARY}")
endif()
string(REPLACE "\n" ";" lines "${symbols}")
set(public_functions "to_string|element_size|supports|supports_target|supports_head_dim|emulate_attention|workspace_size|attention|release_workspaces|workspace_bytes_held|supported_archs|set_library_search_dirs|version")
set(c_count 0)
set(cxx_count 0)
set(bad "")
foreach(line IN LISTS lines)
  if(line STREQUAL "")
    continue()
  endif()
  if(NOT line MATCHES "^[0-9a-fA-F]* *([A-Za-z]) (.*)$")
    list(APPEND bad "${line}")
    continue()
  endif()
  set(type "${CMAKE_MATCH_1}")
  set(name "${CMAKE_MATCH_2}")
  if(name MATCHES "^sagejit_[a-z0-9_]+$" AND type STREQUAL "T")
    math(EXPR c_count "${c_count} + 1")
  elseif(name MATCHES "^sagejit::(${public_functions})(\\[abi:cxx11\\])?\\(" AND type STREQUAL "T")
    math(EXPR cxx_count "${cxx_count} + 1")
  elseif(name MATCHES "^(typeinfo|typeinfo name|vtable) for sagejit::Error$")
  elseif(name MATCHES "^sagejit::Error::")
  elseif(type MATCHES "^[WVu]$" AND NOT name MATCHES "sagejit::" AND
         name MATCHES "^((typeinfo|typeinfo name|vtable|VTT|guard variable|construction vtable) for )?([A-Za-z_][A-Za-z0-9_ ]* )?(std|__gnu_cxx)::")
    # weak std template instance (a demangled name may start with its return type); one over a
    # sagejit type would be a leak and is not allowed here
  elseif(name MATCHES "^(_init|_fini|__bss_start|_edata|_end)$")
  else()
    list(APPEND bad "${type} ${name}")
  endif()
endforeach()
if(bad)
  list(JOIN bad "\n  " listing)
  message(FATAL_ERROR "libsagejit exports symbols outside the public API:\n  ${listing}")
endif()
if(c_count LESS 10 OR cxx_count LESS 13)
  message(FATAL_ERROR "expected the C ABI (>= 10 sagejit_* functions, got ${c_count}) and the C++ API (>= 13 functions, got ${cxx_count})")
endif()
message(STATUS "exports OK: ${c_count} C functions, ${cxx_count} C++ API functions")
