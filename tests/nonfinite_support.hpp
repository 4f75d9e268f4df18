#pragma once
// The documented spread of a non-finite input (docs/NUMERICS.md, "Non-finite inputs"), shared by the
// emulator test (test_numerics_nonfinite.cpp) and the GPU test (test_gpu_nonfinite.cpp): outputs
// that torch SDPA's semantics (the fp64 reference) make non-finite must be non-finite, and any other
// non-finite output must lie inside the quantization block of the poisoned input.
#include <cmath>
#include <cstdint>
#include <string>

#include <fmt/format.h>

#include "numerics/host_tensor.hpp"
#include "dev/numerics/reference.hpp"

namespace sagejit::test {

enum class Poisoned { q, k, v };

struct NonFiniteInput {
  Poisoned where = Poisoned::q;
  float value = 0;
  std::int64_t head = 0, token = 0, channel = 0;  // in the poisoned tensor (a KV head for k and v)
  bool causal = false, smooth_k = true;

  std::string describe() const {
    static const char* names[] = {"q", "k", "v"};
    return fmt::format("{}={} at head {} token {} channel {}, causal {}, smooth_k {}", names[static_cast<int>(where)],
                       value, head, token, channel, causal, smooth_k);
  }

  // May output (query head hq, row i, channel d) be non-finite where the reference is finite?
  bool spread_allowed(std::int64_t hq, std::int64_t gqa_ratio, std::int64_t i, std::int64_t d) const {
    switch (where) {
      case Poisoned::q: return hq == head && i / 32 == token / 32;
      case Poisoned::k: return hq / gqa_ratio == head && (smooth_k || !causal || i >= token / 32 * 32);
      case Poisoned::v: return hq / gqa_ratio == head && d == channel;
    }
    return false;
  }
};

struct NonFiniteCount {
  int reference = 0;  // non-finite in the fp64 reference
  int missed = 0;     // non-finite in the reference, finite in the output checked
  int too_far = 0;    // non-finite in the output checked, finite in the reference, outside the spread
  int output = 0;     // non-finite in the output checked
};

// `out` is [B=1, Hq, Nq, D] (any layout); `reference` the fp64 reference of the same inputs.
inline NonFiniteCount count_non_finite(const NonFiniteInput& input, const numerics::HostView& out,
                                       const numerics::ReferenceResult& reference, std::int64_t gqa_ratio) {
  NonFiniteCount count;
  const numerics::Dims& dims = out.dims;
  std::size_t index = 0;
  for (std::int64_t h = 0; h < dims.heads; ++h)
    for (std::int64_t i = 0; i < dims.tokens; ++i)
      for (std::int64_t d = 0; d < dims.head_dim; ++d, ++index) {
        const bool reference_bad = !std::isfinite(reference.out[index]);
        const bool bad = !std::isfinite(out.get(0, h, i, d));
        count.reference += reference_bad;
        count.output += bad;
        if (reference_bad && !bad) ++count.missed;
        if (bad && !reference_bad && !input.spread_allowed(h, gqa_ratio, i, d)) ++count.too_far;
      }
  return count;
}

}  // namespace sagejit::test
