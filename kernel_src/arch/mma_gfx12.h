// gfx12 (RDNA4, gfx1200/gfx1201) WMMA atoms and the fragment layouts of attention_gfx12.hip.
//
// The hardware layout of the wave32 16x16x16 8-bit WMMA (AMD matrix instruction calculator, RDNA4;
// docs/RDNA4.md, "gfx12 WMMA"), lane L, h = L / 16:
//   A (16x16, 8 bytes a lane): row i = L % 16, k = 8h + 4*vgpr + byte
//   B (16x16, 8 bytes a lane): col j = L % 16, k = 8h + 4*vgpr + byte
//   C/D (32-bit, 8 VGPRs):     D[i = 8h + vgpr][j = L % 16]
//
// The kernel computes S^T = K * Q^T (A = 16 keys x 16 channels, B = 16 channels x 16 queries), so
// lane L's accumulator holds keys for query L % 16, which is the B layout of P^T in O^T = V^T * P^T:
// accumulator VGPR v becomes byte v of the P operand with no cross-lane traffic.
//
// Two orderings are free, and the kernel uses them so that every LDS read is 16 bytes wide:
//  - channels: the int32 dot product does not care in which WMMA step a channel is summed, as long as
//    K (A) and Q (B) agree. Step pair (2c, 2c+1) takes, in half-wave h, the 16 contiguous channels
//    32c + 16h .. +15: bytes 0..7 feed step 2c, bytes 8..15 step 2c+1.
//  - keys: inside each aligned group of 32 keys, key block pair (2g, 2g+1) is arranged so that V^T's
//    A operand of half-wave h covers the 16 contiguous keys 32g + 16h .. +15 (bytes 0..7 for block
//    2g, 8..15 for block 2g+1). K rows are loaded in the same order, so the S accumulator (and the
//    mask, and the P operand) use the same key of each slot. The workspace keeps natural key order.
//
// Everything here that says where a value lives is a small SJ_HOST_DEVICE function: the host test
// (tests/test_gfx12_layout.cpp) runs these functions through an emulation of the documented layout.
#pragma once

#include "common/e4m3.h"
#include "common/prelude.h"

#define SJ_GFX12_WAVE 32
#define SJ_GFX12_TILE 16  // M = N = K of one WMMA

// ---- Fragment index functions (host and device) -------------------------------------------------
SJ_HOST_DEVICE int sj_g12_lane_col(int lane) { return lane & 15; }  // A row / B column / D column
SJ_HOST_DEVICE int sj_g12_lane_half(int lane) { return lane >> 4; }

// Channel (0 .. D-1) held in byte `byte` (0..7 = 4*vgpr + byte-in-vgpr) of the K (A) and Q (B)
// fragments of WMMA step `step` (0 .. D/16-1), in lane `lane`.
SJ_HOST_DEVICE int sj_g12_qk_channel(int step, int lane, int byte) {
  return 32 * (step >> 1) + 16 * sj_g12_lane_half(lane) + 8 * (step & 1) + byte;
}

// Key (offset inside the key tile) of row `row` (0..15) of key block `kb` (0 .. BLOCK_N/16-1).
SJ_HOST_DEVICE int sj_g12_key_slot(int kb, int row) {
  return 32 * (kb >> 1) + 16 * (row >> 3) + 8 * (kb & 1) + (row & 7);
}

// K fragment (A of S^T = K*Q^T): the key whose row lane `lane` loads for key block `kb`.
SJ_HOST_DEVICE int sj_g12_k_frag_key(int kb, int lane) { return sj_g12_key_slot(kb, sj_g12_lane_col(lane)); }

// Q fragment (B): the query (offset inside the 16-query block) lane `lane` loads.
SJ_HOST_DEVICE int sj_g12_q_frag_query(int lane) { return sj_g12_lane_col(lane); }

// S accumulator of key block `kb`: VGPR `vgpr` of lane `lane` holds key s_key for query s_query.
SJ_HOST_DEVICE int sj_g12_s_key(int kb, int lane, int vgpr) {
  return sj_g12_key_slot(kb, 8 * sj_g12_lane_half(lane) + vgpr);
}
SJ_HOST_DEVICE int sj_g12_s_query(int lane) { return sj_g12_lane_col(lane); }

// P operand (B of O^T = V^T*P^T) of key block kb: the byte (0..7) that receives the quantized p of
// accumulator VGPR `vgpr` of the same lane. The identity is the point of computing S^T.
SJ_HOST_DEVICE int sj_g12_p_byte(int vgpr) { return vgpr; }

// V^T fragment (A of O^T = V^T*P^T) of channel block cb and key block kb: lane `lane` loads channel
// 16*cb + v_frag_channel, and its byte `byte` (0..7) holds key v_frag_key.
SJ_HOST_DEVICE int sj_g12_v_frag_channel(int lane) { return sj_g12_lane_col(lane); }
SJ_HOST_DEVICE int sj_g12_v_frag_key(int kb, int lane, int byte) {
  return sj_g12_key_slot(kb, 8 * sj_g12_lane_half(lane) + byte);
}

// O accumulator of channel block cb: VGPR `vgpr` of lane `lane` holds channel 16*cb + o_channel of
// query o_query.
SJ_HOST_DEVICE int sj_g12_o_channel(int lane, int vgpr) { return 8 * sj_g12_lane_half(lane) + vgpr; }
SJ_HOST_DEVICE int sj_g12_o_query(int lane) { return sj_g12_lane_col(lane); }

// P before the E4M3 convert. p = exp2(s - m + P_OFFSET) with s <= m (m is the max over the same
// scores, and fl(s - m) <= 0, fl(x + P_OFFSET) <= P_OFFSET for x <= 0), so p <= 2^8.807 = 447.9 up to
// v_exp_f32's ~1 ulp, or p is NaN. v_cvt_pk_fp8_f32 rounds to nearest even without saturating (a
// value >= 464 becomes NaN), so every finite p converts exactly as the contract's saturating
// e4m3(min(p, 448)), and a NaN p stays NaN: no clamp instruction is needed, and none is used.
// (The obvious clamp, v_med3_f32(p, 448, -448), would be wrong: with a NaN operand it returns the
// min of the others, -448, turning a NaN score into a finite weight; sj_g12_med3_host models it.)

// Host model of v_med3_num_f32(a, b, c) (RDNA4 ISA; LLVM folds fmed3 the same way, "s0 qnan ->
// min(s1, s2)"): with a NaN operand it returns min_num of the other two.
SJ_HOST_DEVICE float sj_g12_med3_host(float a, float b, float c) {
  if (a != a) return b < c ? b : c;
  if (b != b) return a < c ? a : c;
  if (c != c) return a < b ? a : b;
  const float lo = a < b ? a : b, hi = a < b ? b : a;
  return c < lo ? lo : (c > hi ? hi : c);
}

// Host model of one lane of v_cvt_pk_fp8_f32 (OCP E4M3FN, round to nearest even, no saturation):
// NaN and |x| >= 464 (the midpoint past 448) give the NaN code; the rest as sj_e4m3_encode.
SJ_HOST_DEVICE sj_u8 sj_g12_cvt_fp8_host(float x) {
  const sj_u32 bits = sj_bit_cast<sj_u32>(x);
  if ((bits & 0x7fffffffu) >= 0x43e80000u) return (sj_u8)(((bits >> 24) & 0x80u) | 0x7fu);  // >= 464, inf, NaN
  return sj_e4m3_encode(x);
}

// Quantizes the 8 probabilities of one lane's S accumulator (index = accumulator VGPR) into the
// 8-byte P operand (two 32-bit words, little-endian bytes), as sj_g12_pack_p does on the device.
SJ_HOST_DEVICE void sj_g12_pack_p_host(const float p[8], sj_u32 out[2]) {
  out[0] = out[1] = 0;
  for (int v = 0; v < 8; ++v) {
    const int byte = sj_g12_p_byte(v);
    out[byte >> 2] |= (sj_u32)sj_g12_cvt_fp8_host(p[v]) << (8 * (byte & 3));
  }
}

// ---- Device atoms --------------------------------------------------------------------------------
#if defined(SJ_AMD)
typedef int sj_v2i __attribute__((ext_vector_type(2)));
typedef int sj_v4i __attribute__((ext_vector_type(4)));
typedef int sj_v8i __attribute__((ext_vector_type(8)));
typedef float sj_v4f __attribute__((ext_vector_type(4)));
typedef float sj_v8f __attribute__((ext_vector_type(8)));

// The constant address space (4): loads through it may be scalar (s_load), for memory the kernel
// never writes.
#define SJ_G12_CONSTANT __attribute__((address_space(4)))

// D = A*B + C, signed int8 x signed int8 -> int32 (16x16x16).
SJ_DEVICE sj_v8i sj_g12_wmma_iu8(sj_v2i a, sj_v2i b, sj_v8i c) {
  return __builtin_amdgcn_wmma_i32_16x16x16_iu8_w32_gfx12(true, a, true, b, c, false);
}

// D = A*B + C, OCP E4M3 x E4M3 -> fp32 (16x16x16).
SJ_DEVICE sj_v8f sj_g12_wmma_fp8(sj_v2i a, sj_v2i b, sj_v8f c) {
  return __builtin_amdgcn_wmma_f32_16x16x16_fp8_fp8_w32_gfx12(a, b, c);
}

// The value of the same register in lane L ^ 16 (the other half-wave, same column): one VALU
// v_permlanex16_b32, no LDS.
SJ_DEVICE float sj_g12_other_half(float x) {
  const int y = __builtin_amdgcn_permlanex16(0, sj_bit_cast<int>(x), 0x76543210u, 0xfedcba98u, false, false);
  return sj_bit_cast<float>(y);
}

// Row reductions over the keys of one query (column L % 16): the lane-local part is done by the
// caller over its 8 VGPRs per key block; these combine the two half-waves.
SJ_DEVICE float sj_g12_max_halves(float x) { return __builtin_fmaxf(x, sj_g12_other_half(x)); }
SJ_DEVICE float sj_g12_sum_halves(float x) { return x + sj_g12_other_half(x); }

// Device twin of sj_g12_pack_p_host: v_cvt_pk_fp8_f32 (RNE), bytes in the same place; no clamp (see
// the bound above sj_g12_med3_host).
SJ_DEVICE sj_v2i sj_g12_pack_p(const float p[8]) {
  // The first convert of each word keeps the old high half, which the second overwrites: any old
  // value will do, and p[0] / p[4] (dead after it) saves a v_mov of zero.
  sj_v2i out;
  int w0 = __builtin_amdgcn_cvt_pk_fp8_f32(p[0], p[1], sj_bit_cast<int>(p[0]), false);
  out.x = __builtin_amdgcn_cvt_pk_fp8_f32(p[2], p[3], w0, true);
  int w1 = __builtin_amdgcn_cvt_pk_fp8_f32(p[4], p[5], sj_bit_cast<int>(p[4]), false);
  out.y = __builtin_amdgcn_cvt_pk_fp8_f32(p[6], p[7], w1, true);
  return out;
}
// Adds the 8 E4M3 probabilities of one P operand (two VGPRs of four codes) to `sum`: two
// v_dot4_f32_fp8_fp8 against E4M3 1.0 (0x38) in every byte instead of eight adds of the fp32 p. The
// row sum is then that of the quantized p the PV WMMAs weigh V with (docs/NUMERICS.md, step 6).
SJ_DEVICE float sj_g12_sum_p(sj_v2i p, float sum) {
  constexpr int kOnes = 0x38383838;
  sum = __builtin_amdgcn_dot4_f32_fp8_fp8(p.x, kOnes, sum);
  return __builtin_amdgcn_dot4_f32_fp8_fp8(p.y, kOnes, sum);
}
#endif  // SJ_AMD
