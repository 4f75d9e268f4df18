// Storing the attention output (docs/NUMERICS.md step 8) from the NVIDIA kernels' epilogues, where a
// thread holds channel pairs (d, d + 1), d even, of its rows (the mma and wgmma accumulator layouts):
// each pair converted as one 32-bit word and stored as one when every pair of the output is 4-byte
// aligned, else as two 16-bit stores (an output view may have odd strides).
#pragma once

#include "common/key_mask.h"
#include "common/online_softmax.h"
#include "common/prelude.h"
#include "common/quant.h"

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

// Step 8 for one output row: calls store(output) once, output(acc, v_scale) being the row's output
// element. A row whose l has sj_divisor_fast (every row that sees a key: its maximum alone adds
// 2^P_OFFSET) divides by l's reciprocal hoisted out of its channels (sj_output_by); any other (l = 0:
// a fully masked row; a non-finite l) as written: sj_output, or with a key mask sj_masked_output.
template <bool kKeyMask, class Store>
SJ_DEVICE void sj_store_output_row(float l, Store store) {
  if (sj_divisor_fast(l)) {
    const SjDivisor by = sj_divisor(l);
    store([&](float acc, float v_scale) { return sj_output_by(acc, by, v_scale); });
  } else if constexpr (kKeyMask) {
    store([&](float acc, float v_scale) { return sj_masked_output(acc, l, v_scale); });
  } else {
    store([&](float acc, float v_scale) { return sj_output(acc, l, v_scale); });
  }
}
