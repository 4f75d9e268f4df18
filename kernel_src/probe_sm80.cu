// Matrix-instruction layout probe for the NVIDIA mma.sync kernel, run first by sagejit-selftest.
//
// attention_sm80.cu trusts the fragment index functions of arch/mma_sm80.h (PTX ISA fragment tables).
// This kernel runs one warp of each MMA the kernel uses (m16n8k32 s8 and e4m3, m16n8k16 f16) with
// operands loaded through exactly those functions and writes the raw accumulators; the host
// (tools/support/mma_probe.cpp) predicts every lane's accumulators from the same functions and compares
// exactly (small integer / exactly representable inputs make the fp32 sums exact).
//
// Buffers (row-major): a8 [16][32] int8, b8 [32][8] int8 (k rows, n columns), ae / be the same shapes
// as E4M3 codes, a16 [16][16] and b16 [16][8] fp16 bits; s8_out, e4m3_out, f16_out [32 lanes][4].
// Launch: one block of 32 threads. Needs sm_89+ (e4m3 mma).
#include "arch/mma_sm80.h"

SJ_KERNEL void sj_probe_sm80(const sj_i8* a8, const sj_i8* b8, const sj_u8* ae, const sj_u8* be, const sj_u16* a16,
                             const sj_u16* b16, int* s8_out, float* e4m3_out, float* f16_out) {
  const int lane = (int)sj_thread_x();
  if (lane >= 32) return;

  unsigned a[4] = {0, 0, 0, 0}, b[2] = {0, 0}, a_e[4] = {0, 0, 0, 0}, b_e[2] = {0, 0};
  for (int i = 0; i < 16; ++i) {
    const int at = sj_sm80_a8_row(lane, i) * 32 + sj_sm80_a8_col(lane, i);
    a[i >> 2] |= (unsigned)(sj_u8)a8[at] << (8 * (i & 3));
    a_e[i >> 2] |= (unsigned)ae[at] << (8 * (i & 3));
  }
  for (int i = 0; i < 8; ++i) {
    const int at = sj_sm80_b8_row(lane, i) * 8 + sj_sm80_b8_col(lane, i);
    b[i >> 2] |= (unsigned)(sj_u8)b8[at] << (8 * (i & 3));
    b_e[i >> 2] |= (unsigned)be[at] << (8 * (i & 3));
  }
  int c_s8[4] = {0, 0, 0, 0};
  sj_mma_s8(c_s8, a, b[0], b[1]);
  float c_e4m3[4] = {0, 0, 0, 0};
  sj_mma_e4m3(c_e4m3, a_e, b_e[0], b_e[1]);

  unsigned a_h[4] = {0, 0, 0, 0}, b_h[2] = {0, 0};
  for (int i = 0; i < 8; ++i)
    a_h[i >> 1] |= (unsigned)a16[sj_sm80_a16_row(lane, i) * 16 + sj_sm80_a16_col(lane, i)] << (16 * (i & 1));
  for (int i = 0; i < 4; ++i)
    b_h[i >> 1] |= (unsigned)b16[sj_sm80_b16_row(lane, i) * 8 + sj_sm80_b16_col(lane, i)] << (16 * (i & 1));
  float c_f16[4] = {0, 0, 0, 0};
  sj_mma_f16(c_f16, a_h, b_h[0], b_h[1]);

  for (int i = 0; i < 4; ++i) {
    s8_out[lane * 4 + i] = c_s8[i];
    e4m3_out[lane * 4 + i] = c_e4m3[i];
    f16_out[lane * 4 + i] = c_f16[i];
  }
}
