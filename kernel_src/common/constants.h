// The constants of the quantized pipeline (docs/NUMERICS.md) and the sizes that follow from them,
// written once for every kernel source and the host code that must agree with the kernels: the
// workspace layout and index limits of the plan (plan/workspace_layout.cpp, plan/kernel_limits.cpp),
// the prepare descriptor's launch grid (kernels/prepare_desc.cpp), the runner's Q factor
// (plan/attention_runner.cpp) and the CPU emulator (numerics/). Compiles under NVRTC, hipRTC, clang
// -nogpuinc and the host C++ compiler (the prelude's SJ_HOST_DEVICE). The integer helpers are
// templates so that device code keeps its 32-bit arithmetic and the host computes in 64 bits.
#pragma once

#include "common/prelude.h"

#define SJ_QUANT_BLOCK 32    // rows of Q or K per int8 scale; keys per V group of the quantize kernel
#define SJ_SEQ_PAD 128       // every workspace holds a multiple of this many tokens (zero rows past the call's)
#define SJ_QUANT_TILE 128    // rows of Q or K, or keys of V, per quantize workgroup (divides SJ_SEQ_PAD)
#define SJ_K_MEAN_CHUNK 64   // tokens per fp64 partial sum of the K mean (fixed summation order)
// The K mean is taken over every SJ_K_MEAN_STRIDE-th key (keys 0, 8, 16, ... of each batch item;
// docs/NUMERICS.md "K mean"): softmax is blind to any vector subtracted from every key, so the mean
// only centres K for its int8 blocks, and a token-strided sample centres it as well (within 4% of the
// full mean's 1 - cos, bench/k_mean_sampling_accuracy.py) while the stats pass reads an eighth of K.
#define SJ_K_MEAN_STRIDE 8   // divides SJ_K_MEAN_CHUNK: every chunk starts at a sampled key
static_assert(SJ_K_MEAN_CHUNK % SJ_K_MEAN_STRIDE == 0, "every K-mean chunk starts at a sampled key");
#define SJ_P_OFFSET 8.807f   // log2-domain offset of the probabilities before the PV product
#define SJ_LOG2E 1.4426950408889634  // double; the Q factor is float(double(sm_scale) * SJ_LOG2E)

// value rounded up to a multiple of `multiple` (> 0).
template <typename Int>
SJ_HOST_DEVICE Int sj_round_up(Int value, Int multiple) {
  return (value + multiple - 1) / multiple * multiple;
}

// The padded token count of a workspace for `tokens` tokens (seq_q_pad, seq_kv_pad).
template <typename Int>
SJ_HOST_DEVICE Int sj_padded_length(Int tokens) {
  return sj_round_up<Int>(tokens, SJ_SEQ_PAD);
}

// The K-mean (and V amax) chunks of `seq_kv` keys: the stats kernel's grid x and the partials' rows.
template <typename Int>
SJ_HOST_DEVICE Int sj_k_mean_chunks(Int seq_kv) {
  return (seq_kv + SJ_K_MEAN_CHUNK - 1) / SJ_K_MEAN_CHUNK;
}

// How many of `seq_kv` keys the K mean samples (the divisor of an unmasked call's mean).
template <typename Int>
SJ_HOST_DEVICE Int sj_k_mean_samples(Int seq_kv) {
  return (seq_kv + SJ_K_MEAN_STRIDE - 1) / SJ_K_MEAN_STRIDE;
}

// Channels of K's mean and of V's scale per finalize workgroup (its grid z: head_dim / this).
#define SJ_FINALIZE_CHANNELS 32

// Key sequences of at most this many K-mean chunks (1024 keys) skip the finalize launch: each quantize
// workgroup sums its head's few partials itself (plan/attention_plan.hpp finalize_in_quantize), which
// costs the GPU less than the launch costs the host (~3.5 us each on an H200's host).
#define SJ_FINALIZE_IN_QUANTIZE_MAX_CHUNKS 16

// The 32-row blocks of one head's padded workspace rows for `tokens` tokens (one scale each).
template <typename Int>
SJ_HOST_DEVICE Int sj_row_blocks(Int tokens) {
  return sj_padded_length<Int>(tokens) / SJ_QUANT_BLOCK;
}

// The 32-row blocks of Q and K and 32-key groups of V of one batch entry (the quantize kernel's
// block indices, which must fit an int).
template <typename Int>
SJ_HOST_DEVICE Int sj_quantize_blocks(Int heads_q, Int seq_q, Int heads_kv, Int seq_kv) {
  return heads_q * sj_row_blocks<Int>(seq_q) + 2 * heads_kv * sj_row_blocks<Int>(seq_kv);
}

// The quantize tiles of one head's padded workspace rows (SJ_QUANT_TILE rows or keys each).
template <typename Int>
SJ_HOST_DEVICE Int sj_quantize_tiles(Int tokens) {
  return sj_padded_length<Int>(tokens) / SJ_QUANT_TILE;
}

// The quantize kernel's workgroups per batch entry (its grid x): one per tile of Q, of K and of V
// (sj_prepare_quantize decodes its index: each KV head's K and V tiles, the last head first, then Q).
template <typename Int>
SJ_HOST_DEVICE Int sj_quantize_workgroups(Int heads_q, Int seq_q, Int heads_kv, Int seq_kv) {
  return heads_q * sj_quantize_tiles<Int>(seq_q) + 2 * heads_kv * sj_quantize_tiles<Int>(seq_kv);
}

// The factor prepare folds into Q (docs/NUMERICS.md, Q step 1): float(double(sm_scale) * log2(e)),
// computed on the host and passed as SjPrepareParams::q_mul.
SJ_HOST_DEVICE float sj_q_multiplier(float sm_scale) { return (float)((double)sm_scale * SJ_LOG2E); }
