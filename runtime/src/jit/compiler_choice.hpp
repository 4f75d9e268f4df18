#pragma once
// Which compiler builds a target, and which prebuilt code objects a run accepts: the one policy of
// the runtime (first calls) and the tools (precompile, autotune, selftest).
//
// Compiling: NVIDIA targets use NVRTC. AMD targets use the compiler the caller names (a tool's
// --compiler), else SAGEJIT_COMPILER, else hipRTC when it loads and can build the target (gfx12 needs
// ROCm 6.4+), else the offline clang.
//
// Accepting: besides the entries of that compiler, a run accepts code objects of the system cache
// built by the compilers its manifest records (cache/prebuilt_manifest.hpp), e.g. the clang-built
// gfx1201 objects `make demo` ships, on a machine whose default compiler is hipRTC. Safe because
// such an entry is found only under a key that holds the same rendered source, the same full target
// (features included), and that compiler's identity, options and option env vars; its code object
// states its code-object version (v5, loaded by every ROCm that supports RDNA4); the kernels use no
// device library, so hipRTC and clang objects of one source run the same instructions; and a code
// object the device rejects is dropped and compiled afresh (jit.cpp).
#include <memory>
#include <optional>
#include <vector>

#include "cache/code_cache.hpp"
#include "compiler/compiler.hpp"
#include "core/target.hpp"

namespace sagejit {

struct CompilerChoice {
  const Compiler* compiler = nullptr;  // builds on a miss
  // Stand-ins for the compilers of the system cache's manifest other than `compiler` (only for the
  // target's vendor), searched before compiling.
  std::vector<std::shared_ptr<const Compiler>> prebuilt;
};

// Throws Error(invalid_argument) when `requested` or SAGEJIT_COMPILER names a compiler that cannot
// build the target's vendor (naming the variable or option and the accepted values), and
// Error(runtime_not_found) naming what was tried when no compiler is available.
CompilerChoice choose_compiler(const Target& target, std::optional<CompilerKind> requested = std::nullopt,
                               const CodeCache* cache = nullptr);

}  // namespace sagejit
