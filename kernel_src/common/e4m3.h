// OCP FP8 E4M3FN <-> fp32 in pure integer arithmetic, so that host C++, NVRTC/nvcc and clang HIP
// (gfx12) produce the same bits whatever the float flags (no FTZ, contraction or approximation can
// change an integer). E4M3FN: 1 sign, 4 exponent (bias 7), 3 mantissa bits; no infinities; the only
// NaN codes are 0x7F / 0xFF; largest finite 448 (0x7E); smallest subnormal 2^-9 (0x01).
#pragma once

#include "common/prelude.h"

// |x| -> E4M3FN code without the sign, for 0 <= |x| <= 448 given as its float (not NaN),
// round-to-nearest-even, branch-free (selects only). Normal codes (|x| >= 2^-6): the 23-bit mantissa
// rounded to 3 bits, ties to even (a carry into the exponent is correct; below 448 nothing rounds past
// it). Subnormal codes (or zero): units of 2^-9, |x| * 2^9 < 8 (exact: a power of two) rounded to the
// nearest even integer by the 1.5 * 2^23 magic add, which may give 8, exactly the code of 2^-6.
SJ_HOST_DEVICE sj_u32 sj_e4m3_encode_magnitude(float magnitude) {
  const sj_u32 abs_bits = sj_bit_cast<sj_u32>(magnitude);
  const sj_u32 normal = ((abs_bits + 0x7ffffu + ((abs_bits >> 20) & 1u)) >> 20) - (120u << 3);  // rebias 127 -> 7
  const float units = magnitude * 512.0f + 12582912.0f;  // both operations exact or RNE as intended
  const sj_u32 subnormal = sj_bit_cast<sj_u32>(units) - 0x4B400000u;
  return abs_bits >= 0x3c800000u ? normal : subnormal;
}

// fp32 -> E4M3FN, round-to-nearest-even. Saturating: |x| >= 448 (including infinities) gives ±448,
// because docs/NUMERICS.md clamps to ±448 before converting (the hardware convert does not
// saturate, so every producer clamps first; doing it here too makes the result independent of that).
// NaN gives 0x7F. Zero keeps its sign (-0 -> 0x80).
SJ_HOST_DEVICE sj_u8 sj_e4m3_encode(float x) {
  const sj_u32 bits = sj_bit_cast<sj_u32>(x);
  const sj_u32 sign = (bits >> 24) & 0x80u;
  const sj_u32 abs_bits = bits & 0x7fffffffu;
  if (abs_bits > 0x7f800000u) return (sj_u8)0x7f;           // NaN
  if (abs_bits >= 0x43e00000u) return (sj_u8)(sign | 0x7e);  // >= 448 (and inf): saturate
  return (sj_u8)(sign | sj_e4m3_encode_magnitude(sj_bit_cast<float>(abs_bits)));
}

// E4M3FN -> fp32, exact. 0x7F / 0xFF decode to a quiet NaN of the same sign.
SJ_HOST_DEVICE float sj_e4m3_decode(sj_u8 code) {
  const sj_u32 sign = (sj_u32)(code & 0x80u) << 24;
  const sj_u32 exponent = (code >> 3) & 0xfu;
  const sj_u32 mantissa = code & 0x7u;
  if (exponent == 0xfu && mantissa == 0x7u) return sj_bit_cast<float>(sign | 0x7fc00000u);
  if (exponent != 0) return sj_bit_cast<float>(sign | ((exponent + 120u) << 23) | (mantissa << 20));
  if (mantissa == 0) return sj_bit_cast<float>(sign);
  // subnormal: mantissa * 2^-9 = 1.xx * 2^(k-9), built from bits (no float arithmetic)
  const sj_u32 top = mantissa >= 4u ? 2u : (mantissa >= 2u ? 1u : 0u);  // index of the leading 1
  const sj_u32 fraction = (mantissa << (23u - top)) & 0x7fffffu;
  return sj_bit_cast<float>(sign | ((top + 127u - 9u) << 23) | fraction);
}
