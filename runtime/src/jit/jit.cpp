#include "jit/jit.hpp"

#include <chrono>
#include <map>
#include <mutex>
#include <shared_mutex>
#include <tuple>
#include <unordered_map>

#include "core/env.hpp"
#include "core/error.hpp"
#include "core/log.hpp"
#include "core/target.hpp"
#include "compiler/code_object_check.hpp"
#include "jit/compile_dump.hpp"
#include "jit/compiler_choice.hpp"

namespace sagejit {
namespace {

double elapsed_ms(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - since).count();
}

// What decides which module a call gets, without rendering: the device and ordinal, the descriptor,
// compiler and cache (process-wide objects, identified by address), the specialization and the
// config's contents. A probe refers to the caller's config (nothing copied, nothing allocated, no
// string formatted); a remembered key to the table's own copy. The environment is read once per
// process for this purpose: changing SAGEJIT_* or compiler env vars mid-run does not reload kernels
// already loaded.
struct LoadKey {
  const Device* device;
  int ordinal;
  const KernelDesc* desc;
  const Compiler* compiler;
  const CodeCache* cache;
  Specialization spec;
  const TileConfig* config;

  bool operator==(const LoadKey& other) const {
    return device == other.device && ordinal == other.ordinal && desc == other.desc && compiler == other.compiler &&
           cache == other.cache && spec == other.spec && *config == *other.config;
  }
};

struct LoadKeyHash {
  std::size_t operator()(const LoadKey& k) const noexcept {
    std::size_t hash = 0;
    const auto mix = [&hash](std::size_t value) { hash ^= value + 0x9e3779b97f4a7c15ULL + (hash << 6) + (hash >> 2); };
    for (const void* address : {static_cast<const void*>(k.device), static_cast<const void*>(k.desc),
                                static_cast<const void*>(k.compiler), static_cast<const void*>(k.cache)})
      mix(std::hash<const void*>{}(address));
    mix(static_cast<std::size_t>(k.ordinal));
    mix(static_cast<std::size_t>(k.spec.dtype) | static_cast<std::size_t>(k.spec.head_dim) << 8 |
        (k.spec.causal ? 1u << 20 : 0u) | (k.spec.write_lse ? 1u << 21 : 0u) | (k.spec.v.pv_fp16 ? 1u << 22 : 0u) |
        (k.spec.key_mask ? 1u << 23 : 0u) | static_cast<std::size_t>(k.spec.v.order) << 24);
    for (const auto& [name, value] : *k.config) {
      mix(std::hash<std::string>{}(name));
      mix(std::hash<int>{}(value));
    }
    return hash;
  }
};

// Loaded modules, once per (device, ordinal, cache key). A front map from the call's inputs (LoadKey)
// lets a repeated call skip rendering and hashing: one hash lookup under a shared lock.
class ModuleTable {
 public:
  static ModuleTable& instance() {
    static ModuleTable table;
    return table;
  }

  LoadedKernel* find_fast(const LoadKey& probe) {
    std::shared_lock lock(fast_mutex_);
    const auto it = fast_.find(probe);
    return it == fast_.end() ? nullptr : it->second;
  }
  void remember_fast(const LoadKey& probe, LoadedKernel* kernel);

  struct Slot {
    std::mutex mutex;
    std::unique_ptr<LoadedKernel> kernel;
  };
  std::shared_ptr<Slot> slot(const Device& device, int ordinal, const CacheKey& key) {
    std::lock_guard lock(slots_mutex_);
    auto& slot = slots_[SlotKey{&device, ordinal, key}];
    if (!slot) slot = std::make_shared<Slot>();
    return slot;
  }

 private:
  std::shared_mutex fast_mutex_;
  // The configs the remembered keys point to (one per distinct kernel loaded; loaded kernels are kept
  // for the life of the process too, so this is bounded by them).
  std::vector<std::unique_ptr<const TileConfig>> fast_configs_;
  std::unordered_map<LoadKey, LoadedKernel*, LoadKeyHash> fast_;
  std::mutex slots_mutex_;
  using SlotKey = std::tuple<const Device*, int, CacheKey>;
  std::map<SlotKey, std::shared_ptr<Slot>> slots_;
};

void ModuleTable::remember_fast(const LoadKey& probe, LoadedKernel* kernel) {
  std::unique_lock lock(fast_mutex_);
  if (fast_.contains(probe)) return;  // another thread remembered it meanwhile
  fast_configs_.push_back(std::make_unique<const TileConfig>(*probe.config));
  LoadKey kept = probe;
  kept.config = fast_configs_.back().get();
  fast_.emplace(kept, kernel);
}

std::vector<std::byte> compile_and_dump(const KernelBuild& build, const Compiler& compiler) {
  CompileRequest request;
  request.name = build.rendered.name;
  request.source = build.rendered.source;
  request.target = build.rendered.target;
  request.options = build.rendered.options;
  CompileDump dump{&request, build.key, compiler.identity(), compiler.kind(), {}, nullptr, {}};
  const auto start = std::chrono::steady_clock::now();
  try {
    CompileResult result = compiler.compile(request);
    log::info("{}: compiled by {} in {:.1f} ms ({} bytes)", request.name, dump.compiler_identity,
              elapsed_ms(start), result.code.size());
    if (!result.log.empty()) log::debug("{}: compiler log:\n{}", request.name, result.log);
    dump.effective_options = result.effective_options;
    dump.code = &result.code;
    dump.log = result.log;
    dump_compile_if_requested(dump);
    // Never publish or load what is not a code object of this target.
    if (const auto problem = code_object_problem(result.code, parse_target(request.target)); !problem.empty())
      fail(ErrorCode::compile_error, "{} produced an unusable code object for kernel '{}': {}", dump.compiler_identity,
           request.name, problem);
    return std::move(result.code);
  } catch (const Error& error) {
    dump.effective_options = request.options;
    for (auto& option : compiler.base_options(request.target)) dump.effective_options.push_back(std::move(option));
    dump.log = error.what();
    dump_compile_if_requested(dump);
    throw;
  }
}

std::unique_ptr<LoadedKernel> finish_load(const KernelBuild& build, const CacheLookup& lookup,
                                          std::unique_ptr<LoadedModule> module,
                                          std::chrono::steady_clock::time_point start, const std::string& built_by);

// A code object another compiler built ahead of time (the system cache's manifest) that the device
// loads; nullopt when there is none or the device rejects it.
struct PrebuiltLoad {
  CacheLookup lookup;
  std::unique_ptr<LoadedModule> module;
  std::string built_by;
};

std::optional<PrebuiltLoad> load_prebuilt(
    Device& device, int ordinal, const KernelBuild& build, CodeCache& cache, const PrebuiltCompilers& prebuilt) {
  for (const auto& compiler : prebuilt) {
    EntryLabel label = build.label;
    label.compiler = compiler->identity();
    const std::optional<CacheLookup> found = cache.find_prebuilt(rendered_cache_key(build.rendered, *compiler), label);
    if (!found) continue;
    if (const auto problem = code_object_problem(*found->code, parse_target(build.rendered.target)); !problem.empty()) {
      log::warn("{}: ignoring the prebuilt code object of {}: {}", build.rendered.name, label.compiler, problem);
      continue;
    }
    try {
      return PrebuiltLoad{*found, device.load_module(ordinal, *found->code), label.compiler};
    } catch (const Error& error) {
      log::warn("{}: the runtime rejected the prebuilt code object of {} ({}); compiling it", build.rendered.name,
                label.compiler, error.what());
    }
  }
  return std::nullopt;
}

std::unique_ptr<LoadedKernel> load_on_device(Device& device, int ordinal, const KernelBuild& build,
                                             const Compiler& compiler, CodeCache& cache,
                                             const PrebuiltCompilers& prebuilt) {
  const auto start = std::chrono::steady_clock::now();
  if (auto found = load_prebuilt(device, ordinal, build, cache, prebuilt))
    return finish_load(build, found->lookup, std::move(found->module), start, found->built_by);
  CacheLookup lookup = build_code_object(cache, build, compiler);
  std::unique_ptr<LoadedModule> module;
  try {
    module = device.load_module(ordinal, *lookup.code);
  } catch (const Error& error) {
    if (lookup.hit == CacheHit::compiled) throw;
    // A cached code object the runtime rejects (e.g. a driver older than the compiler that built
    // it): drop it and compile afresh once; if that one fails to load too, the error is real.
    log::warn("{}: the runtime rejected the cached code object ({}); compiling it again", build.rendered.name,
              error.what());
    cache.evict(build.key, build.label);
    lookup = build_code_object(cache, build, compiler);
    module = device.load_module(ordinal, *lookup.code);
  }
  return finish_load(build, lookup, std::move(module), start, build.label.compiler);
}

std::unique_ptr<LoadedKernel> finish_load(const KernelBuild& build, const CacheLookup& lookup,
                                          std::unique_ptr<LoadedModule> module,
                                          std::chrono::steady_clock::time_point start, const std::string& built_by) {
  auto kernel = std::make_unique<LoadedKernel>();
  kernel->name = build.rendered.name;
  kernel->config = build.label.config;
  kernel->key = build.key;
  kernel->entries = build.rendered.entries;
  for (const auto& entry : kernel->entries) kernel->functions.push_back(module->function(entry));
  kernel->module = std::move(module);
  kernel->hit = lookup.hit;
  kernel->compiler = built_by;
  kernel->load_ms = elapsed_ms(start);
  log::info("{}: config {}: {} ({:.2f} ms, cache lookup {:.2f} ms) key {}", kernel->name, kernel->config,
            lookup.hit == CacheHit::compiled ? "compiled" : fmt::format("{} cache hit", to_string(lookup.hit)),
            kernel->load_ms, lookup.ms, build.key.hex());
  if (build.label.compiler != built_by) log::info("{}: built by {}", kernel->name, kernel->compiler);
  return kernel;
}

}  // namespace

void* LoadedKernel::function(std::string_view entry) const {
  for (std::size_t i = 0; i < entries.size(); ++i)
    if (entries[i] == entry) return functions[i];
  std::string known;
  for (const auto& name : entries) known += (known.empty() ? "" : ", ") + name;
  fail(ErrorCode::internal, "kernel {} has no entry \"{}\" (entries: {})", name, entry, known);
}

CacheKey rendered_cache_key(const RenderedKernel& rendered, const Compiler& compiler) {
  CacheKeyInputs inputs;
  inputs.source = rendered.source;
  inputs.options = rendered.options;
  for (auto& option : compiler.base_options(rendered.target)) inputs.options.push_back(std::move(option));
  inputs.options = normalise_options(inputs.options);
  inputs.target = rendered.target;
  inputs.compiler_identity = compiler.identity();
  for (const auto& name : compiler.option_env_vars()) inputs.environment.emplace_back(name, env::get(name.c_str()));
  return make_cache_key(inputs);
}

KernelBuild plan_build(const KernelDesc& desc, const TileConfig& config, const Specialization& spec,
                       const std::string& target, const Compiler& compiler) {
  KernelBuild build;
  build.rendered = render_kernel(desc, config, spec, target);
  build.key = rendered_cache_key(build.rendered, compiler);
  build.label.kernel = desc.name;
  build.label.config = config_id(config);
  build.label.target = build.rendered.target;
  build.label.compiler = compiler.identity();
  return build;
}

CacheLookup build_code_object(CodeCache& cache, const KernelBuild& build, const Compiler& compiler) {
  const auto lookup = [&] {
    return cache.get_or_compile(build.key, build.label, [&] { return compile_and_dump(build, compiler); });
  };
  CacheLookup found = lookup();
  if (found.hit == CacheHit::compiled) return found;  // compile_and_dump checked it
  // A cached entry passed its checksums, but what it holds must still be a code object of this target.
  const Target target = parse_target(build.rendered.target);
  auto problem = code_object_problem(*found.code, target);
  if (problem.empty()) return found;
  log::warn("{}: the {} cache entry is not a usable code object ({}); compiling it again", build.rendered.name,
            to_string(found.hit), problem);
  cache.evict(build.key, build.label);
  found = lookup();
  if (found.hit != CacheHit::compiled && !(problem = code_object_problem(*found.code, target)).empty())
    fail(ErrorCode::cache_error, "{}: the {} cache entry is not a usable code object ({}); run 'sagejit-cache verify "
         "--fix' or reinstall the system cache", build.rendered.name, to_string(found.hit), problem);
  return found;
}

const Target& device_target(Device& device, int ordinal) {
  // DeviceInfo costs several driver calls and this is on every attention call. Devices are the
  // process-wide backends (cuda_device(), hip_device()), alive until exit, so their addresses
  // identify them.
  static std::mutex mutex;
  static std::map<std::pair<const Device*, int>, Target> targets;
  const std::lock_guard lock(mutex);
  const auto key = std::make_pair(static_cast<const Device*>(&device), ordinal);
  auto it = targets.find(key);
  if (it == targets.end()) {
    const DeviceInfo info = device.info(ordinal);
    it = targets.emplace(key, parse_target(info.full_target.empty() ? info.target : info.full_target)).first;
  }
  return it->second;
}

const CompilerChoice& device_compiler_choice(Device& device, int ordinal) {
  // The compiler policy and the system cache's manifest are read once per target and process.
  static std::mutex mutex;
  static std::map<std::string, CompilerChoice> choices;
  const Target& target = device_target(device, ordinal);
  const std::lock_guard lock(mutex);
  auto it = choices.find(target.full);
  if (it == choices.end()) it = choices.emplace(target.full, choose_compiler(target, std::nullopt, &code_cache())).first;
  return it->second;
}

LoadedKernel& load_kernel(Device& device, int ordinal, const KernelDesc& desc, const TileConfig& config,
                          const Specialization& spec) {
  const CompilerChoice& choice = device_compiler_choice(device, ordinal);
  return load_kernel(device, ordinal, desc, config, spec, *choice.compiler, code_cache(), choice.prebuilt);
}

LoadedKernel& load_kernel(Device& device, int ordinal, const KernelDesc& desc, const TileConfig& config,
                          const Specialization& spec, const Compiler& compiler, CodeCache& cache,
                          const PrebuiltCompilers& prebuilt) {
  auto& table = ModuleTable::instance();
  const LoadKey fast_key{&device, ordinal, &desc, &compiler, &cache, spec, &config};
  if (LoadedKernel* kernel = table.find_fast(fast_key)) return *kernel;

  const KernelBuild build = plan_build(desc, config, spec, device_target(device, ordinal).full, compiler);
  const auto slot = table.slot(device, ordinal, build.key);
  std::lock_guard lock(slot->mutex);  // concurrent first calls: one loads, the others wait
  if (!slot->kernel) slot->kernel = load_on_device(device, ordinal, build, compiler, cache, prebuilt);
  table.remember_fast(fast_key, slot->kernel.get());
  return *slot->kernel;
}

}  // namespace sagejit
