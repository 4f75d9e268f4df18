#pragma once
// Exact attention in fp64: softmax(q k^T sm_scale) v with causal (top-left) masking and GQA, and its
// natural-log LSE. The quality oracle (docs/NUMERICS.md, "Oracles"): inputs are widened exactly, everything
// else is fp64.
#include <cmath>
#include <limits>
#include <vector>

#include "numerics/emulator.hpp"
#include "numerics/host_tensor.hpp"
#include "sagejit/types.hpp"

namespace sagejit::numerics {

struct ReferenceResult {
  Dims dims;                // of the output: [B, Hq, Nq, D]
  std::vector<double> out;  // dense [B, Hq, Nq, D]
  std::vector<double> lse;  // [B, Hq, Nq]: log(sum_j exp(q.k_j * sm_scale))
};

// q: [B, Hq, Nq, D], k/v: [B, Hk, Nk, D] in `layout` (any strides, bf16/fp16), Hq % Hk == 0.
// sm_scale NaN selects default_sm_scale(D) (the emulator's default, as an fp32 value). A key mask
// (torch SDPA's attn_mask of shape [B, 1, 1, Nk]): a boolean one drops the keys it marks false, an
// additive one adds double(bias) to the scaled scores (a -inf bias drops the key); a row left with
// no key gives 0 and an LSE of -inf (torch's math SDPA).
ReferenceResult reference_attention(const TensorView& q, const TensorView& k, const TensorView& v, Layout layout,
                                    bool causal, float sm_scale = std::numeric_limits<float>::quiet_NaN(),
                                    const KeyMaskView& key_mask = {});

}  // namespace sagejit::numerics
