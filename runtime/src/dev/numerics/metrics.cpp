#include "dev/numerics/metrics.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.hpp"

namespace sagejit::numerics {

std::string AccuracyMetrics::summary() const {
  return fmt::format("cos {:.6f} rel-L1 {:.5f} rmse {:.5g} max-abs {:.5g} non-finite {} (n={})", cosine, relative_l1,
                     rmse, max_abs_error, non_finite, count);
}

namespace {

template <typename T>
AccuracyMetrics measure(std::span<const T> actual, std::span<const double> reference) {
  if (actual.size() != reference.size() || actual.empty())
    fail(ErrorCode::invalid_argument, "measure_accuracy: {} values against {} reference values (need equal, > 0)",
         actual.size(), reference.size());
  double dot = 0.0, norm_a = 0.0, norm_r = 0.0, abs_error = 0.0, abs_ref = 0.0, squared_error = 0.0, max_error = 0.0;
  AccuracyMetrics metrics;
  for (std::size_t i = 0; i < actual.size(); ++i) {
    const double a = static_cast<double>(actual[i]), r = reference[i], error = std::abs(a - r);
    if (!std::isfinite(a)) ++metrics.non_finite;
    dot += a * r;
    norm_a += a * a;
    norm_r += r * r;
    abs_error += error;
    abs_ref += std::abs(r);
    squared_error += error * error;
    // std::max would drop a NaN error; keep it visible.
    max_error = (error > max_error || std::isnan(error)) ? error : max_error;
  }
  metrics.count = static_cast<std::int64_t>(actual.size());
  if (norm_a == 0.0 && norm_r == 0.0)
    metrics.cosine = 1.0;  // two zero vectors agree
  else
    metrics.cosine = (norm_a == 0.0 || norm_r == 0.0) ? 0.0 : dot / std::sqrt(norm_a * norm_r);
  metrics.relative_l1 = abs_ref > 0.0 ? abs_error / abs_ref
                                      : (abs_error == 0.0 ? 0.0 : std::numeric_limits<double>::infinity());
  metrics.rmse = std::sqrt(squared_error / static_cast<double>(actual.size()));
  metrics.max_abs_error = max_error;
  return metrics;
}

}  // namespace

AccuracyMetrics measure_accuracy(std::span<const double> actual, std::span<const double> reference) {
  return measure(actual, reference);
}

AccuracyMetrics measure_accuracy(std::span<const float> actual, std::span<const double> reference) {
  return measure(actual, reference);
}

AccuracyMetrics measure_accuracy(const HostView& actual, std::span<const double> reference) {
  const std::vector<double> values = to_doubles(actual);
  return measure(std::span<const double>(values), reference);
}

}  // namespace sagejit::numerics
