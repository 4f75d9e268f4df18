// Matrix-instruction layout probe for gfx12 (RDNA4), run first by sagejit-selftest on a real GPU.
//
// The attention kernel (attention_gfx12.hip) never checks where the WMMA hardware puts an element: it
// trusts the fragment index functions of arch/mma_gfx12.h, which the host tests check against the
// lane layout documented by AMD. This kernel runs one wave of the two WMMAs the kernel uses (iu8 for
// S^T = K*Q^T, fp8 for O^T = V^T*P^T) with operands loaded through exactly those index functions,
// and writes the raw accumulators. The host (tools/support/mma_probe.cpp) computes what each lane and
// VGPR must hold if the index functions describe the hardware, from the same functions, and compares
// exactly (the inputs are small integers / exactly representable fp8 values, so fp32 sums are exact).
//
// Buffers (row-major): k8 [32 keys][32 channels] (key block 0 spans keys 0-7 and 16-23 of its 32-key
// group, sj_g12_key_slot) and q8 [16 queries][32 channels] int8;
// v8 [32 keys][16 channels] and p8 [16 queries][32 keys] E4M3 codes; s_out / o_out [32 lanes][8].
// Launch: one workgroup of 32 threads (one wave32).
#include "arch/mma_gfx12.h"

SJ_KERNEL void sj_probe_gfx12(const sj_i8* k8, const sj_i8* q8, const sj_u8* v8, const sj_u8* p8, int* s_out,
                              float* o_out) {
  const int lane = (int)sj_thread_x();
  if (lane >= SJ_GFX12_WAVE) return;

  // S^T = K * Q^T, WMMA step 0 and key block 0: A = K rows, B = Q^T columns.
  sj_u32 a_words[2] = {0, 0}, b_words[2] = {0, 0};
  for (int byte = 0; byte < 8; ++byte) {
    const int channel = sj_g12_qk_channel(0, lane, byte);
    const int key = sj_g12_k_frag_key(0, lane);
    const int query = sj_g12_q_frag_query(lane);
    a_words[byte >> 2] |= (sj_u32)(sj_u8)k8[key * 32 + channel] << (8 * (byte & 3));
    b_words[byte >> 2] |= (sj_u32)(sj_u8)q8[query * 32 + channel] << (8 * (byte & 3));
  }
  sj_v2i a, b;
  a.x = (int)a_words[0];
  a.y = (int)a_words[1];
  b.x = (int)b_words[0];
  b.y = (int)b_words[1];
  sj_v8i s = {0, 0, 0, 0, 0, 0, 0, 0};
  s = sj_g12_wmma_iu8(a, b, s);
  for (int vgpr = 0; vgpr < 8; ++vgpr) s_out[lane * 8 + vgpr] = s[vgpr];

  // O^T = V^T * P^T, channel block 0 and key block 0: A = V^T (channel rows), B = P^T (query columns).
  sj_u32 va_words[2] = {0, 0}, pb_words[2] = {0, 0};
  for (int byte = 0; byte < 8; ++byte) {
    const int channel = sj_g12_v_frag_channel(lane);
    const int v_key = sj_g12_v_frag_key(0, lane, byte);
    va_words[byte >> 2] |= (sj_u32)v8[v_key * 16 + channel] << (8 * (byte & 3));
  }
  for (int vgpr = 0; vgpr < 8; ++vgpr) {
    // The P operand byte of accumulator VGPR `vgpr` holds p of key s_key for query s_query.
    const int byte = sj_g12_p_byte(vgpr);
    const int p_key = sj_g12_s_key(0, lane, vgpr);
    const int query = sj_g12_s_query(lane);
    pb_words[byte >> 2] |= (sj_u32)p8[query * 32 + p_key] << (8 * (byte & 3));
  }
  sj_v2i va, pb;
  va.x = (int)va_words[0];
  va.y = (int)va_words[1];
  pb.x = (int)pb_words[0];
  pb.y = (int)pb_words[1];
  sj_v8f o = {0, 0, 0, 0, 0, 0, 0, 0};
  o = sj_g12_wmma_fp8(va, pb, o);
  for (int vgpr = 0; vgpr < 8; ++vgpr) o_out[lane * 8 + vgpr] = o[vgpr];
}

// Effective accumulator precision of the fp8 WMMA (sagejit-selftest; host side and analysis:
// tools/support/fp8_accumulation_probe.cpp, dev/fp8_accumulation.cpp). The attention kernel lets the
// PV WMMAs accumulate straight into O (descriptor flag pv_into_output), which is exact to the
// contract only if the hardware keeps fp32's 24 bits both when it adds C and when it sums the
// products of one WMMA; no published figure says so. Each case is one WMMA whose only nonzero
// output element is O^T[channel 0][query 0] = c_init + sum_k a[k] * b[k], with a = row 0 of V^T and
// b = column 0 of P^T (E4M3 codes, 32 key slots, laid out through the same index functions as the
// kernel), written to out[case]. The host picks values whose exact sums need a known number of
// significand bits and counts how many survive. Launch: one wave32.
SJ_KERNEL void sj_probe_gfx12_fp8_accumulation(const sj_u8* a_codes, const sj_u8* b_codes, const float* c_init,
                                               float* out, int cases) {
  const int lane = (int)sj_thread_x();
  if (lane >= SJ_GFX12_WAVE) return;
  for (int c = 0; c < cases; ++c) {
    sj_u32 va_words[2] = {0, 0}, pb_words[2] = {0, 0};
    for (int byte = 0; byte < 8; ++byte) {
      const int key = sj_g12_v_frag_key(0, lane, byte);
      if (sj_g12_v_frag_channel(lane) == 0) va_words[byte >> 2] |= (sj_u32)a_codes[c * 32 + key] << (8 * (byte & 3));
    }
    for (int vgpr = 0; vgpr < 8; ++vgpr) {
      const int byte = sj_g12_p_byte(vgpr);
      const int key = sj_g12_s_key(0, lane, vgpr);
      if (sj_g12_s_query(lane) == 0) pb_words[byte >> 2] |= (sj_u32)b_codes[c * 32 + key] << (8 * (byte & 3));
    }
    sj_v2i va, pb;
    va.x = (int)va_words[0];
    va.y = (int)va_words[1];
    pb.x = (int)pb_words[0];
    pb.y = (int)pb_words[1];
    sj_v8f o = {0, 0, 0, 0, 0, 0, 0, 0};
    for (int vgpr = 0; vgpr < 8; ++vgpr)
      if (sj_g12_o_channel(lane, vgpr) == 0 && sj_g12_o_query(lane) == 0) o[vgpr] = c_init[c];
    o = sj_g12_wmma_fp8(va, pb, o);
    for (int vgpr = 0; vgpr < 8; ++vgpr)
      if (sj_g12_o_channel(lane, vgpr) == 0 && sj_g12_o_query(lane) == 0) out[c] = o[vgpr];
  }
}
