// The per-element math of the attention tile loop, shared by every attention kernel (sm80, gfx12)
// and by the CPU emulator, so all of them follow docs/NUMERICS.md with one implementation.
// Everything is SJ_HOST_DEVICE: the host tests and the emulator call the same functions.
#pragma once

#include "common/constants.h"
#include "common/prelude.h"
#include "common/quant.h"

#if defined(SJ_HOST)
#include <cmath>
#endif

SJ_HOST_DEVICE float sj_exp2(float x) {
#if defined(SJ_NVIDIA)
  return exp2f(x);  // ex2.approx under --use_fast_math; part of the allowed accumulation noise
#elif defined(SJ_AMD)
  return __builtin_amdgcn_exp2f(x);
#else
  return std::exp2(x);
#endif
}

SJ_HOST_DEVICE float sj_log2(float x) {
#if defined(SJ_NVIDIA)
  return log2f(x);
#elif defined(SJ_AMD)
  return __builtin_amdgcn_logf(x);
#else
  return std::log2(x);
#endif
}

SJ_HOST_DEVICE float sj_neg_inf() { return sj_bit_cast<float>(0xff800000u); }  // NVRTC has no __builtin_huge_valf

// Step 1: dequantised score in the log2 domain (sm_scale*log2e is folded into q's scale).
SJ_HOST_DEVICE float sj_score(int dot, float q_scale, float k_scale) { return (float)dot * (q_scale * k_scale); }

// Step 2 as a bound: the last key that query `query` sees. Keys past the end (seq_kv and on) are
// padding; causal is top-left aligned (query i sees keys 0..i), as PyTorch SDPA's is_causal.
SJ_HOST_DEVICE int sj_last_visible_key(int query, int seq_kv, int causal) {
  return causal && query < seq_kv - 1 ? query : seq_kv - 1;
}

// Step 2: is key `key` (>= 0) visible to query `query`?
SJ_HOST_DEVICE bool sj_key_visible(int query, int key, int seq_kv, int causal) {
  return key <= sj_last_visible_key(query, seq_kv, causal);
}

// Number of keys a block of queries [first_query, first_query + rows) must visit: all keys, or for
// causal only up to the last query's diagonal. Tiles past it are skipped entirely.
SJ_HOST_DEVICE int sj_keys_to_visit(int first_query, int rows, int seq_kv, int causal) {
  if (!causal) return seq_kv;
  const int last = first_query + rows;  // keys 0..last-1 can be visible
  return last < seq_kv ? last : seq_kv;
}

// Step 4: factor that rescales the running sums when the row max grows. m_old = -inf (nothing seen
// yet) gives 0, and equal maxima give exactly 1.
SJ_HOST_DEVICE float sj_rescale(float m_old, float m_new) {
  if (m_old == m_new) return 1.0f;
  if (m_old == sj_neg_inf()) return 0.0f;
  return sj_exp2(m_old - m_new);
}

// Step 5: unnormalised probability, offset so that p in (0, 448] fills the E4M3 range.
SJ_HOST_DEVICE float sj_prob(float score, float m_new) { return sj_exp2(score - m_new + SJ_P_OFFSET); }

// Step 8: final output element before conversion to the input dtype.
SJ_HOST_DEVICE float sj_output(float acc, float l, float v_scale) { return (acc / l) * v_scale; }
// Step 8 with the row's reciprocal of l hoisted out of its channels, for an l with sj_divisor_fast
// (every row that sees a key: its maximum alone adds 2^P_OFFSET): sj_output's value but for a
// subnormal quotient (common/quant.h sj_div_rn_by), which the attention stage's noise allows.
SJ_HOST_DEVICE float sj_output_by(float acc, const SjDivisor& l, float v_scale) {
  return sj_div_rn_by(acc, l) * v_scale;
}

// Step 9: natural-log LSE of q.k^T*sm_scale. delta undoes K smoothing's per-row shift (0 without).
SJ_HOST_DEVICE float sj_lse(float m, float l, float delta) {
  return (m + sj_log2(l) - SJ_P_OFFSET + delta) * 0.69314718055994530942f;
}

// ---- The fused form of steps 1, 3, 5 and 9 (docs/NUMERICS.md, "Fused scores") -------------------
// For kernels whose descriptor sets fused_scores (gfx12). The running state is the shifted maximum
// c (the row maximum less P_OFFSET, rounded up), and each probability is one fma from the integer
// dot product: p = exp2(fma(float(dot), sq*sk, -c)), no rounded score in between. Rounding c up keeps
// every fma argument <= P_OFFSET exactly, so p <= 2^P_OFFSET < 448 stays in E4M3's range for any
// magnitude of the scores (a non-saturating convert turns p >= 464 into NaN).

SJ_HOST_DEVICE float sj_fma(float a, float b, float c) {
#if defined(SJ_NVIDIA)
  return fmaf(a, b, c);
#elif defined(SJ_AMD)
  return __builtin_fmaf(a, b, c);
#else
  return std::fma(a, b, c);
#endif
}

// A group's shifted maximum before rounding up: `dot_max` is the largest float(dot) of a group of
// keys with one K scale (-inf when none is visible: the result is then -inf or NaN, and the max
// over groups, fmax, ignores NaN).
SJ_HOST_DEVICE float sj_shifted_group_max(float dot_max, float q_scale, float k_scale) {
  return sj_fma(dot_max, q_scale * k_scale, -SJ_P_OFFSET);
}

SJ_HOST_DEVICE float sj_fabs(float x) {
#if defined(SJ_NVIDIA)
  return fabsf(x);
#elif defined(SJ_AMD)
  return __builtin_fabsf(x);  // a free source modifier of the fma below
#else
  return std::fabs(x);
#endif
}

// The fma above is within half an ulp of its exact value; adding |c|*2^-23 (at least one ulp of a
// normal c) rounds to at least the next float up, so the result is >= the exact value. Then
// dot*scale - c <= P_OFFSET holds exactly for every key of the row. (A subnormal c gains nothing, but
// its error is below 2^-149, far inside the slack: the E4M3 convert overflows only from 464 = 2^8.858.)
// Monotone, so it may be applied before or after a max; -inf gives NaN, which fmax ignores.
SJ_HOST_DEVICE float sj_shifted_round_up(float c) { return sj_fma(sj_fabs(c), 1.1920928955078125e-7f, c); }

// Step 5, fused: p = exp2 of this, with c_new the tile's updated shifted maximum (step 4 is
// sj_rescale(c_old, c_new)); a masked key's p is 0.
SJ_HOST_DEVICE float sj_fused_arg(float dot, float q_scale, float k_scale, float c_new) {
  return sj_fma(dot, q_scale * k_scale, -c_new);
}

// Step 9, fused: c already holds -P_OFFSET.
SJ_HOST_DEVICE float sj_lse_fused(float c, float l, float delta) {
  return (c + sj_log2(l) + delta) * 0.69314718055994530942f;
}
