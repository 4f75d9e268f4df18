#pragma once
// Accuracy of an output against a reference (docs/NUMERICS.md, "Oracles"): cosine similarity, relative L1
// (sum|a - ref| / sum|ref|), RMSE, max abs error, and the number of non-finite values in the output.
// Non-finite outputs are not skipped: they propagate into the other figures (so a NaN can never
// pass a threshold) and are counted separately.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "numerics/host_tensor.hpp"

namespace sagejit::numerics {

struct AccuracyMetrics {
  double cosine = 0.0;
  double relative_l1 = 0.0;
  double rmse = 0.0;
  double max_abs_error = 0.0;
  std::int64_t non_finite = 0;  // in the output under test
  std::int64_t count = 0;       // elements compared

  // "cos 0.999312 rel-L1 0.03812 rmse 0.00721 max-abs 0.0625 non-finite 0 (n=65536)"
  std::string summary() const;
};

// Both spans in the same element order. Throws sagejit::Error if the sizes differ or are 0.
AccuracyMetrics measure_accuracy(std::span<const double> actual, std::span<const double> reference);
AccuracyMetrics measure_accuracy(std::span<const float> actual, std::span<const double> reference);
// A strided bf16/fp16 output against a dense [B, H, N, D] reference (e.g. ReferenceResult::out).
AccuracyMetrics measure_accuracy(const HostView& actual, std::span<const double> reference);

}  // namespace sagejit::numerics

template <>
struct fmt::formatter<sagejit::numerics::AccuracyMetrics> : fmt::formatter<std::string_view> {
  template <typename Context>
  auto format(const sagejit::numerics::AccuracyMetrics& metrics, Context& context) const {
    const std::string text = metrics.summary();
    return fmt::formatter<std::string_view>::format(std::string_view(text), context);
  }
};
