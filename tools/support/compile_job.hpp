#pragma once
// One kernel x tile config x specialization x target to build, keyed and labelled exactly as the
// runtime keys its own compiles (so what the tools put in a cache is what a first call finds), and
// the choice of compiler for a target.
#include <optional>
#include <string>

#include "cache/cache_entry.hpp"
#include "cache/cache_key.hpp"
#include "cache/code_cache.hpp"
#include "compiler/compiler.hpp"
#include "jit/kernel_desc.hpp"
#include "jit/render.hpp"

namespace sagejit::tools {

struct CompileJob {
  const KernelDesc* kernel = nullptr;
  TileConfig config;
  Specialization spec;
  std::string target;   // compile target, feature suffixes kept
  const Compiler* compiler = nullptr;
};

struct KeyedJob {
  CompileJob job;
  RenderedKernel rendered;
  CacheKey key;
  EntryLabel label;  // kernel name, config id, target, compiler identity: the runtime's label
};

// Renders and keys a job through the JIT's own plan_build (jit/jit.hpp), so the key and the entry
// label are the ones a first call looks for. Throws Error(unsupported) with the descriptor's reason when it rejects
// the config for the specialization, Error(invalid_argument) for a target the compiler refuses.
KeyedJob key_job(const CompileJob& job);

// Looks the job up in `cache`, compiling it when no valid copy exists (jit/jit.hpp build_code_object).
CacheLookup build_job(CodeCache& cache, const KeyedJob& job);

// "bf16 d128", plus " causal", " lse", " pv=fp16" when set: the specialization, for tables and logs.
std::string specialization_text(const Specialization& spec);
// File-name form: "bf16-d128-causal-lse".
std::string specialization_tag(const Specialization& spec);
// The name sagejit-precompile --emit-dir gives a raw code object (and tools/scripts/gfx12_emulate.py
// looks for): "<kernel>.<config>.<specialization>.<target>.co|.cubin", config and target file-name safe.
std::string emit_file_name(const std::string& kernel, const TileConfig& config, const Specialization& spec,
                           const std::string& target);

}  // namespace sagejit::tools
