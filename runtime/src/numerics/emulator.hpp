#pragma once
// CPU emulator of the quantized SageAttention algorithm, step by step as docs/NUMERICS.md fixes it.
// Stage 1 (prepare) yields the workspaces in the exact layouts a GPU prepare writes, so those can be
// compared bit for bit; stage 2 (attention) predicts the GPU output within accumulation-order noise
// (exact int32 QK^T, same rounding of p, same two-level fp32 PV accumulation).
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "numerics/host_tensor.hpp"
#include "numerics/key_mask_view.hpp"
#include "sagejit/types.hpp"

namespace sagejit::numerics {

struct EmulatorOptions {
  bool causal = false;
  bool smooth_k = true;
  bool return_lse = false;
  float sm_scale = std::numeric_limits<float>::quiet_NaN();  // NaN: default_sm_scale(head_dim)
  int block_n = 64;       // key tile of the attention kernel (32 or 64): rounding of p depends on it
  bool pv_fp16 = false;   // fp16 PV (NVIDIA config family) instead of fp8 PV
  // Channels of the workspace rows: the kernel head dim a plan runs the call at (its zero-padded
  // head dim, plan/attention_plan.hpp kernel_head_dim_for; emulator_options_for sets it). 0: the
  // inputs' head dim (no padding). Channels past the head dim are 0 in every workspace (v_scale 0
  // for fp8 PV, 1 for fp16 PV, as for an all-zero channel) and out holds only the head dim's columns.
  std::int64_t head_dim_pad = 0;
  bool pv_into_output = false;  // fp8 PV: one-level, into the rescaled o (gfx12), not per tile
  // docs/NUMERICS.md "Fused scores" (gfx12): the running state is the shifted maximum and each p is
  // exp2 of one fma from the integer dot product (common/online_softmax.h, sj_fused_arg).
  bool fused_scores = false;
  // fp8 PV: l sums the quantized p (e4m3(p), the weights the PV product uses), not the fp32 p (gfx12).
  bool sum_quantized_p = false;
  KeyMaskView key_mask;         // per (batch item, key), host memory; none by default
};

// Default softmax scale: float(1 / sqrt(double(head_dim))), as Python's head_dim**-0.5 passed as fp32.
float default_sm_scale(std::int64_t head_dim);
// The factor folded into Q and the padded sequence length of every workspace are those of the
// kernels: sj_q_multiplier and sj_padded_length (kernel_src/common/constants.h).

// The prepare stage's workspaces (docs/NUMERICS.md layouts; padded rows/keys/blocks are 0).
struct PreparedTensors {
  std::int64_t batch = 0, heads_q = 0, heads_kv = 0, seq_q = 0, seq_kv = 0, seq_q_pad = 0, seq_kv_pad = 0,
               head_dim = 0,      // channels of q, k, v and out
               head_dim_pad = 0;  // channels of the workspace rows (D below): head_dim, then zeros
  DType dtype = DType::bf16;  // of the inputs, and of the output
  bool smooth_k = true;
  bool pv_fp16 = false;
  float sm_scale = 0.0f;  // resolved (never NaN)
  float q_mul = 0.0f;

  // D = head_dim_pad in the layouts below.
  std::vector<std::int8_t> q8;       // [B, Hq, Nq_pad, D]
  std::vector<float> q_scale;        // [B, Hq, Nq_pad / 32]
  std::vector<std::int8_t> k8;       // [B, Hk, Nk_pad, D]
  std::vector<float> k_scale;        // [B, Hk, Nk_pad / 32]
  std::vector<float> k_mean;         // [B, Hk, D] (zeros without smoothing)
  std::vector<std::uint8_t> v8;      // fp8 PV: E4M3 [B, Hk, D, Nk_pad]; empty for fp16 PV
  std::vector<std::uint16_t> v16;    // fp16 PV: fp16 bits [B, Hk, D, Nk_pad]; empty for fp8 PV
  std::vector<float> v_scale;        // [B, Hk, D] (ones for fp16 PV)
  std::vector<float> lse_delta;      // [B, Hq, Nq] when return_lse && smooth_k, else empty
  std::vector<float> key_bias;       // [mask rows, Nk_pad] log2-domain key bias (-inf: masked) with a key mask, else empty
  int key_mask_heads = 1;            // rows: sj_key_mask_row(key_mask_heads, b, hk) (kernel_src/common/key_mask.h)

  std::int64_t gqa_ratio() const { return heads_q / heads_kv; }
};

// Stage 1. q: [B, Hq, Nq, D], k/v: [B, Hk, Nk, D] in `layout` (any strides), one dtype (bf16/fp16).
// Throws sagejit::Error for unsupported dtypes, mismatched shapes, Hq % Hk != 0, bad options.
PreparedTensors prepare(const TensorView& q, const TensorView& k, const TensorView& v, Layout layout,
                        const EmulatorOptions& options);

// Stage 2 into caller memory: `out` is [B, Hq, Nq, D] in `out_layout` with the inputs' dtype (any
// strides); `lse`, when not null, receives fp32 [B, Hq, Nq] (requires options.return_lse).
void attention_into(const PreparedTensors& prepared, const EmulatorOptions& options, const TensorView& out,
                    Layout out_layout, float* lse);

struct EmulatorResult {
  HostTensor out;          // [B, Hq, Nq, D], dense, in the requested layout
  std::vector<float> lse;  // [B, Hq, Nq] when options.return_lse, else empty
};

// Stage 2 into a new dense tensor.
EmulatorResult attention(const PreparedTensors& prepared, const EmulatorOptions& options,
                         Layout out_layout = Layout::HND);

// A packed varlen call (docs/NUMERICS.md "Varlen") as the kernels compute it: q, k, v and out NHD
// [1, total, H, D] with the sequences back to back, cu_seqlens_q / cu_seqlens_k host int32 arrays of
// batch + 1 values (clamped as the kernels clamp them), no key mask in `options`; `lse`, when not
// null, receives fp32 [Hq, total_q] (requires options.return_lse). Rows of out past every sequence
// are left as they are.
void varlen_attention_into(const TensorView& q, const TensorView& k, const TensorView& v, const TensorView& out,
                           const std::int32_t* cu_seqlens_q, const std::int32_t* cu_seqlens_k, std::int64_t batch,
                           std::int64_t max_seqlen_q, std::int64_t max_seqlen_k, EmulatorOptions options, float* lse);

// Both stages.
EmulatorResult emulate(const TensorView& q, const TensorView& k, const TensorView& v, Layout layout,
                       const EmulatorOptions& options, Layout out_layout = Layout::HND);

}  // namespace sagejit::numerics
