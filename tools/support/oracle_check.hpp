#pragma once
// Judging a GPU attention output against the CPU oracles (docs/NUMERICS.md, "Oracles"): the emulator of the
// quantized algorithm (the GPU must match it within accumulation-order noise) and the fp64 exact
// attention (quality), plus the LSE output when present.
#include <string>
#include <vector>

#include "numerics/emulator.hpp"
#include "numerics/host_tensor.hpp"
#include "dev/numerics/metrics.hpp"

namespace sagejit::tools {

// Thresholds. Against the emulator: same quantizers and the same rounding of p, so only fp32
// accumulation order and exp2 implementations differ. Against fp64: SageAttention's own kernels
// measure cos 0.9992 (fp8 PV) to 0.9999 (fp16 PV) on random normal inputs (docs/NUMERICS.md, "Oracles").
inline constexpr double min_cosine_vs_emulator = 0.9999;
inline constexpr double max_rel_l1_vs_emulator = 0.01;
inline constexpr double min_cosine_vs_reference = 0.998;  // a wrong kernel is far below; the emulator check is the tight one
// LSE, absolute, natural log units: the GPU's within this of the emulator's (the same quantized
// scores), and within this of fp64's beyond the emulator's own distance from fp64 (int8 scores move
// the LSE by more than any fixed bar on large or peaked scores: 0.0235 at 1x2x300x300 causal bf16).
inline constexpr double max_lse_error = 0.02;

struct OracleVerdict {
  bool passed = false;
  numerics::AccuracyMetrics vs_emulator;
  numerics::AccuracyMetrics vs_reference;
  double lse_error_vs_emulator = 0;   // max abs; 0 when no LSE
  double lse_error_vs_reference = 0;  // max abs; 0 when no LSE
  double emulator_lse_error_vs_reference = 0;  // the algorithm's own (max abs), what the fp64 bar adds to
  std::string failure;                // why not passed
};

struct OracleInputs {
  const numerics::HostTensor* q = nullptr;
  const numerics::HostTensor* k = nullptr;
  const numerics::HostTensor* v = nullptr;
  Layout layout = Layout::HND;
  numerics::EmulatorOptions options;
};

// `out` (and `lse` when options.return_lse) from the GPU; runs both oracles on the CPU.
OracleVerdict judge_output(const OracleInputs& inputs, const numerics::HostTensor& out, const std::vector<float>& lse);

}  // namespace sagejit::tools
