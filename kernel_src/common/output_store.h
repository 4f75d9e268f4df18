// Storing the attention output (docs/NUMERICS.md step 8) from the NVIDIA kernels' epilogues, where a
// thread holds channel pairs (d, d + 1), d even, of its rows (the mma and wgmma accumulator layouts):
// each pair converted as one 32-bit word and stored as one when every pair of the output is 4-byte
// aligned, else as two 16-bit stores (an output view may have odd strides).
#pragma once

#include "common/prelude.h"

// Whether every channel pair (b, h, n, d even) of out starts 4-byte aligned: an aligned base and even
// strides (in 2-byte elements). Uniform per launch.
SJ_DEVICE bool sj_output_pairs_aligned(const void* out, sj_i64 stride_b, sj_i64 stride_h, sj_i64 stride_n) {
  return (((sj_u64)out & 3u) | ((sj_u64)(stride_b | stride_h | stride_n) & 1u)) == 0;
}

// Channels d and d + 1 of one output row, at out (the address of channel d).
SJ_DEVICE void sj_store_output_pair(sj_u16* out, bool aligned, float lo, float hi, int dtype) {
  const sj_u32 word = sj_to_dtype_pair(lo, hi, dtype);
  if (aligned) {
    *(sj_u32*)out = word;
    return;
  }
  out[0] = (sj_u16)(word & 0xFFFFu);
  out[1] = (sj_u16)(word >> 16);
}
