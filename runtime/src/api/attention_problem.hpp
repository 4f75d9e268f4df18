#pragma once
// One public-API call, validated and normalised into the plan's AttentionCall: sizes as
// (B, H, N, D) and strides as (batch, head, token) whatever the caller's layout.
#include "plan/attention_runner.hpp"
#include "sagejit/sagejit.hpp"

namespace sagejit {

struct AttentionProblem {
  AttentionCall call;  // configs left empty (chosen per device by plan_attention)
  int device = 0;      // resolved ordinal
};

// Checks everything that needs no GPU, in the order a caller would fix things: null pointers, layout,
// dtypes, sizes, strides, head_dim, shape agreement, output aliasing, GQA ratio, sm_scale, devices,
// kernel index limits. Throws Error(invalid_argument | unsupported) naming the argument and the
// accepted values.
AttentionProblem validate_attention(const TensorView& q, const TensorView& k, const TensorView& v,
                                    const TensorView& out, const AttentionOptions& options);

// The same without an output tensor (for workspace_size()).
AttentionProblem validate_attention_inputs(const TensorView& q, const TensorView& k, const TensorView& v,
                                           const AttentionOptions& options);

}  // namespace sagejit
