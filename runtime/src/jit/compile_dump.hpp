#pragma once
// SAGEJIT_DUMP_DIR: every compile writes what went in and what came out, so a bad kernel can be
// reproduced and its ISA inspected without sagejit:
//   <name>.<key>.src           the rendered source exactly as compiled
//   <name>.<key>.options.txt   the compiler identity and every option passed, one per line
//   <name>.<key>.cubin | .co   the code object (when the compile succeeded)
//   <name>.<key>.log           the compiler log (or the error)
// The dir is created 0700 and must be ours (like a cache dir); each file is written under an
// unpredictable temp name and renamed, so a symlink planted under a predictable name is never followed.
#include <cstddef>
#include <string>
#include <vector>

#include "cache/cache_key.hpp"
#include "compiler/compiler.hpp"

namespace sagejit {

struct CompileDump {
  const CompileRequest* request = nullptr;
  CacheKey key;
  std::string compiler_identity;
  CompilerKind compiler_kind = CompilerKind::nvrtc;
  std::vector<std::string> effective_options;  // from CompileResult; base options when the compile failed
  const std::vector<std::byte>* code = nullptr;  // null when the compile failed
  std::string log;
};

// Writes the dump when SAGEJIT_DUMP_DIR is set; a failure to write is a warning, never an error.
void dump_compile_if_requested(const CompileDump& dump) noexcept;

}  // namespace sagejit
