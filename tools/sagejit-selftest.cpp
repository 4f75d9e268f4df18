// sagejit-selftest: what an owner of a new GPU runs first. In order:
//  1. a matrix-instruction layout probe (RDNA4: the gfx12 WMMA iu8/fp8 lane layouts the kernels assume;
//     NVIDIA: the mma.sync fragments), since every later result depends on it; on RDNA4 also the fp8
//     WMMA's effective accumulator precision (tools/support/fp8_accumulation_probe.hpp);
//  2. over the supported feature matrix (dtype, head_dim, causal, GQA, NHD, odd lengths, LSE, K with
//     channel offsets): the prepare stage bit for bit against the CPU emulator, and the attention
//     output against the emulator and the fp64 reference;
//  3. a short timing of one larger call.
// Prints a verdict per feature and exits 0 only if everything passed (1 on a failure, 3 without a GPU).
#include <algorithm>
#include <chrono>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "arch/mma_sm80.h"
#include "cache/code_cache.hpp"
#include "support/attention_trial.hpp"
#include "support/cli.hpp"
#include "support/fp8_accumulation_probe.hpp"
#include "support/mma_probe.hpp"
#include "support/oracle_check.hpp"
#include "support/progress.hpp"
#include "support/summary_table.hpp"
#include "compiler/compiler.hpp"
#include "core/build_report.hpp"
#include "core/error.hpp"
#include "jit/jit.hpp"
#include "jit/kernel_config.hpp"
#include "jit/kernel_desc.hpp"
#include "kernels/registry.hpp"
#include "dev/attention_harness.hpp"
#include "dev/numerics/workspace_compare.hpp"

using namespace sagejit;
using namespace sagejit::tools;

namespace {

struct Options {
  bool quick = false;
  int device = 0;
  unsigned seed = 20261130;
  bool skip_timing = false;
};

struct Feature {
  std::string name;
  AttentionShape shape;
  TrialSettings settings;
};

AttentionShape shape(int batch, int heads, int seq_q, int seq_kv, int head_dim, DType dtype = DType::bf16,
                     bool causal = false, int gqa = 1) {
  return {.batch = batch, .heads_q = heads, .seq_q = seq_q, .seq_kv = seq_kv, .head_dim = head_dim, .gqa_ratio = gqa,
          .causal = causal, .dtype = dtype};
}

// The feature matrix. --quick keeps one small problem per feature; the full run adds sizes and the
// cross product of dtype x head_dim x causal.
std::vector<Feature> feature_matrix(bool quick, unsigned seed) {
  const auto settings = [seed](unsigned salt, Layout layout = Layout::HND, bool lse = false,
                               InputKind inputs = InputKind::normal) {
    TrialSettings s;
    s.layout = layout;
    s.lse = lse;
    s.inputs = inputs;
    s.seed = seed + salt;
    return s;
  };
  std::vector<Feature> features{
      {"bf16 d128", shape(1, 2, 256, 256, 128), settings(1)},
      {"fp16 d128", shape(1, 2, 256, 256, 128, DType::fp16), settings(2)},
      {"bf16 d64", shape(1, 2, 256, 256, 64), settings(3)},
      {"fp16 d64", shape(1, 2, 256, 256, 64, DType::fp16), settings(4)},
      {"causal", shape(1, 2, 256, 256, 128, DType::bf16, true), settings(5)},
      {"GQA 4:1", shape(1, 8, 192, 192, 128, DType::bf16, false, 4), settings(6)},
      {"NHD layout", shape(2, 3, 160, 160, 128), settings(7, Layout::NHD)},
      {"odd lengths (Nq 77, Nk 333)", shape(1, 2, 77, 333, 128), settings(8)},
      {"odd lengths, causal (Nq 333, Nk 77)", shape(1, 2, 333, 77, 64, DType::fp16, true), settings(9)},
      {"LSE output", shape(1, 2, 200, 300, 128), settings(10, Layout::HND, true)},
      {"K with channel offsets (smoothing)", shape(1, 2, 256, 256, 128), settings(11, Layout::HND, false, InputKind::channel_offsets)},
      // Head dims run zero-padded to the next kernel head dim (SD 1.5's 40, Lumina 2's 96).
      {"padded d40", shape(1, 2, 256, 256, 40), settings(12)},
      {"padded d96, fp16 causal NHD LSE", shape(1, 2, 200, 300, 96, DType::fp16, true), settings(13, Layout::NHD, true)},
  };
  if (!quick) {
    unsigned salt = 100;
    for (DType dtype : kernel_dtypes)
      for (int head_dim : kernel_head_dims)
        for (bool causal : {false, true})
          features.push_back({fmt::format("{} d{}{} 1x4x1024", to_string(dtype), head_dim,
                                          causal ? " causal" : ""),
                              shape(1, 4, 1024, 1024, head_dim, dtype, causal), settings(salt++)});
    features.push_back({"GQA 8:1 NHD LSE causal", shape(2, 16, 515, 515, 128, DType::bf16, true, 8),
                        settings(salt++, Layout::NHD, true)});
    features.push_back({"LSE, channel offsets, fp16 d64", shape(1, 4, 300, 700, 64, DType::fp16),
                        settings(salt++, Layout::HND, true, InputKind::channel_offsets)});
  }
  return features;
}

struct FeatureResult {
  std::string name;
  std::string shape;
  std::string prepare;  // "bit-exact" or the first mismatch
  bool prepare_ok = false;
  OracleVerdict attention;
  std::string error;  // an exception (compile error, launch failure, ...)
};

FeatureResult run_feature(const CallDevice& device, const Feature& feature) {
  FeatureResult result;
  result.name = feature.name;
  result.shape = fmt::format("{}{}{}", feature.shape.text(), feature.settings.layout == Layout::NHD ? ",nhd" : "",
                             feature.settings.lse ? ",lse" : "");
  try {
    AttentionTrial trial(device, feature.shape, feature.settings);
    const AttentionPlan choice = trial.choice();
    trial.enqueue(choice, 0, nullptr);
    const numerics::HostTensor out = trial.download_output();
    const std::vector<float> lse = trial.download_lse();

    const numerics::EmulatorOptions options = trial.emulator_options(choice);
    const numerics::PreparedTensors expected =
        numerics::prepare(trial.q().view(), trial.k().view(), trial.v().view(), feature.settings.layout, options);
    const numerics::PreparedTensors actual = trial.download_prepared(choice);
    const auto mismatch = numerics::compare_prepared(expected, actual, v_key_slots(choice));
    result.prepare_ok = !mismatch;
    result.prepare = mismatch ? mismatch->describe() : "bit-exact";

    result.attention = judge_output({&trial.q(), &trial.k(), &trial.v(), feature.settings.layout, options}, out, lse);
  } catch (const std::exception& error) {
    result.error = error.what();
  }
  return result;
}

// Median time of one call (prepare + attention) with the tables' configs.
struct Timing {
  AttentionShape shape;
  double median_us = 0;
  double tops = 0;
  std::string config;
};

Timing time_call(const CallDevice& device, const AttentionShape& timed, int reps) {
  TrialSettings settings;
  settings.input_sets = 2;
  AttentionTrial trial(device, timed, settings);
  const AttentionPlan choice = trial.choice();
  Device& backend = *device.backend;
  const int ordinal = device.info.ordinal;
  for (int i = 0; i < 3; ++i) trial.enqueue(choice, i, nullptr);  // warm-up (and first-call JIT)
  backend.synchronize(ordinal, nullptr);
  void* start = backend.create_event(ordinal);
  void* stop = backend.create_event(ordinal);
  std::vector<double> times;
  for (int i = 0; i < reps; ++i) {
    backend.record_event(ordinal, start, nullptr);
    trial.enqueue(choice, i, nullptr);
    backend.record_event(ordinal, stop, nullptr);
    backend.synchronize(ordinal, nullptr);
    times.push_back(backend.elapsed_ms(ordinal, start, stop) * 1000.0);
  }
  backend.destroy_event(ordinal, start);
  backend.destroy_event(ordinal, stop);
  std::sort(times.begin(), times.end());
  Timing timing;
  timing.shape = timed;
  timing.median_us = times[times.size() / 2];
  timing.tops = timed.operations() / (timing.median_us * 1e-6) / 1e12;
  timing.config = config_id(choice.attention_config);
  return timing;
}

int run(const Options& options) {
  const CallDevice device = require_gpu(options.device);
  const std::string compiler_name = [&] {
    try {
      return device_compiler_choice(*device.backend, device.info.ordinal).compiler->identity();
    } catch (const Error& error) {
      return fmt::format("unavailable ({})", error.what());
    }
  }();
  fmt::print("sagejit-selftest {}: device {} \"{}\" ({}), {}, compiler {}\n", build_report().version,
             device.info.ordinal, device.info.name, device.info.full_target, device.backend->runtime_version(),
             compiler_name);
  bool all_passed = true;
  SummaryTable verdicts({{"check"}, {"problem"}, {"verdict"}, {"detail"}});

  // 1. Layout probe, before anything else. An arch family without a probe kernel (kernels/probe_desc.cpp)
  // says so: its kernels are still checked against the emulator below, which is what decides.
  if (!family_supports("probe", device.info.target)) {
    verdicts.add_row({"layout probe", device.info.target, "NOT RUN",
                      "no matrix-layout probe kernel for this arch family (kernels/probe_desc.cpp)"});
  } else {
    try {
      for (const ProbeCheck& check : run_mma_probe(*device.backend, device.info.ordinal, code_cache(), options.seed)) {
        all_passed &= check.passed;
        verdicts.add_row({"layout probe", check.instruction, check.passed ? "PASS" : "FAIL", check.detail});
      }
    } catch (const std::exception& error) {
      all_passed = false;
      verdicts.add_row({"layout probe", device.info.target, "FAIL", error.what()});
    }
  }

  // 1b. gfx12: the fp8 WMMA's effective accumulator precision, which the one-level PV accumulation
  // of the RDNA4 kernel (pv_into_output) relies on being fp32's (no published figure says so).
  std::string accumulation_line;
  // Where the gfx12 probe builds: it carries the accumulation entry (sj_probe_gfx12_fp8_accumulation).
  if (kernel_supports(kernel_by_name("probe_gfx12"), device.info.target)) {
    try {
      const Fp8AccumulationPrecision precision =
          measure_fp8_accumulation(*device.backend, device.info.ordinal, code_cache());
      all_passed &= precision.full_fp32();
      accumulation_line = "fp8 WMMA accumulation: " + precision.text();
      verdicts.add_row({"fp8 accumulation", "wmma f32_16x16x16_fp8_fp8", precision.full_fp32() ? "PASS" : "FAIL",
                        precision.full_fp32() ? precision.text()
                                              : precision.text() + " | the kernel accumulates PV into O in the WMMA "
                                                                   "(pv_into_output), exact only with fp32's 24 bits"});
    } catch (const std::exception& error) {
      all_passed = false;
      verdicts.add_row({"fp8 accumulation", device.info.target, "FAIL", error.what()});
    }
  }

  // 2. Prepare bit-exactness and attention accuracy over the feature matrix.
  const std::vector<Feature> features = feature_matrix(options.quick, options.seed);
  Progress progress("selftest", features.size(), stderr_is_terminal());
  for (const Feature& feature : features) {
    const FeatureResult result = run_feature(device, feature);
    if (!result.error.empty()) {
      all_passed = false;
      verdicts.add_row({result.name, result.shape, "FAIL", result.error.substr(0, result.error.find('\n'))});
      progress.item_done(fmt::format("{}: FAIL ({})", result.name, result.error), true);
      continue;
    }
    const bool passed = result.prepare_ok && result.attention.passed;
    all_passed &= passed;
    std::string detail = fmt::format("prepare {}; vs emulator cos {:.6f}; vs fp64 cos {:.5f} rel-L1 {:.4f}",
                                     result.prepare_ok ? "bit-exact" : "MISMATCH", result.attention.vs_emulator.cosine,
                                     result.attention.vs_reference.cosine, result.attention.vs_reference.relative_l1);
    if (feature.settings.lse) detail += fmt::format("; LSE max err {:.2g}", result.attention.lse_error_vs_reference);
    if (!result.prepare_ok) detail += " | " + result.prepare;
    if (!result.attention.passed) detail += " | " + result.attention.failure;
    verdicts.add_row({result.name, result.shape, passed ? "PASS" : "FAIL", detail});
    progress.item_done(fmt::format("{}: {}", result.name, passed ? "PASS" : "FAIL"), !passed);
  }
  progress.finish();

  // 3. A short timing (no threshold: it reports, it does not judge).
  std::string timing_line;
  if (!options.skip_timing) {
    const AttentionShape timed = options.quick ? shape(1, 8, 2048, 2048, 128) : shape(1, 24, 4608, 4608, 128);
    try {
      const Timing timing = time_call(device, timed, options.quick ? 10 : 30);
      timing_line = fmt::format("timing {}: {:.1f} us per call (prepare + attention), {:.1f} TOPS, config {}",
                                timing.shape.text(), timing.median_us, timing.tops, timing.config);
    } catch (const std::exception& error) {
      all_passed = false;
      verdicts.add_row({"timing", timed.text(), "FAIL", error.what()});
    }
  }

  fmt::print("\n");
  verdicts.print();
  if (!accumulation_line.empty()) fmt::print("{}\n", accumulation_line);
  if (!timing_line.empty()) fmt::print("{}\n", timing_line);
  fmt::print("\nverdict: {}\n", all_passed ? "PASS - sagejit works on this GPU" : "FAIL - see the rows marked FAIL");
  return all_passed ? exit_ok : exit_failed;
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  CLI::App app{"Check that sagejit works on this GPU: matrix-instruction layout probe, prepare bit-exactness and "
               "attention accuracy against the CPU oracles, a short timing. Exit 0: all passed; 1: a check failed; "
               "3: no GPU.",
               "sagejit-selftest"};
  app.set_version_flag("--version", tool_version_string("sagejit-selftest"));
  app.add_flag("--quick", options.quick, "One small problem per feature (about a minute)");
  app.add_option("--device", options.device, "Device ordinal (default 0)")->check(CLI::NonNegativeNumber);
  app.add_option("--seed", options.seed, "Seed of the random inputs");
  app.add_flag("--no-timing", options.skip_timing, "Skip the timing");
  add_verbose_flag(app, "kernel choices and cache hits");
  return run_tool(app, argc, argv, [&] { return run(options); });
}
