// The scalar steps of the prepare stage of docs/NUMERICS.md, shared by the GPU prepare kernels
// (NVRTC/nvcc and clang HIP) and the CPU emulator, so that the quantized workspaces match bit for
// bit. Every fp32 operation below is one correctly rounded IEEE operation: on NVIDIA device code the
// _rn intrinsics forbid contraction and the fast approximate division that --use_fast_math would
// otherwise select; clang HIP divides with correct rounding by default
// (-fhip-fp32-correctly-rounded-divide-sqrt) and none of these expressions offers a multiply-add to
// contract; host code uses plain operators (there is no multiply-add to contract either).
// Flush-to-zero is the one flag these helpers cannot neutralise: compile prepare kernels without it
// (no -ftz / --use_fast_math) or inputs whose values are fp32 subnormals (|x| < 1.2e-38) may differ.
#pragma once

#include "common/e4m3.h"
#include "common/prelude.h"

#define SJ_INT8_MAX 127.0f
#define SJ_E4M3_MAX 448.0f
#define SJ_FP16_MAX 65504.0f
#define SJ_K_MEAN_CHUNK 64  // tokens per fp64 partial sum of the K mean (fixed summation order)

// ---- Correctly rounded single operations ---------------------------------------------------
SJ_HOST_DEVICE float sj_mul_rn(float a, float b) {
#if defined(SJ_NVIDIA) && defined(__CUDA_ARCH__)
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}

SJ_HOST_DEVICE float sj_add_rn(float a, float b) {
#if defined(SJ_NVIDIA) && defined(__CUDA_ARCH__)
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}

SJ_HOST_DEVICE float sj_sub_rn(float a, float b) {
#if defined(SJ_NVIDIA) && defined(__CUDA_ARCH__)
  return __fsub_rn(a, b);
#else
  return a - b;
#endif
}

SJ_HOST_DEVICE float sj_div_rn(float a, float b) {
#if defined(SJ_NVIDIA) && defined(__CUDA_ARCH__)
  return __fdiv_rn(a, b);
#else
  return a / b;
#endif
}

SJ_HOST_DEVICE double sj_add_rn_f64(double a, double b) {
#if defined(SJ_NVIDIA) && defined(__CUDA_ARCH__)
  return __dadd_rn(a, b);
#else
  return a + b;
#endif
}

SJ_HOST_DEVICE double sj_div_rn_f64(double a, double b) {
#if defined(SJ_NVIDIA) && defined(__CUDA_ARCH__)
  return __ddiv_rn(a, b);
#else
  return a / b;
#endif
}

SJ_HOST_DEVICE float sj_abs(float x) { return sj_bit_cast<float>(sj_bit_cast<sj_u32>(x) & 0x7fffffffu); }

// Running max of |x| for a block's amax. NaN propagates (a NaN input gives a NaN scale, which makes
// every quantized value of the block 0 below), so no producer can hide one by comparison order.
SJ_HOST_DEVICE float sj_amax_update(float amax, float x) {
  const float a = sj_abs(x);
  if (a != a) return a;
  return a > amax ? a : amax;
}

// ---- Q and K (int8 per 32-row block) --------------------------------------------------------
// Step 2 (Q): x = float(q) * q_mul, where q_mul = float(double(sm_scale) * log2(e)) from the host.
SJ_HOST_DEVICE float sj_q_prescale(float q, float q_mul) { return sj_mul_rn(q, q_mul); }

// K with smoothing: x = float(k) - mean[d] (mean = 0 without smoothing gives x = k exactly).
SJ_HOST_DEVICE float sj_k_smooth(float k, float mean) { return sj_sub_rn(k, mean); }

// K mean from the fixed-order fp64 sum (see docs/NUMERICS.md): mean = float(sum / double(Nk)).
SJ_HOST_DEVICE float sj_k_mean(double sum, int seq_kv) { return (float)sj_div_rn_f64(sum, (double)seq_kv); }

// Step 4: block scale.
SJ_HOST_DEVICE float sj_int8_scale(float amax) { return sj_div_rn(amax, SJ_INT8_MAX); }

// Step 5: 0 when the scale is 0 (an all-zero block: no NaN); otherwise x / scale rounded half away
// from zero (roundf semantics) and clamped to [-127, 127]. NaN quotients give 0.
SJ_HOST_DEVICE sj_i8 sj_quantize_int8(float x, float scale) {
  if (scale == 0.0f) return 0;
  const float r = sj_div_rn(x, scale);
  if (r >= SJ_INT8_MAX) return (sj_i8)127;
  if (r <= -SJ_INT8_MAX) return (sj_i8)-127;
  if (r != r) return 0;
  // |r| < 127: round half away from zero with adds only (no float<->int conversions, which run at a
  // quarter of the FP32 rate on NVIDIA): n = RNE(|r|) through the 1.5 * 2^23 magic number (exact
  // below 2^22), a tie that RNE rounded down (|r| - n == 0.5, exact) goes up, and n's integer value
  // is read from the bits of n + 1.5 * 2^23.
  const float magnitude = sj_abs(r);
  float n = sj_sub_rn(sj_add_rn(magnitude, 12582912.0f), 12582912.0f);
  if (sj_sub_rn(magnitude, n) == 0.5f) n = sj_add_rn(n, 1.0f);
  const int rounded = (int)(sj_bit_cast<sj_u32>(sj_add_rn(n, 12582912.0f)) - 0x4B400000u);
  return (sj_i8)(r < 0.0f ? -rounded : rounded);
}

// ---- V ------------------------------------------------------------------------------------------
// fp8 PV: per-channel scale amax / 448.
SJ_HOST_DEVICE float sj_v_scale(float amax) { return sj_div_rn(amax, SJ_E4M3_MAX); }

// fp8 PV: 0 when the scale is 0; otherwise e4m3(clamp(v / scale, -448, 448)), RNE. A NaN quotient
// encodes as the NaN code 0x7F (it can only come from a NaN/inf input).
SJ_HOST_DEVICE sj_u8 sj_quantize_e4m3(float v, float scale) {
  if (scale == 0.0f) return 0;
  float r = sj_div_rn(v, scale);
  if (r > SJ_E4M3_MAX) r = SJ_E4M3_MAX;
  if (r < -SJ_E4M3_MAX) r = -SJ_E4M3_MAX;
  return sj_e4m3_encode(r);
}

// fp16 PV: fp16(clamp(v, -65504, 65504)), RNE; the clamp keeps finite bf16 values past the fp16
// range finite, while +-inf (and NaN) stay non-finite, as in SDPA. Returns the fp16 bits.
SJ_HOST_DEVICE sj_u16 sj_v_to_fp16(float v) {
  const bool infinite = sj_abs(v) == sj_bit_cast<float>(0x7f800000u);
  if (v > SJ_FP16_MAX && !infinite) v = SJ_FP16_MAX;
  if (v < -SJ_FP16_MAX && !infinite) v = -SJ_FP16_MAX;
  return sj_f32_to_f16(v);
}
