// Prepare stage of docs/NUMERICS.md for both vendors (NVRTC/nvcc and clang HIP, no vendor intrinsics
// beyond the prelude): int8 Q and K per 32-row block, the fixed-order fp64 K mean, V in e4m3 per
// channel (or fp16), stored transposed [B, Hk, D, Nk_pad] in the target's key order, and the LSE
// correction. Every scalar step is a function of common/quant.h, which the CPU emulator also calls,
// so the workspace matches the emulator bit for bit.
//
// Three entries, launched in order by runtime/src/kernels/attention_runner.cpp:
//   sj_prepare_stats     grid (ceil(Nk/64), Hk, B): per 64-token chunk, fp64 partial K sums (smoothing)
//                        and partial max|V| (fp8 PV). Skipped when neither is needed.
//   sj_prepare_finalize  grid (Hk, B): partials -> k_mean (0 without smoothing) and v_scale (1 for fp16 PV).
//   sj_prepare_quantize  grid (Hq*Nq_pad/32 + 2*Hk*Nk_pad/32, B): one 32-row block of Q or K, or one
//                        32-key group of V, per workgroup.
//
// Compile-time defines: SJ_HEAD_DIM (64|128), SJ_DTYPE (0 bf16, 1 fp16), SJ_PV_FP16 (0|1),
// SJ_PREPARE_THREADS (128|256), SJ_V_PERMUTE (0 natural key order, 1 the sm80 fp8 order of
// arch/mma_sm80.h).
#include "common/online_softmax.h"  // sj_from_dtype
#include "common/prelude.h"
#include "common/quant.h"
#if SJ_V_PERMUTE == 1
#include "arch/mma_sm80.h"
#endif

#define SJ_D SJ_HEAD_DIM
#define SJ_THREADS SJ_PREPARE_THREADS
#define SJ_BLOCK_ELEMENTS (SJ_QUANT_BLOCK * SJ_D)

#if defined(SJ_AMD)
#define SJ_PREPARE_BOUNDS __attribute__((amdgpu_flat_work_group_size(1, SJ_THREADS)))
#else
#define SJ_PREPARE_BOUNDS __launch_bounds__(SJ_THREADS)
#endif

SJ_DEVICE float sj_load_input(const void* base, sj_i64 offset) {
  return sj_from_dtype(((const sj_u16*)base)[offset], SJ_DTYPE);
}

// The key stored in slot `slot` of a group of 32 (the inverse of the target's key -> slot order).
SJ_DEVICE int sj_v_key_of_slot(int slot) {
#if SJ_V_PERMUTE == 1
  return sj_sm80_v_key_of_slot(slot);
#else
  return slot;
#endif
}

SJ_DEVICE int sj_chunks(int seq_kv) { return (seq_kv + SJ_K_MEAN_CHUNK - 1) / SJ_K_MEAN_CHUNK; }

SJ_KERNEL void SJ_PREPARE_BOUNDS sj_prepare_stats(SjPrepareParams p) {
  const int chunk = (int)sj_block_x(), hk = (int)sj_block_y(), b = (int)sj_block_z();
  const int chunks = sj_chunks(p.seq_kv);
  const int first = chunk * SJ_K_MEAN_CHUNK;
  const int last = first + SJ_K_MEAN_CHUNK < p.seq_kv ? first + SJ_K_MEAN_CHUNK : p.seq_kv;
  const sj_i64 partial = (((sj_i64)b * p.heads_kv + hk) * chunks + chunk) * SJ_D;
  // Work items 0..D-1: the K sum of one channel; D..2D-1: max|V| of one channel. Each is a sequential
  // loop over the chunk's tokens in order, which fixes the fp64 summation order of the contract.
  for (int item = (int)sj_thread_x(); item < 2 * SJ_D; item += SJ_THREADS) {
    const int d = item % SJ_D;
    if (item < SJ_D) {
      if (!p.smooth_k) continue;
      const sj_i64 base = b * p.k_stride_b + hk * p.k_stride_h + d;
      double sum = 0.0;
      for (int n = first; n < last; ++n) sum = sj_add_rn_f64(sum, (double)sj_load_input(p.k, base + n * p.k_stride_n));
      p.k_mean_partial[partial + d] = sum;
    } else {
#if !SJ_PV_FP16
      const sj_i64 base = b * p.v_stride_b + hk * p.v_stride_h + d;
      float amax = 0.0f;
      for (int n = first; n < last; ++n) amax = sj_amax_update(amax, sj_load_input(p.v, base + n * p.v_stride_n));
      p.v_amax_partial[partial + d] = amax;
#endif
    }
  }
}

SJ_KERNEL void SJ_PREPARE_BOUNDS sj_prepare_finalize(SjPrepareParams p) {
  const int hk = (int)sj_block_x(), b = (int)sj_block_y();
  const int chunks = sj_chunks(p.seq_kv);
  const sj_i64 head = (sj_i64)b * p.heads_kv + hk;
  for (int d = (int)sj_thread_x(); d < SJ_D; d += SJ_THREADS) {
    float mean = 0.0f;
    if (p.smooth_k) {
      double sum = 0.0;
      for (int c = 0; c < chunks; ++c) sum = sj_add_rn_f64(sum, p.k_mean_partial[(head * chunks + c) * SJ_D + d]);
      mean = sj_k_mean(sum, p.seq_kv);
    }
    p.k_mean[head * SJ_D + d] = mean;
#if SJ_PV_FP16
    p.v_scale[head * SJ_D + d] = 1.0f;
#else
    float amax = 0.0f;
    for (int c = 0; c < chunks; ++c) amax = sj_amax_update(amax, p.v_amax_partial[(head * chunks + c) * SJ_D + d]);
    p.v_scale[head * SJ_D + d] = sj_v_scale(amax);
#endif
  }
}

// Block-wide max|x| (NaN-propagating) through shared memory.
SJ_DEVICE float sj_block_amax(float amax, float* scratch) {
  const int tid = (int)sj_thread_x();
  scratch[tid] = amax;
  sj_barrier();
  for (int width = SJ_THREADS / 2; width > 0; width /= 2) {
    if (tid < width) scratch[tid] = sj_amax_update(scratch[tid], scratch[tid + width]);
    sj_barrier();
  }
  const float result = scratch[0];
  sj_barrier();
  return result;
}

// One 32-row block of Q (is_q) or K: x per element, block amax, int8 with the block scale.
SJ_DEVICE void sj_quantize_rows(const SjPrepareParams& p, bool is_q, int b, int head, int block, float* tile,
                                float* scratch) {
  const int tid = (int)sj_thread_x();
  const int heads = is_q ? p.heads_q : p.heads_kv;
  const int seq = is_q ? p.seq_q : p.seq_kv;
  const int seq_pad = is_q ? p.seq_q_pad : p.seq_kv_pad;
  const void* input = is_q ? p.q : p.k;
  const sj_i64 stride_n = is_q ? p.q_stride_n : p.k_stride_n;
  const sj_i64 base = is_q ? b * p.q_stride_b + head * p.q_stride_h : b * p.k_stride_b + head * p.k_stride_h;
  const int first_row = block * SJ_QUANT_BLOCK;
  const float* mean = p.k_mean + ((sj_i64)b * p.heads_kv + head) * SJ_D;

  float amax = 0.0f;
  for (int e = tid; e < SJ_BLOCK_ELEMENTS; e += SJ_THREADS) {
    const int r = e / SJ_D, d = e % SJ_D;
    const int n = first_row + r;
    float x = 0.0f;
    if (n < seq) {
      const float value = sj_load_input(input, base + n * stride_n + d);
      x = is_q ? sj_q_prescale(value, p.q_mul) : sj_k_smooth(value, mean[d]);
      amax = sj_amax_update(amax, x);
    }
    tile[e] = x;
  }
  amax = sj_block_amax(amax, scratch);  // its barriers also publish `tile`
  const float scale = sj_int8_scale(amax);

  const sj_i64 head_row0 = ((sj_i64)b * heads + head) * seq_pad;
  sj_i8* out = (is_q ? p.q8 : p.k8) + (head_row0 + first_row) * SJ_D;
  for (int w = tid; w < SJ_BLOCK_ELEMENTS / 4; w += SJ_THREADS) {
    sj_u32 packed = 0;
    for (int i = 0; i < 4; ++i) {
      const int e = 4 * w + i;
      const sj_i8 q = first_row + e / SJ_D < seq ? sj_quantize_int8(tile[e], scale) : (sj_i8)0;
      packed |= (sj_u32)(sj_u8)q << (8 * i);
    }
    ((sj_u32*)out)[w] = packed;
  }
  if (tid == 0) (is_q ? p.q_scale : p.k_scale)[head_row0 / SJ_QUANT_BLOCK + block] = scale;

  // LSE correction: delta = x . mean_k of the query head's KV head (fp32, any order per the contract).
  if (is_q && p.want_lse_delta && tid < SJ_QUANT_BLOCK && first_row + tid < seq) {
    const int hk = head / (p.heads_q / p.heads_kv);
    const float* mean_k = p.k_mean + ((sj_i64)b * p.heads_kv + hk) * SJ_D;
    float delta = 0.0f;
    for (int d = 0; d < SJ_D; ++d) delta += tile[tid * SJ_D + d] * mean_k[d];
    p.lse_delta[((sj_i64)b * p.heads_q + head) * p.seq_q + first_row + tid] = delta;
  }
}

// One group of 32 keys of V: quantize and store transposed, keys in the target's slot order.
SJ_DEVICE void sj_quantize_v(const SjPrepareParams& p, int b, int hk, int group, float* tile) {
  const int tid = (int)sj_thread_x();
  const int first_key = group * SJ_QUANT_BLOCK;
  const sj_i64 base = b * p.v_stride_b + hk * p.v_stride_h;
  for (int e = tid; e < SJ_BLOCK_ELEMENTS; e += SJ_THREADS) {
    const int r = e / SJ_D, d = e % SJ_D;
    const int n = first_key + r;
    tile[e] = n < p.seq_kv ? sj_load_input(p.v, base + n * p.v_stride_n + d) : 0.0f;
  }
  sj_barrier();
  const sj_i64 head = (sj_i64)b * p.heads_kv + hk;
  // Work item: (channel d, 4 consecutive slots); 8 items write one channel's 32 slots contiguously.
  for (int w = tid; w < SJ_D * 8; w += SJ_THREADS) {
    const int d = w / 8, slot0 = (w % 8) * 4;
    const sj_i64 row = (head * SJ_D + d) * p.seq_kv_pad + first_key;
#if SJ_PV_FP16
    sj_u16 values[4];
#else
    const float scale = p.v_scale[head * SJ_D + d];
    sj_u32 packed = 0;
#endif
    for (int i = 0; i < 4; ++i) {
      const int key = sj_v_key_of_slot(slot0 + i);
      const bool valid = first_key + key < p.seq_kv;
      const float v = tile[key * SJ_D + d];
#if SJ_PV_FP16
      values[i] = valid ? sj_v_to_fp16(v) : (sj_u16)0;
#else
      packed |= (sj_u32)(valid ? sj_quantize_e4m3(v, scale) : (sj_u8)0) << (8 * i);
#endif
    }
#if SJ_PV_FP16
    sj_u16* out = (sj_u16*)p.v_quant + row + slot0;
    ((sj_u32*)out)[0] = (sj_u32)values[0] | ((sj_u32)values[1] << 16);
    ((sj_u32*)out)[1] = (sj_u32)values[2] | ((sj_u32)values[3] << 16);
#else
    *(sj_u32*)((sj_u8*)p.v_quant + row + slot0) = packed;
#endif
  }
}

SJ_KERNEL void SJ_PREPARE_BOUNDS sj_prepare_quantize(SjPrepareParams p) {
  SJ_SHARED float tile[SJ_BLOCK_ELEMENTS];
  SJ_SHARED float scratch[SJ_THREADS];
  const int b = (int)sj_block_y();
  int index = (int)sj_block_x();
  const int q_blocks = p.seq_q_pad / SJ_QUANT_BLOCK, k_blocks = p.seq_kv_pad / SJ_QUANT_BLOCK;
  if (index < p.heads_q * q_blocks) {
    sj_quantize_rows(p, true, b, index / q_blocks, index % q_blocks, tile, scratch);
    return;
  }
  index -= p.heads_q * q_blocks;
  if (index < p.heads_kv * k_blocks) {
    sj_quantize_rows(p, false, b, index / k_blocks, index % k_blocks, tile, scratch);
    return;
  }
  index -= p.heads_kv * k_blocks;
  sj_quantize_v(p, b, index / k_blocks, index % k_blocks, tile);
}
