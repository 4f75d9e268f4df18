// Benchmark of the JIT cache path with the probe kernel (kernel_src/jit_probe.cu), for each compiler
// present: cold compile, disk hit (fresh in-memory cache, warm user dir), in-memory hit, and, when a
// GPU is present, the first load_kernel from disk (module load included) and a repeated load_kernel.
//
//   bench_jit_cache [--repeats N] [--lookups N]
// Prints one table; every figure is a median over the repeats. Uses a private temp cache dir.
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cache/code_cache.hpp"
#include "compiler/compiler.hpp"
#include "core/error.hpp"
#include "core/log.hpp"
#include "device/device.hpp"
#include "jit/jit.hpp"
#include "kernels/registry.hpp"

using namespace sagejit;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

constexpr int batch = 100;  // lookups per timed batch

namespace {

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

double median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const std::size_t mid = values.size() / 2;
  return values.size() % 2 ? values[mid] : 0.5 * (values[mid - 1] + values[mid]);
}

struct Row {
  std::string compiler;
  std::string target;
  std::string what;
  double value = 0;
  std::string unit;
  int samples = 0;
};

class ScratchDir {
 public:
  ScratchDir() {
    std::string pattern = (fs::temp_directory_path() / "sagejit-bench-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) fail(ErrorCode::internal, "mkdtemp failed");
    path_ = pattern;
  }
  ~ScratchDir() {
    std::error_code ignored;
    fs::remove_all(path_, ignored);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

CodeCacheSettings settings_for(const fs::path& dir) {
  CodeCacheSettings settings;
  settings.user_dir = dir;
  settings.max_bytes = 0;
  return settings;
}

// A probe config no earlier run can have cached: the scale is random, so the key is new.
TileConfig fresh_config(std::mt19937& rng) { return {{"block", 128}, {"scale", 1000 + static_cast<int>(rng() % 1000000)}}; }

void bench_compiler(CompilerKind kind, const std::string& target, int repeats, int lookups, std::vector<Row>& rows) {
  const std::string name(to_string(kind));
  const Compiler* compiler_ptr = nullptr;
  try {
    compiler_ptr = &compiler(kind);
  } catch (const Error& error) {
    rows.push_back({name, target, fmt::format("absent: {}", error.what()), 0, "", 0});
    return;
  }
  const Compiler& chosen = *compiler_ptr;
  std::mt19937 rng(std::random_device{}());
  ScratchDir scratch;
  std::vector<double> cold, disk, memory;
  std::vector<KernelBuild> builds;
  try {
    for (int r = 0; r < repeats; ++r) {
      builds.push_back(plan_build(jit_probe_kernel, fresh_config(rng), {}, target, chosen));
      CodeCache cache(settings_for(scratch.path()));
      const auto start = Clock::now();
      const CacheLookup lookup = build_code_object(cache, builds.back(), chosen);
      cold.push_back(ms_since(start));
      if (lookup.hit != CacheHit::compiled) fail(ErrorCode::internal, "cold lookup was a {} hit", to_string(lookup.hit));
    }
  } catch (const Error& error) {
    rows.push_back({name + " (" + chosen.identity() + ")", target, fmt::format("compile failed: {}", error.what()), 0, "", 0});
    return;
  }
  const std::size_t code_bytes = CodeCache(settings_for(scratch.path()))
                                     .get_or_compile(builds[0].key, builds[0].label, [] { return std::vector<std::byte>{}; })
                                     .code->size();
  for (int r = 0; r < std::max(repeats * 5, 20); ++r) {
    CodeCache cache(settings_for(scratch.path()));  // fresh memory, warm disk
    const KernelBuild& build = builds[static_cast<std::size_t>(r) % builds.size()];
    const auto start = Clock::now();
    const CacheLookup lookup = build_code_object(cache, build, chosen);
    disk.push_back(ms_since(start));
    if (lookup.hit != CacheHit::user) fail(ErrorCode::internal, "disk lookup was a {} hit", to_string(lookup.hit));
  }
  CodeCache cache(settings_for(scratch.path()));
  (void)build_code_object(cache, builds[0], chosen);
  // Batches of `batch` lookups, so the clock's own cost does not dominate a ~100 ns operation.
  for (int b = 0; b < std::max(1, lookups / batch); ++b) {
    const auto start = Clock::now();
    for (int i = 0; i < batch; ++i) {
      const CacheLookup lookup = cache.get_or_compile(builds[0].key, builds[0].label, [] { return std::vector<std::byte>{}; });
      if (lookup.hit != CacheHit::memory) fail(ErrorCode::internal, "memory lookup was a {} hit", to_string(lookup.hit));
    }
    memory.push_back(ms_since(start) * 1e6 / batch);  // ns per lookup
  }
  const std::string label = name + " (" + chosen.identity() + ")";
  rows.push_back({label, target, fmt::format("cold compile (code object {} bytes)", code_bytes), median(cold), "ms",
                  static_cast<int>(cold.size())});
  rows.push_back({label, target, "disk hit: fresh memory, warm user dir", median(disk), "ms", static_cast<int>(disk.size())});
  rows.push_back({label, target, "memory hit: CodeCache::get_or_compile (per lookup)", median(memory), "ns",
                  static_cast<int>(memory.size())});
}

// With a GPU: the whole first call from a warm disk (render, key, read, module load) and a repeated call.
void bench_device(int repeats, int lookups, std::vector<Row>& rows) {
  Device* device = nullptr;
  try {
    device = &default_device();
  } catch (const Error& error) {
    rows.push_back({"(device)", "-", fmt::format("no GPU: {}", error.what()), 0, "", 0});
    return;
  }
  const DeviceInfo info = device->info(0);
  const Compiler& chosen = *device_compiler_choice(*device, 0).compiler;
  std::mt19937 rng(std::random_device{}());
  ScratchDir scratch;
  std::vector<TileConfig> configs;
  for (int r = 0; r < std::max(repeats * 3, 10); ++r) {
    configs.push_back(fresh_config(rng));
    CodeCache cache(settings_for(scratch.path()));
    (void)build_code_object(cache, plan_build(jit_probe_kernel, configs.back(), {}, info.full_target, chosen), chosen);
  }
  std::vector<double> first, repeated;
  for (const auto& config : configs) {
    CodeCache cache(settings_for(scratch.path()));
    const auto start = Clock::now();
    LoadedKernel& kernel = load_kernel(*device, 0, jit_probe_kernel, config, {}, chosen, cache);
    first.push_back(ms_since(start));
    if (kernel.hit != CacheHit::user) fail(ErrorCode::internal, "first load was a {} hit", to_string(kernel.hit));
  }
  CodeCache cache(settings_for(scratch.path()));
  (void)load_kernel(*device, 0, jit_probe_kernel, configs[0], {}, chosen, cache);
  for (int b = 0; b < std::max(1, lookups / batch); ++b) {
    const auto start = Clock::now();
    for (int i = 0; i < batch; ++i) (void)load_kernel(*device, 0, jit_probe_kernel, configs[0], {}, chosen, cache);
    repeated.push_back(ms_since(start) * 1e6 / batch);  // ns per call
  }
  const std::string label = fmt::format("{} on {}", chosen.identity(), info.name);
  rows.push_back({label, info.full_target, "load_kernel, first call, warm disk (incl. module load)", median(first), "ms",
                  static_cast<int>(first.size())});
  rows.push_back({label, info.full_target, "load_kernel, repeated call (per call)", median(repeated), "ns",
                  static_cast<int>(repeated.size())});
}

}  // namespace

int main(int argc, char** argv) {
  int repeats = 3, lookups = 20000;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--repeats") repeats = std::max(1, std::atoi(argv[i + 1]));
    else if (flag == "--lookups") lookups = std::max(1, std::atoi(argv[i + 1]));
    else {
      std::fprintf(stderr, "usage: %s [--repeats N] [--lookups N]\n", argv[0]);
      return 2;
    }
  }
  std::vector<Row> rows;
  try {
    bench_compiler(CompilerKind::nvrtc, "sm_90", repeats, lookups, rows);
    bench_compiler(CompilerKind::clang, "gfx1201", repeats, lookups, rows);
    bench_compiler(CompilerKind::hiprtc, "gfx1030", repeats, lookups, rows);
    bench_device(repeats, lookups, rows);
  } catch (const Error& error) {
    std::fprintf(stderr, "bench_jit_cache: %s\n", error.what());
    return 1;
  }
  fmt::print("| compiler | target | measurement | median | samples |\n|---|---|---|---|---|\n");
  for (const Row& row : rows) {
    if (row.samples == 0)
      fmt::print("| {} | {} | {} | - | - |\n", row.compiler, row.target, row.what);
    else
      fmt::print("| {} | {} | {} | {:.3f} {} | {} |\n", row.compiler, row.target, row.what, row.value, row.unit, row.samples);
  }
  return 0;
}
