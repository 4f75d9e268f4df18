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

#include "common/constants.h"
#include "common/e4m3.h"
#include "common/prelude.h"

#define SJ_INT8_MAX 127.0f
#define SJ_E4M3_MAX 448.0f
#define SJ_FP16_MAX 65504.0f

// ---- Correctly rounded single operations ---------------------------------------------------
// Each is one IEEE operation: NVIDIA device code calls its _rn intrinsic, every other compiler the
// plain operator (see the top of this file).
#if defined(SJ_NVIDIA) && defined(__CUDA_ARCH__)
#define SJ_ROUNDED_OP(name, type, nvidia_intrinsic, op) \
  SJ_HOST_DEVICE type name(type a, type b) { return nvidia_intrinsic(a, b); }
#else
#define SJ_ROUNDED_OP(name, type, nvidia_intrinsic, op) \
  SJ_HOST_DEVICE type name(type a, type b) { return a op b; }
#endif
SJ_ROUNDED_OP(sj_mul_rn, float, __fmul_rn, *)
SJ_ROUNDED_OP(sj_add_rn, float, __fadd_rn, +)
SJ_ROUNDED_OP(sj_sub_rn, float, __fsub_rn, -)
SJ_ROUNDED_OP(sj_div_rn, float, __fdiv_rn, /)
SJ_ROUNDED_OP(sj_add_rn_f64, double, __dadd_rn, +)
SJ_ROUNDED_OP(sj_div_rn_f64, double, __ddiv_rn, /)
#undef SJ_ROUNDED_OP

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

// K mean from the fixed-order fp64 sum of its sampled keys (see docs/NUMERICS.md): mean = float(sum /
// double(samples)), samples = sj_k_mean_samples(Nk) (or the valid keys a masked call's chunks summed).
SJ_HOST_DEVICE float sj_k_mean(double sum, int samples) { return (float)sj_div_rn_f64(sum, (double)samples); }

// Step 4: block scale.
SJ_HOST_DEVICE float sj_int8_scale(float amax) { return sj_div_rn(amax, SJ_INT8_MAX); }

// Step 5 from the magnitude |r| of the quotient and its sign: clamped to 127, then rounded half away
// from zero with adds only (no float<->int conversions, which run at a quarter of the FP32 rate on
// NVIDIA): t = |r| + 1.5 * 2^23 rounds |r| to the nearest even integer n (exact below 2^22), whose
// value is read from the bits of t; a tie that RNE rounded down (|r| - n == 0.5, exact) goes up.
// Branch-free (selects only), so a warp never diverges on it.
SJ_HOST_DEVICE sj_i8 sj_round_int8(float magnitude, bool negative) {
  magnitude = magnitude < SJ_INT8_MAX ? magnitude : SJ_INT8_MAX;
  const float t = sj_add_rn(magnitude, 12582912.0f);
  const float n = sj_sub_rn(t, 12582912.0f);
  const int rounded = (int)(sj_bit_cast<sj_u32>(t) - 0x4B400000u) + (sj_sub_rn(magnitude, n) == 0.5f ? 1 : 0);
  return (sj_i8)(negative ? -rounded : rounded);
}

// ---- Many divisions by one divisor (a block or channel scale) ---------------------------------
// sj_div_rn_by(a, sj_divisor(b)) == sj_div_rn(a, b) for every a whose quotient is not an fp32
// subnormal, when sj_divisor_fast(b) (b normal, 2^-100 <= b < 2^100); a subnormal quotient
// (|a / b| < 2^-126) may differ, which no caller can see: it quantizes to 0 in int8 and e4m3 alike.
// On NVIDIA this is the fast path of the compiler's own div.rn.f32 (MUFU.RCP, one Newton step on the
// reciprocal, quotient, exact FMA residual, one correction) with the reciprocal hoisted out of the
// loop and without the per-division range check (FCHK) and its branch, which only guards operands
// outside that range; elsewhere it is the plain correctly rounded division.
struct SjDivisor {
  float value;
  float reciprocal;  // NVIDIA: the refined reciprocal of the fast path; unused elsewhere
};

SJ_HOST_DEVICE bool sj_divisor_fast(float b) {
  const sj_u32 bits = sj_bit_cast<sj_u32>(b);
  return bits >= ((127u - 100u) << 23) && bits < ((127u + 100u) << 23);  // positive, 2^-100 .. 2^100
}

SJ_HOST_DEVICE SjDivisor sj_divisor(float b) {
  SjDivisor d{b, 0.0f};
#if defined(SJ_NVIDIA) && defined(__CUDA_ARCH__)
  float r;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(b));
  d.reciprocal = __fmaf_rn(r, __fmaf_rn(-b, r, 1.0f), r);
#endif
  return d;
}

SJ_HOST_DEVICE float sj_div_rn_by(float a, const SjDivisor& d) {
#if defined(SJ_NVIDIA) && defined(__CUDA_ARCH__)
  const float q = __fmul_rn(a, d.reciprocal);
  return __fmaf_rn(d.reciprocal, __fmaf_rn(-d.value, q, a), q);
#else
  return sj_div_rn(a, d.value);
#endif
}

// sj_quantize_int8 for a finite x and a scale with sj_divisor_fast (the same result, branch-free).
SJ_HOST_DEVICE sj_i8 sj_quantize_int8_by(float x, const SjDivisor& scale) {
  return sj_round_int8(sj_div_rn_by(sj_abs(x), scale), x < 0.0f);
}

// Step 5: 0 when the scale is 0 (an all-zero block: no NaN); otherwise x / scale rounded half away
// from zero (roundf semantics) and clamped to [-127, 127]. NaN quotients give 0.
SJ_HOST_DEVICE sj_i8 sj_quantize_int8(float x, float scale) {
  if (scale == 0.0f) return 0;
  const float r = sj_div_rn(x, scale);
  if (r != r) return 0;
  return sj_round_int8(sj_abs(r), r < 0.0f);
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

// sj_quantize_e4m3 for a finite v and a scale with sj_divisor_fast (the same code, branch-free).
SJ_HOST_DEVICE sj_u8 sj_quantize_e4m3_by(float v, const SjDivisor& scale) {
  const float magnitude = sj_div_rn_by(sj_abs(v), scale);
  const sj_u32 sign = (sj_bit_cast<sj_u32>(v) >> 24) & 0x80u;
  return (sj_u8)(sign | sj_e4m3_encode_magnitude(magnitude < SJ_E4M3_MAX ? magnitude : SJ_E4M3_MAX));
}

// ---- Packed codes for the prepare kernel's stores ------------------------------------------------
// sj_int8_word(r): the int8 code of sj_round_int8(|r|, r < 0) for a quotient r (not NaN) as the low
// byte of a word (the other bytes are unspecified); sj_e4m3x4(r): the four codes
// sj_e4m3_encode(clamp(r[i], -448, 448)) (r[i] not NaN), code i in byte i. Callers pass the signed
// quotient: for int8 sj_div_rn_by(x, d) (odd but for zero results, whose code is 0 either way), for
// e4m3 sj_with_sign_of(sj_div_rn_by(|v|, d), v), so that -0 keeps its code 0x80.
// NVIDIA device code computes the same codes in fewer instructions (exhaustively checked against
// the portable forms below on an H200: bench/h200_packed_codes_check.cu):
//  int8: m = min(|r|, 127); floor(m + 0.5), which is m rounded half away from zero, is read from
//   rz(rz(m + 0.5) + 2^23): truncating a positive sum never goes below its floor, an integer fp32
//   holds; the sign is applied to the word in two's complement, whose low byte is the int8 code.
//  e4m3 (sm_89 and later): cvt.rn.satfinite.e4m3x2.f32, round to nearest even with e4m3 subnormals
//   and saturation to +-448, which is the clamp and sj_e4m3_encode.

// magnitude with the sign bit of x: the signed quotient of the e4m3 store, copysign(|x| / scale, x)
// (sj_div_rn_by(-0, d) is +0, which would lose the sign of a -0 input).
SJ_HOST_DEVICE float sj_with_sign_of(float magnitude, float x) {
  return sj_bit_cast<float>(sj_bit_cast<sj_u32>(magnitude) | (sj_bit_cast<sj_u32>(x) & 0x80000000u));
}

SJ_HOST_DEVICE sj_u32 sj_int8_word(float r) {
#if defined(SJ_NVIDIA) && defined(__CUDA_ARCH__)
  const float m = fminf(fabsf(r), SJ_INT8_MAX);
  const sj_u32 floor_bits = sj_bit_cast<sj_u32>(__fadd_rz(__fadd_rz(m, 0.5f), 8388608.0f));  // 2^23 + n
  const sj_u32 negative = (sj_u32)((int)sj_bit_cast<sj_u32>(r) >> 31);                    // all ones or 0
  return (floor_bits ^ negative) - negative;
#else
  return (sj_u32)(sj_u8)sj_round_int8(sj_abs(r), r < 0.0f);
#endif
}

SJ_HOST_DEVICE sj_u32 sj_e4m3x4(const float (&r)[4]) {
#if defined(SJ_NVIDIA) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890  // the e4m3 converts are sm_89+
  unsigned short low, high;  // cvt puts its first source in the upper byte
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(low) : "f"(r[1]), "f"(r[0]));
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(high) : "f"(r[3]), "f"(r[2]));
  return (sj_u32)low | ((sj_u32)high << 16);
#else
  sj_u32 word = 0;
  for (int i = 0; i < 4; ++i) {
    const float magnitude = sj_abs(r[i]);
    const sj_u32 sign = (sj_bit_cast<sj_u32>(r[i]) >> 24) & 0x80u;
    word |= (sign | sj_e4m3_encode_magnitude(magnitude < SJ_E4M3_MAX ? magnitude : SJ_E4M3_MAX)) << (8 * i);
  }
  return word;
#endif
}

// fp16 PV: fp16(clamp(v, -65504, 65504)), RNE; the clamp keeps finite bf16 values past the fp16
// range finite, while +-inf (and NaN) stay non-finite, as in SDPA. Returns the fp16 bits.
SJ_HOST_DEVICE sj_u16 sj_v_to_fp16(float v) {
  const bool infinite = sj_abs(v) == sj_bit_cast<float>(0x7f800000u);
  if (v > SJ_FP16_MAX && !infinite) v = SJ_FP16_MAX;
  if (v < -SJ_FP16_MAX && !infinite) v = -SJ_FP16_MAX;
  return sj_f32_to_f16(v);
}
