// The key mask of docs/NUMERICS.md ("Key masks"), written once for the prepare kernels, the attention
// kernels and the CPU emulator: a mask per (batch item, key), or per (batch item, head, key) when the
// heads of q and k are the same, boolean (nonzero = attend, torch SDPA's convention) or an additive
// bias (fp32, bf16 or fp16) in natural-log units, read from the caller's tensor at element offset
// b * stride_b + h * stride_h + n * stride_n. Prepare turns it into the log2-domain bias of each key
// (the workspace section key_bias, one row per sj_key_mask_row); a key whose bias is -inf is masked, and
// every stage treats a masked key like a key past Nk (outside the K mean, the K and V scales, the
// softmax). Kernels see the mask only when compiled with SJ_KEY_MASK 1; without it nothing here is used.
#pragma once

#include "common/constants.h"
#include "common/online_softmax.h"
#include "common/prelude.h"
#include "common/quant.h"

// SjKeyMask::kind: the element type of the caller's mask (the C ABI's sagejit_mask_type values).
#define SJ_KEY_MASK_BOOL 1  // 1 byte, nonzero = attend
#define SJ_KEY_MASK_F32 2   // additive fp32
#define SJ_KEY_MASK_BF16 3  // additive bf16
#define SJ_KEY_MASK_F16 4   // additive fp16

// The log2-domain bias of key n of batch item b: 0 or -inf for a boolean mask, float(bias) * log2(e)
// (one fp32 multiply by float(LOG2E)) for an additive one. A bias of -inf, or one so negative that
// the product overflows (|bias| > ~2.36e38, e.g. torch.finfo(torch.float32).min), masks the key.
SJ_HOST_DEVICE float sj_key_bias(const void* mask, int kind, sj_i64 offset) {
  if (kind == SJ_KEY_MASK_BOOL) return ((const sj_u8*)mask)[offset] != 0 ? 0.0f : sj_neg_inf();
  float bias;
  if (kind == SJ_KEY_MASK_F32)
    bias = ((const float*)mask)[offset];
  else
    bias = sj_from_dtype(((const sj_u16*)mask)[offset], kind == SJ_KEY_MASK_BF16 ? 0 : 1);
  const float log2e = (float)SJ_LOG2E;
#if defined(SJ_NVIDIA) && defined(__CUDA_ARCH__)
  return __fmul_rn(bias, log2e);
#else
  return bias * log2e;
#endif
}

// The element offset of key n of batch item b and head h in the caller's mask (stride_h 0: one mask for
// every head).
SJ_HOST_DEVICE sj_i64 sj_key_mask_offset(sj_i64 stride_b, sj_i64 stride_h, sj_i64 stride_n, sj_i64 b, sj_i64 h, sj_i64 n) {
  return b * stride_b + h * stride_h + n * stride_n;
}

// The mask row of batch item b and head h (a KV head; with a per-head mask it is also the query head,
// Hq = Hk): the row of key_bias and of the valid-key counts. heads 1: one row per batch item.
SJ_HOST_DEVICE sj_i64 sj_key_mask_row(int heads, int b, int h) { return heads > 1 ? (sj_i64)b * heads + h : b; }
// How many rows a call of `batch` items has (the workspace's key_bias and valid-key count rows).
SJ_HOST_DEVICE sj_i64 sj_key_mask_rows(int heads, sj_i64 batch) { return heads > 1 ? batch * heads : batch; }

// A key takes part (in the K mean, the scales and the softmax) unless its bias is -inf. NaN biases
// take part (and make the rows that see them NaN, as in SDPA).
SJ_HOST_DEVICE bool sj_key_bias_valid(float bias) { return bias != sj_neg_inf(); }

// Step 1 with a mask: the dequantized score plus the key's bias (one fp32 add). A masked key's K row
// is 0, so its score is 0 * scale + -inf = -inf unless its block's scale is non-finite (a non-finite
// input of another key of the block): then NaN, which spreads as docs/NUMERICS.md's non-finite table
// says for that block. The emulator leaves masked keys out before this (they are not visible).
SJ_HOST_DEVICE float sj_masked_score(float score, float bias) { return score + bias; }

// The fused form with a mask (gfx12, docs/NUMERICS.md "Key masks"): the biased score
// x = fma(float(dot), sq*sk, bias), one rounding (x of a masked key is -inf). The running state c is
// sj_shifted_round_up of the largest x less P_OFFSET (sj_masked_shifted_max), and p = exp2(x - c):
// x <= max x and c >= (max x) - P_OFFSET exactly, so x - c <= P_OFFSET holds exactly for any bias
// and score magnitude, as in the unmasked fused form (whose argument, one fma from the dot, has no
// room for a per-key bias without a rounding that the bound does not survive).
SJ_HOST_DEVICE float sj_masked_fused_score(float dot, float q_scale, float k_scale, float bias) {
  return sj_fma(dot, q_scale * k_scale, bias);
}
SJ_HOST_DEVICE float sj_masked_shifted_max(float x_max) { return x_max - SJ_P_OFFSET; }
// A row without a valid key yet has c = -inf: its x are -inf too, and x - 0 gives p = 0, not NaN.
SJ_HOST_DEVICE float sj_masked_fused_arg(float x, float c_new) { return x - (c_new == sj_neg_inf() ? 0.0f : c_new); }

// Step 8 with a mask: a row that saw no valid key (l == 0: every key it may see is masked) gives 0,
// as torch SDPA's math gives for a fully masked row; any other row is sj_output's (acc / l) * sv.
SJ_HOST_DEVICE float sj_masked_output(float acc, float l, float v_scale) {
  return l == 0.0f ? 0.0f : sj_output(acc, l, v_scale);
}

// Packed varlen calls (SjKeyMask::cu_seqlens_*): batch item b starts at row cu[b] of the packed tensor;
// a dense call (cu null) at row 0 of its own batch slice.
SJ_HOST_DEVICE int sj_seq_start(const int* cu, int b, int total) {
  if (cu == nullptr) return 0;
  const int start = cu[b];
  return start < 0 ? 0 : start > total ? total : start;
}
// Its length: cu[b + 1] - cu[b], clamped to the packed rows and to the call's longest sequence
// `max_len` (a dense call's length), so a malformed cu_seqlens can make a sequence's result wrong but
// never makes a kernel read or write outside the tensors.
SJ_HOST_DEVICE int sj_seq_length(const int* cu, int b, int max_len, int total) {
  if (cu == nullptr) return max_len;
  const int start = sj_seq_start(cu, b, total);
  int end = cu[b + 1];
  end = end < start ? start : end > total ? total : end;
  return end - start < max_len ? end - start : max_len;
}

// The LSE element of query row `row` of batch item b, head hq: [B, Hq, Nq] for a dense call,
// [Hq, total_q] (flash-attn's varlen layout) for a varlen one.
SJ_HOST_DEVICE sj_i64 sj_lse_row(const int* cu_q, int b, int hq, int heads_q, int seq_q, int total_q, int row) {
  if (cu_q == nullptr) return ((sj_i64)b * heads_q + hq) * seq_q + row;
  return (sj_i64)hq * total_q + sj_seq_start(cu_q, b, total_q) + row;
}

// The key step of one K-mean chunk's sum in a masked call, from how many of its sampled keys (every
// SJ_K_MEAN_STRIDE-th, the chunk's first included) are valid: the sampled keys when any of them is,
// else every key, so the chunk adds all its valid keys (docs/NUMERICS.md "Key masks"). A sparse mask
// can leave no sampled key valid; without this the mean would fall to 0 and K go unsmoothed. An
// all-true mask samples every chunk exactly as a call without a mask does, bit for bit.
SJ_HOST_DEVICE int sj_masked_k_mean_step(int sampled_valid_keys) {
  return sampled_valid_keys > 0 ? SJ_K_MEAN_STRIDE : 1;
}

// The K mean over the keys the chunks of a masked call summed (sj_masked_k_mean_step): sj_k_mean of
// their fp64 sum and count; 0 when no key is valid (nothing to subtract; no 0 / 0).
SJ_HOST_DEVICE float sj_masked_k_mean(double sum, int summed_keys) {
  return summed_keys == 0 ? 0.0f : sj_k_mean(sum, summed_keys);
}
