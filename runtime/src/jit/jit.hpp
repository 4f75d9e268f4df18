#pragma once
// The JIT loader: the one call the API makes to get a kernel's function handles on a device.
//   render (jit/render.hpp) -> key (cache/cache_key.hpp) -> code cache (memory, system dir, user
//   dir, compile) -> load the module on the device, once per (device, ordinal, key) -> functions.
// The tools use plan_build/build_code_object so what they precompile is exactly what a first call
// looks for.
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "cache/cache_entry.hpp"
#include "cache/cache_key.hpp"
#include "cache/code_cache.hpp"
#include "compiler/compiler.hpp"
#include "device/device.hpp"
#include "jit/compiler_choice.hpp"
#include "jit/kernel_desc.hpp"
#include "jit/render.hpp"

namespace sagejit {

// A kernel loaded on one device. Lives (module loaded) until the process exits; references to it
// stay valid.
struct LoadedKernel {
  std::string name;                  // rendered name: "<kernel>.<config id>.<target>"
  std::string config;                // config id
  CacheKey key;
  std::vector<std::string> entries;  // entry names, in the descriptor's order
  std::vector<void*> functions;      // function handles, same order as entries
  CacheHit hit = CacheHit::compiled; // how the code object was found when it was loaded
  std::string compiler;              // identity of the compiler that built it (a prebuilt one's included)
  double load_ms = 0;                // render + cache/compile + module load, at first load
  std::unique_ptr<LoadedModule> module;

  // The handle of `entry`; throws Error(internal) naming the entries when there is none.
  void* function(std::string_view entry) const;
};

// Stand-ins for the compilers whose prebuilt code objects a run also accepts (jit/compiler_choice.hpp).
using PrebuiltCompilers = std::vector<std::shared_ptr<const Compiler>>;

// The compiler a first call on this device uses, and the prebuilt code objects it accepts
// (jit/compiler_choice.hpp), decided once per target and process.
const CompilerChoice& device_compiler_choice(Device& device, int ordinal);

// The parsed target of a device (full target, feature suffixes kept), queried once per (device, ordinal).
const Target& device_target(Device& device, int ordinal);

// The cache key of a rendered kernel under a compiler: source, kernel options then the compiler's
// base options, full target, compiler identity, values of its option_env_vars(), format version.
// The runtime version is left out on purpose (cache/cache_key.hpp says why).
CacheKey rendered_cache_key(const RenderedKernel& rendered, const Compiler& compiler);

struct KernelBuild {
  RenderedKernel rendered;
  CacheKey key;
  EntryLabel label;  // kernel name, config id, full target, compiler identity
};

// Renders and keys a kernel for a target (feature suffixes allowed). Throws like render_kernel.
KernelBuild plan_build(const KernelDesc& desc, const TileConfig& config, const Specialization& spec,
                       const std::string& target, const Compiler& compiler);

// Finds the code object in `cache` or compiles it (dumping to SAGEJIT_DUMP_DIR when set).
CacheLookup build_code_object(CodeCache& cache, const KernelBuild& build, const Compiler& compiler);

// The call the API makes: the process-wide code cache, the compiler of jit/compiler_choice.hpp for
// the device's target and the prebuilt code objects that policy accepts.
// Concurrent first calls for one kernel compile and load it once; later calls are a map lookup.
// Throws Error(unsupported) for a target or config the descriptor rejects, Error(compile_error),
// Error(device_error), Error(runtime_not_found) from the layers below.
LoadedKernel& load_kernel(Device& device, int ordinal, const KernelDesc& desc, const TileConfig& config,
                          const Specialization& spec);

// Same with an explicit compiler and cache (tests, benchmarks, tools). Loaded kernels are remembered
// per (device, ordinal, descriptor, config, specialization, compiler, cache) by address, so the device,
// compiler and cache passed must live as long as the process uses kernels loaded through them (the
// process-wide singletons do).
LoadedKernel& load_kernel(Device& device, int ordinal, const KernelDesc& desc, const TileConfig& config,
                          const Specialization& spec, const Compiler& compiler, CodeCache& cache,
                          const PrebuiltCompilers& prebuilt = {});

}  // namespace sagejit
