// The shim behind tools/scripts/gfx12_emulate.py: one attention call through the runtime's own
// runner (plan, render, compile, cache, load, argument packing, launch geometry: nothing restated)
// on an emulated device whose memory is host memory and whose launches are handed to a callback.
// The script's callback runs each launch's machine code in an RDNA4 instruction emulator (in this
// process, so the kernel arguments' pointers are valid as they are); the shim then reads the
// workspace and the output back and compares them with the CPU emulator, as sagejit-selftest does
// on a real GPU. Development check only: it is not installed, and CI does not run it.
//
// C interface (ctypes): sj_gfx12_emulation_run(case_json, launch, user, result, result_size).
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <sys/mman.h>
#include <unistd.h>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "support/attention_trial.hpp"
#include "support/compile_job.hpp"
#include "support/oracle_check.hpp"
#include "support/shape.hpp"
#include "core/error.hpp"
#include "core/tile_config.hpp"
#include "dev/attention_harness.hpp"
#include "device/device.hpp"
#include "platform/safe_file.hpp"

namespace {

using namespace sagejit;

// One launch as the HIP module API would see it: the code object, the entry point's name, the
// geometry, and the kernel argument array (one pointer per argument; their sizes are in the code
// object's metadata, which the callback reads as a HIP runtime does). Returns 0, or nonzero with a
// message in `error`.
using LaunchCallback = int (*)(void* user, const void* code_object, std::size_t code_size, const char* entry,
                               const unsigned* grid, const unsigned* block, unsigned dynamic_shared, void** args,
                               char* error, std::size_t error_size);

struct EmulatedFunction {
  const std::vector<std::byte>* code = nullptr;
  std::string entry;
};

class EmulatedModule final : public LoadedModule {
 public:
  explicit EmulatedModule(std::span<const std::byte> code) : code_(code.begin(), code.end()) {}
  void* function(const std::string& name) override {
    functions_.push_back(std::make_unique<EmulatedFunction>(EmulatedFunction{&code_, name}));
    return functions_.back().get();
  }

 private:
  std::vector<std::byte> code_;
  std::vector<std::unique_ptr<EmulatedFunction>> functions_;
};

// A gfx12 device whose memory is host memory and whose launches run in the callback (in order,
// synchronously: every stream is the same queue).
class EmulatedDevice final : public Device {
 public:
  explicit EmulatedDevice(std::string target) : target_(std::move(target)) {}

  // The callback of the case being run, and no replaced code objects yet.
  void begin_case(LaunchCallback launch, void* user) {
    launch_ = launch;
    user_ = user;
    replacements_.clear();
  }

  Vendor vendor() const override { return Vendor::amd; }
  std::string runtime_version() const override { return "RDNA4 instruction emulator"; }
  std::string library_path() const override { return {}; }
  int device_count() const override { return 1; }
  DeviceInfo info(int ordinal) const override {
    DeviceInfo info;
    info.ordinal = ordinal;
    info.vendor = Vendor::amd;
    info.name = "emulated " + target_;
    info.target = info.full_target = target_;
    info.compute_units = 64;
    info.shared_memory_per_block = info.shared_memory_per_block_optin = 65536;
    info.warp_size = 32;
    info.total_memory = std::size_t{1} << 34;
    return info;
  }
  int current_device() const override { return 0; }

  std::unique_ptr<LoadedModule> load_module(int, std::span<const std::byte> code_object) override {
    return std::make_unique<EmulatedModule>(code_object);
  }
  // Launches of entry point `entry` run `code` instead of what the runtime loaded (the code objects
  // another compiler made for the same kernel, config and specialization: sagejit-precompile --emit-dir).
  void replace_code(const std::string& entry, std::shared_ptr<const std::vector<std::byte>> code) {
    replacements_[entry] = std::move(code);
  }
  void launch(int, void* function, const LaunchGeometry& geometry, Stream, void** args) override {
    const auto& f = *static_cast<const EmulatedFunction*>(function);
    const auto replaced = replacements_.find(f.entry);
    const std::vector<std::byte>& code = replaced == replacements_.end() ? *f.code : *replaced->second;
    char error[2048] = {};
    const int status = launch_(user_, code.data(), code.size(), f.entry.c_str(), geometry.grid.data(),
                               geometry.block.data(), geometry.dynamic_shared_bytes, args, error, sizeof error);
    if (status != 0) fail(ErrorCode::device_error, "emulated launch of {} failed: {}", f.entry, error);
  }

  // Each buffer ends (to 256 bytes) at an inaccessible guard page, with another one before it: a
  // kernel that reads or writes past the end of a buffer, which on a GPU may pass unnoticed, stops
  // the emulated run with SIGSEGV instead of corrupting the process.
  void* allocate(int, std::size_t bytes) override {
    const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    const std::size_t rounded = std::max<std::size_t>(256, (bytes + 255) / 256 * 256);
    const std::size_t data = (rounded + page - 1) / page * page;
    void* base = mmap(nullptr, data + 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base == MAP_FAILED) fail(ErrorCode::device_error, "emulated device: cannot allocate {} bytes", bytes);
    char* first = static_cast<char*>(base);
    if (mprotect(first, page, PROT_NONE) != 0 || mprotect(first + page + data, page, PROT_NONE) != 0) {
      munmap(base, data + 2 * page);
      fail(ErrorCode::device_error, "emulated device: cannot set up guard pages");
    }
    void* pointer = first + page + data - rounded;
    mappings_[pointer] = {base, data + 2 * page};
    return pointer;
  }
  void free(int, void* pointer) noexcept override {
    const auto it = mappings_.find(pointer);
    if (it == mappings_.end()) return;
    munmap(it->second.first, it->second.second);
    mappings_.erase(it);
  }
  void copy_to_device(int, void* dst, const void* src, std::size_t bytes) override { std::memcpy(dst, src, bytes); }
  void copy_to_host(int, void* dst, const void* src, std::size_t bytes) override { std::memcpy(dst, src, bytes); }
  void memset(int, void* dst, int value, std::size_t bytes, Stream) override { std::memset(dst, value, bytes); }
  void synchronize(int, Stream) override {}
  bool stream_is_capturing(int, Stream) override { return false; }
  void* create_event(int) override { fail(ErrorCode::unsupported, "emulated device: no timing events"); }
  void destroy_event(int, void*) noexcept override {}
  void record_event(int, void*, Stream) override { fail(ErrorCode::unsupported, "emulated device: no timing events"); }
  float elapsed_ms(int, void*, void*) override { fail(ErrorCode::unsupported, "emulated device: no timing events"); }

 private:
  std::string target_;
  std::map<std::string, std::shared_ptr<const std::vector<std::byte>>> replacements_;
  std::map<void*, std::pair<void*, std::size_t>> mappings_;  // buffer -> its mapping (guards included)
  LaunchCallback launch_ = nullptr;
  void* user_ = nullptr;
};

// One device per target for the process: the JIT remembers loaded kernels and targets per device
// address (jit/jit.hpp), so the device must outlive every case that loads through it.
EmulatedDevice& emulated_device(const std::string& target) {
  static std::map<std::string, std::unique_ptr<EmulatedDevice>> devices;
  auto& device = devices[target];
  if (!device) device = std::make_unique<EmulatedDevice>(target);
  return *device;
}

// Output bits of the kernel vs the CPU emulator (same dims, dtype and layout, so same storage).
nlohmann::json compare_output(const numerics::HostTensor& actual, const numerics::HostTensor& expected) {
  const auto& a = actual.storage();
  const auto& e = expected.storage();
  std::int64_t differing = 0, first = -1;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i] != e[i]) {
      ++differing;
      if (first < 0) first = static_cast<std::int64_t>(i);
    }
  nlohmann::json result{{"bit_exact", differing == 0}, {"differing_storage_elements", differing}};
  if (first >= 0)
    result["first_difference"] = fmt::format("storage element {}: kernel {:#06x}, CPU emulator {:#06x}", first,
                                             a[static_cast<std::size_t>(first)], e[static_cast<std::size_t>(first)]);
  return result;
}

// The emitted code object of `desc` for a plan's config and specialization in `directory`: the exact
// specialization, or the one with the fields the kernel is not compiled for at their defaults (how
// sagejit-precompile names the one object it builds for all of them).
std::shared_ptr<const std::vector<std::byte>> emitted_object(const std::string& directory, const KernelDesc& desc,
                                                             const TileConfig& config, const Specialization& spec,
                                                             const std::string& target) {
  Specialization reduced = spec;
  if ((desc.specialized_on & spec_causal) == 0) reduced.causal = false;
  if ((desc.specialized_on & spec_write_lse) == 0) reduced.write_lse = false;
  std::vector<std::string> tried;
  for (const Specialization& candidate : {spec, reduced}) {
    const std::filesystem::path path = std::filesystem::path(directory) / tools::emit_file_name(desc.name, config, candidate, target);
    tried.push_back(path.string());
    const OpenedFile opened = open_regular_file(path, Symlinks::follow);
    if (opened.missing) continue;
    std::string problem = opened.problem;
    std::optional<std::vector<std::byte>> bytes;
    if (problem.empty()) bytes = read_opened_file(opened, std::size_t{1} << 28, problem);
    if (!bytes) fail(ErrorCode::invalid_argument, "code_objects: cannot read {}: {}", path.string(), problem);
    return std::make_shared<const std::vector<std::byte>>(std::move(*bytes));
  }
  fail(ErrorCode::invalid_argument, "code_objects: no emitted object for {} {}: tried {}", desc.name, config_id(config),
       fmt::format("{}", fmt::join(tried, ", ")));
}

nlohmann::json run_case(const nlohmann::json& spec, LaunchCallback launch, void* user) {
  const std::string target = spec.value("target", "gfx1201");
  EmulatedDevice& device = emulated_device(target);
  device.begin_case(launch, user);
  CallDevice call_device{&device, device.info(0)};

  tools::TrialSettings settings;
  settings.layout = spec.value("layout", "HND") == "NHD" ? Layout::NHD : Layout::HND;
  settings.lse = spec.value("lse", false);
  settings.smooth_k = spec.value("smooth_k", true);
  settings.inputs = spec.value("inputs", "normal") == "channel_offsets" ? tools::InputKind::channel_offsets
                                                                         : tools::InputKind::normal;
  settings.seed = spec.value("seed", std::uint64_t{1});
  settings.nan_query_tokens = spec.value("nan_query_tokens", std::vector<int>{});
  const tools::AttentionShape shape = tools::parse_shape(spec.at("shape").get<std::string>(), "shape");

  std::optional<TileConfig> config;
  if (spec.contains("config") && !spec["config"].is_null()) config = spec["config"].get<TileConfig>();

  tools::AttentionTrial trial(call_device, shape, settings);
  const AttentionPlan plan = trial.choice(config);
  nlohmann::json replaced = nlohmann::json::array();
  if (spec.contains("code_objects")) {
    const std::string directory = spec["code_objects"].get<std::string>();
    for (const auto& [desc, kernel_config] : {std::pair{plan.attention, &plan.attention_config},
                                              std::pair{plan.prepare, &plan.prepare_config}}) {
      const auto code = emitted_object(directory, *desc, *kernel_config, plan.spec, target);
      for (const std::string& entry : desc->entries) device.replace_code(entry, code);
      replaced.push_back(desc->name);
    }
  }
  trial.enqueue(plan, 0, nullptr);
  const numerics::HostTensor out = trial.download_output();
  const std::vector<float> lse = trial.download_lse();

  const numerics::EmulatorOptions options = trial.emulator_options(plan);
  const numerics::PreparedTensors expected =
      numerics::prepare(trial.q().view(), trial.k().view(), trial.v().view(), settings.layout, options);
  const numerics::PreparedTensors actual = trial.download_prepared(plan);
  const auto mismatch = numerics::compare_prepared(expected, actual, v_key_slots(plan));

  const numerics::EmulatorResult emulated =
      numerics::emulate(trial.q().view(), trial.k().view(), trial.v().view(), settings.layout, options, settings.layout);
  nlohmann::json result;
  result["plan"] = {{"attention_kernel", plan.attention->name}, {"attention_config", config_id(plan.attention_config)},
                    {"prepare_kernel", plan.prepare->name}, {"prepare_config", config_id(plan.prepare_config)}};
  result["plan"]["code_objects_from_dir"] = replaced;
  result["workspace"] = {{"bit_exact", !mismatch}, {"first_mismatch", mismatch ? mismatch->describe() : ""}};
  result["output"] = compare_output(out, emulated.out);
  const numerics::AccuracyMetrics vs_emulator =
      numerics::measure_accuracy(out.host_view(), numerics::to_doubles(emulated.out.host_view()));
  result["output"]["vs_emulator"] = vs_emulator.summary();
  result["output"]["max_abs_vs_emulator"] = vs_emulator.max_abs_error;
  // Non-finite outputs (a NaN input) must sit where the CPU emulator has them; the finite rest is
  // judged as any output is (tools/support/oracle_check.hpp thresholds).
  {
    const numerics::HostView& a = out.host_view();
    const numerics::HostView& e = emulated.out.host_view();
    std::vector<double> finite_actual, finite_expected;
    std::int64_t finiteness_differs = 0, non_finite = 0;
    for (std::int64_t b = 0; b < a.dims.batch; ++b)
      for (std::int64_t h = 0; h < a.dims.heads; ++h)
        for (std::int64_t n = 0; n < a.dims.tokens; ++n)
          for (std::int64_t d = 0; d < a.dims.head_dim; ++d) {
            const float x = a.get(b, h, n, d), y = e.get(b, h, n, d);
            if (std::isfinite(x) != std::isfinite(y)) ++finiteness_differs;
            if (!std::isfinite(y)) ++non_finite;
            if (std::isfinite(x) && std::isfinite(y)) {
              finite_actual.push_back(x);
              finite_expected.push_back(y);
            }
          }
    result["output"]["non_finite_in_emulator"] = non_finite;
    result["output"]["finiteness_differs"] = finiteness_differs;
    if (!finite_actual.empty()) {
      const numerics::AccuracyMetrics finite = numerics::measure_accuracy(finite_actual, finite_expected);
      result["output"]["finite_vs_emulator"] = finite.summary();
      result["output"]["finite_within_tolerance"] = finite.cosine >= tools::min_cosine_vs_emulator &&
                                                    finite.relative_l1 <= tools::max_rel_l1_vs_emulator;
    }
  }
  if (settings.lse) {
    double max_diff = 0;
    std::int64_t differing = 0;
    for (std::size_t i = 0; i < lse.size(); ++i) {
      if (std::memcmp(&lse[i], &emulated.lse[i], sizeof(float)) != 0) ++differing;
      if (std::isnan(lse[i]) && std::isnan(emulated.lse[i])) continue;
      const double d = std::abs(static_cast<double>(lse[i]) - emulated.lse[i]);
      max_diff = std::isnan(d) ? INFINITY : std::max(max_diff, d);
    }
    result["lse"] = {{"bit_exact", differing == 0}, {"differing", differing}, {"max_abs_vs_emulator", max_diff}};
  }
  // The check of the kernel: the CPU emulator's answer within the oracle's emulator thresholds (the
  // fp64 verdict below judges the algorithm's quality, the emulator's as much as the kernel's).
  std::vector<std::string> problems;
  if (vs_emulator.non_finite > 0 && settings.nan_query_tokens.empty())
    problems.push_back(fmt::format("{} non-finite outputs", vs_emulator.non_finite));
  if (settings.nan_query_tokens.empty() && !(vs_emulator.cosine >= tools::min_cosine_vs_emulator &&
                                             vs_emulator.relative_l1 <= tools::max_rel_l1_vs_emulator))
    problems.push_back(fmt::format("differs from the CPU emulator: {} (need cos >= {}, rel-L1 <= {})",
                                   vs_emulator.summary(), tools::min_cosine_vs_emulator, tools::max_rel_l1_vs_emulator));
  if (settings.lse && !(result["lse"]["max_abs_vs_emulator"].get<double>() <= tools::max_lse_error))
    problems.push_back(fmt::format("LSE differs from the CPU emulator's by {} (need <= {})",
                                   result["lse"]["max_abs_vs_emulator"].get<double>(), tools::max_lse_error));
  std::string failure;
  for (const std::string& problem : problems) failure += (failure.empty() ? "" : "; ") + problem;
  result["emulator_check"] = {{"passed", problems.empty()}, {"failure", failure}};
  const tools::OracleVerdict verdict =
      tools::judge_output({&trial.q(), &trial.k(), &trial.v(), settings.layout, options}, out, lse);
  result["oracle"] = {{"passed", verdict.passed}, {"failure", verdict.failure},
                      {"vs_reference", verdict.vs_reference.summary()}};
  return result;
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int sj_gfx12_emulation_run(const char* case_json,
                                                                              LaunchCallback launch, void* user,
                                                                              char* result, std::size_t result_size) {
  std::string text;
  int status = 0;
  try {
    text = run_case(nlohmann::json::parse(case_json), launch, user).dump();
  } catch (const std::exception& error) {
    text = nlohmann::json{{"error", error.what()}}.dump();
    status = 1;
  }
  if (text.size() + 1 > result_size) return 2;
  std::memcpy(result, text.c_str(), text.size() + 1);
  return status;
}
