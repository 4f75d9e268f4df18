// Kernel argument structs shared by host code and every kernel source (NVRTC, hipRTC, clang
// -nogpuinc, and the host C++ compiler). Plain C layout, fixed-width types only, no includes: the
// kernel prelude defines the integer types on the device side. Workspace layouts are those of
// docs/NUMERICS.md: rows and per-channel sections hold SJ_HEAD_DIM channels (the kernel head dim),
// of which the call's `head_dim` are real and the rest zero padding. The block (32), chunk (64) and
// padding (128) sizes in the comments below are those of common/constants.h.
#pragma once

// Strides are in elements of the tensor's own dtype, ordered (batch, head, token); the channel
// stride is 1 (checked on the host).
struct SjPrepareParams {
  const void* q;  // bf16/fp16 input
  const void* k;
  const void* v;
  long long q_stride_b, q_stride_h, q_stride_n;
  long long k_stride_b, k_stride_h, k_stride_n;
  long long v_stride_b, v_stride_h, v_stride_n;
  int batch, heads_q, heads_kv, seq_q, seq_kv, seq_q_pad, seq_kv_pad;
  int head_dim;         // channels of q, k, v (a multiple of 8, <= SJ_HEAD_DIM); workspace channels past it are written 0
  float q_mul;          // float(sm_scale * log2(e))
  int smooth_k;         // 0 | 1
  int want_lse_delta;   // 0 | 1: write lse_delta (only meaningful with smooth_k)
  int finalize_in_quantize;  // 0 | 1: the quantize kernel computes the K mean and V scales itself (no finalize launch)
  // Workspace outputs.
  signed char* q8;       // [B, Hq, Nq_pad, D]
  float* q_scale;        // [B, Hq, Nq_pad / 32]
  signed char* k8;       // [B, Hk, Nk_pad, D]
  float* k_scale;        // [B, Hk, Nk_pad / 32]
  float* k_mean;         // [B, Hk, D]
  double* k_mean_partial;  // [B, Hk, ceil(Nk / 64), D] scratch for the fixed-order fp64 mean
  float* v_amax_partial;   // [B, Hk, ceil(Nk / 64), D] scratch: per-chunk max |v| (fp8 PV only)
  void* v_quant;         // fp8 PV: uint8 e4m3 [B, Hk, D, Nk_pad]; fp16 PV: fp16 [B, Hk, D, Nk_pad]
  float* v_scale;        // [B, Hk, D]
  float* lse_delta;      // [B, Hq, Nq] or null
};

struct SjAttentionParams {
  const signed char* q8;
  const float* q_scale;
  const signed char* k8;
  const float* k_scale;
  const void* v_quant;
  const float* v_scale;
  const float* lse_delta;  // null when absent
  void* out;               // bf16/fp16, strides below
  long long o_stride_b, o_stride_h, o_stride_n;
  float* lse;              // fp32 [B, Hq, Nq] contiguous, or null
  int batch, heads_q, heads_kv, seq_q, seq_kv, seq_q_pad, seq_kv_pad;
  int head_dim;            // columns of out written (a multiple of 8, <= SJ_HEAD_DIM); the rest is padding
  int gqa_ratio;           // heads_q / heads_kv
  int causal;              // 0 | 1
};

// The key mask (common/key_mask.h), a second kernel argument of the prepare and attention kernels
// compiled with SJ_KEY_MASK 1 (after the descriptor's own extra argument, if any); kernels without
// a mask never see it, so their code is what it was before masks existed.
struct SjKeyMask {
  // The caller's [B, H or 1, Nk] view: element (b, h, n) at b * stride_b + h * stride_h + n * stride_n.
  const void* mask;
  long long stride_b, stride_h, stride_n;  // elements of the mask's own type (0: the same for every b / h)
  int kind;                 // SJ_KEY_MASK_BOOL | _F32 | _BF16 | _F16
  int heads;                // 1: one mask row per batch item; H (= Hq = Hk): one per batch item and head
  float* key_bias;          // workspace [mask rows, Nk_pad]: log2-domain bias, -inf for masked keys and keys >= Nk
  int* valid_keys_partial;  // workspace [mask rows, ceil(Nk / 64)]: valid keys each K-mean chunk summed (smoothing), or null
  // A packed varlen call (docs/NUMERICS.md "Varlen"): batch item b is rows cu[b] .. cu[b + 1] - 1 of the
  // packed q (cu_seqlens_q) and k, v (cu_seqlens_k), whose batch strides are 0; seq_q and seq_kv of the
  // params are the longest sequences. Null for a dense call (then kind names the caller's mask; a
  // varlen call has kind 0: its only masked keys are those past each sequence's length).
  const int* cu_seqlens_q;
  const int* cu_seqlens_k;
  int total_q, total_k;     // rows of the packed tensors (each sequence is clamped to them)
};
