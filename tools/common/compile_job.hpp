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
#include "kernels/kernel_desc.hpp"
#include "kernels/render.hpp"

namespace sagejit::tools {

struct CompileJob {
  const KernelDesc* kernel = nullptr;
  TileConfig config;
  Specialization spec;  // spec.target is the table arch ("gfx1201", "sm_90")
  std::string target;   // compile target, feature suffixes kept
  const Compiler* compiler = nullptr;
};

struct KeyedJob {
  CompileJob job;
  RenderedKernel rendered;
  CacheKey key;
  EntryLabel label;  // kernel name, config id, target, compiler identity: the runtime's label
};

// Renders and keys a job through the JIT's own plan_build (kernels/jit.hpp), so the key and the entry
// label are the ones a first call looks for. Throws Error(unsupported) with the descriptor's reason when it rejects
// the config for the specialization, Error(invalid_argument) for a target the compiler refuses.
KeyedJob key_job(const CompileJob& job);

// Looks the job up in `cache`, compiling it when no valid copy exists (kernels/jit.hpp build_code_object).
CacheLookup build_job(CodeCache& cache, const KeyedJob& job);

// "bf16 d128", plus " causal", " lse", " pv=fp16" when set: the specialization, for tables and logs.
std::string specialization_text(const Specialization& spec);
// File-name form: "bf16-d128-causal-lse".
std::string specialization_tag(const Specialization& spec);

// The compiler used for `target` when the user named `requested` (or nothing): NVIDIA targets
// always use NVRTC; AMD targets use the requested one, else SAGEJIT_COMPILER, else hipRTC when it
// loads and can build the target (ROCm >= 6.4 for gfx12), else the offline clang. Throws
// Error(invalid_argument) for a compiler that cannot build the target's vendor and
// Error(runtime_not_found) naming what was tried when none is available.
const Compiler& compiler_for_target(const std::string& target, std::optional<CompilerKind> requested);

}  // namespace sagejit::tools
