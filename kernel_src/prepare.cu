// Prepare stage of docs/NUMERICS.md for both vendors (NVRTC/nvcc and clang HIP; vendor code only in
// the prelude, common/quant.h's packed code forms and the block max below): int8 Q and K per 32-row block, the fixed-order fp64 K mean, V in e4m3 per
// channel (or fp16), stored transposed [B, Hk, D, Nk_pad] in the target's key order, and the LSE
// correction. Every scalar step is a function of common/quant.h, which the CPU emulator also calls,
// so the workspace matches the emulator bit for bit.
//
// Three entries, launched in order by runtime/src/plan/attention_runner.cpp:
//   sj_prepare_stats     grid (ceil(Nk/64), Hk, B) (x: sj_k_mean_chunks): per 64-token chunk, fp64
//                        partial K sums of its sampled keys (smoothing; every SJ_K_MEAN_STRIDE-th key,
//                        so an eighth of K is read; with a mask, a chunk none of whose sampled keys is
//                        valid sums all its valid keys) and partial max|V| over every key (fp8 PV).
//                        Skipped when neither is needed.
//   sj_prepare_finalize  grid (Hk, B, D / SJ_FINALIZE_CHANNELS): partials -> k_mean (0 without smoothing) and
//                        v_scale (1 for fp16 PV), SJ_FINALIZE_CHANNELS channels of each per workgroup.
//                        Skipped when p.finalize_in_quantize (at most 16 chunks): then every quantize
//                        workgroup that needs them sums its head's partials with the same functions.
//   sj_prepare_quantize  grid (Hq*Nq_pad/128 + 2*Hk*Nk_pad/128, B) (x: sj_quantize_workgroups): one
//                        tile of 128 rows of Q or K (four 32-row scale blocks), or of 128 keys of V,
//                        per workgroup, visited in the reverse of the stats launch's order (K and V
//                        of the last batch item's last head first, Q last).
//
// Compile-time defines: SJ_HEAD_DIM (64|128|256), SJ_DTYPE (0 bf16, 1 fp16), SJ_PV_FP16 (0|1),
// SJ_PREPARE_THREADS (128|256), SJ_V_PERMUTE (0 natural key order, 1 the sm80 fp8 order of
// arch/mma_sm80.h), SJ_KEY_MASK (optional, 1: a key mask, docs/NUMERICS.md "Key masks": a masked key
// is left out like a key past Nk everywhere: the K mean (over the valid keys of each chunk's step, counted per chunk),
// the K block scales, the V channel scales, and its K and V rows are stored as 0; the quantize
// kernel's K blocks of KV head 0 (of every head, with a per-head mask) also write the log2-domain
// bias of their 32 keys to key_bias). A packed
// varlen call (docs/NUMERICS.md "Varlen") is a key-mask call whose SjKeyMask carries cu_seqlens: item b
// reads its own rows of the packed inputs and its keys past its length are its masked keys.
//
// Padded head dims: SJ_HEAD_DIM is the kernel head dim; a call of p.head_dim < SJ_HEAD_DIM channels
// (a multiple of 8) is read only in its own channels, and every workspace channel past it is written
// as if its input were 0: K sum and mean 0, V amax 0 so v_scale 0 (fp8; 1 for fp16 PV) and every
// quantized value 0 (sj_quantize_* give 0 for a zero scale, never a division by zero).
#include "common/constants.h"
#include "common/prelude.h"
#include "common/quant.h"
#ifndef SJ_KEY_MASK
#define SJ_KEY_MASK 0
#endif
#if SJ_KEY_MASK
#include "common/key_mask.h"
// The key mask arrives as each entry's second argument (kernel_src/common/params.h SjKeyMask).
#define SJ_KEY_MASK_ARGUMENT , SjKeyMask km
#define SJ_KEY_MASK_PASS , km
#else
#define SJ_KEY_MASK_ARGUMENT
#define SJ_KEY_MASK_PASS
#endif
#if SJ_V_PERMUTE == 1
#include "arch/mma_sm80.h"
#endif

#define SJ_D SJ_HEAD_DIM
#define SJ_THREADS SJ_PREPARE_THREADS

#if defined(SJ_AMD)
#define SJ_PREPARE_BOUNDS __attribute__((amdgpu_flat_work_group_size(1, SJ_THREADS)))
#else
// At least four workgroups per SM (64 registers at 256 threads): the quantize kernel streams, and
// more resident warps keep more loads in flight. At D = 256 a thread's share of a row block is twice
// as large and 64 registers spill (240 bytes per thread under NVRTC 13): two workgroups.
#define SJ_PREPARE_BOUNDS __launch_bounds__(SJ_THREADS, SJ_D > 128 ? 2 : 4)
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

#if SJ_KEY_MASK
// Batch item b's keys: its first row in the packed k and v (0 for a dense call) and how many.
SJ_DEVICE int sj_key_start(const SjKeyMask& km, int b) { return sj_seq_start(km.cu_seqlens_k, b, km.total_k); }
SJ_DEVICE int sj_key_count(const SjPrepareParams& p, const SjKeyMask& km, int b) {
  return sj_seq_length(km.cu_seqlens_k, b, p.seq_kv, km.total_k);
}
// The log2-domain bias of key n < sj_key_count of batch item b for KV head hk: the caller's mask's, 0
// without one (a varlen call: kind 0).
SJ_DEVICE float sj_key_bias_at(const SjKeyMask& km, int b, int hk, int n) {
  return km.kind == 0 ? 0.0f
                      : sj_key_bias(km.mask, km.kind, sj_key_mask_offset(km.stride_b, km.stride_h, km.stride_n, b, hk, n));
}
// Whether key n of batch item b takes part for KV head hk: inside its sequence, and its bias is not -inf.
SJ_DEVICE bool sj_key_valid(const SjPrepareParams& p, const SjKeyMask& km, int b, int hk, int n) {
  return n < sj_key_count(p, km, b) && sj_key_bias_valid(sj_key_bias_at(km, b, hk, n));
}
// Whether KV head hk owns a mask row (writes its key_bias and its valid-key counts): head 0 of each
// batch item, or every head with a per-head mask.
SJ_DEVICE bool sj_writes_mask_row(const SjKeyMask& km, int hk) { return hk == 0 || km.heads > 1; }
#define SJ_KEY_START(b) sj_key_start(km, b)
#else
#define SJ_KEY_START(b) 0
#endif

SJ_KERNEL void SJ_PREPARE_BOUNDS sj_prepare_stats(SjPrepareParams p SJ_KEY_MASK_ARGUMENT) {
  const int chunk = (int)sj_block_x(), hk = (int)sj_block_y(), b = (int)sj_block_z();
  const int chunks = sj_k_mean_chunks(p.seq_kv);
  const int first = chunk * SJ_K_MEAN_CHUNK;
  const int last = first + SJ_K_MEAN_CHUNK < p.seq_kv ? first + SJ_K_MEAN_CHUNK : p.seq_kv;
  const sj_i64 partial = (((sj_i64)b * p.heads_kv + hk) * chunks + chunk) * SJ_D;
#if SJ_KEY_MASK
  // The chunk's valid keys, once per block; from them every thread takes the chunk's K-mean step (its
  // sampled keys, or all its keys when none of those is valid), and the block of the mask row's owner
  // counts the valid keys of that step for the K mean's divisor.
  SJ_SHARED unsigned char valid[SJ_K_MEAN_CHUNK];
  for (int n = (int)sj_thread_x(); n < SJ_K_MEAN_CHUNK; n += SJ_THREADS)
    valid[n] = first + n < last && sj_key_valid(p, km, b, hk, first + n) ? 1 : 0;
  sj_barrier();
  int sampled_valid = 0;
  for (int n = 0; n < SJ_K_MEAN_CHUNK; n += SJ_K_MEAN_STRIDE) sampled_valid += valid[n];
  const int k_step = sj_masked_k_mean_step(sampled_valid);
  if (sj_thread_x() == 0 && sj_writes_mask_row(km, hk) && p.smooth_k) {
    int summed = 0;
    for (int n = 0; n < SJ_K_MEAN_CHUNK; n += k_step) summed += valid[n];
    km.valid_keys_partial[sj_key_mask_row(km.heads, b, hk) * chunks + chunk] = summed;
  }
#define SJ_STATS_KEY_VALID(n) (valid[(n) - first] != 0)
#else
  const int k_step = SJ_K_MEAN_STRIDE;
#define SJ_STATS_KEY_VALID(n) true
#endif
  // Work items 0..D-1: the K sum of one channel over the chunk's keys of step k_step; D..2D-1: max|V| of one
  // channel over all its keys. Each is a sequential loop over the chunk's tokens in order, which fixes
  // the fp64 summation order of the contract.
  for (int item = (int)sj_thread_x(); item < 2 * SJ_D; item += SJ_THREADS) {
    const int d = item % SJ_D;
    const int end = d < p.head_dim ? last : first;  // a padded channel reads no token: sum 0, amax 0
    if (item < SJ_D) {
      if (!p.smooth_k) continue;
      const sj_i64 base = b * p.k_stride_b + (sj_i64)SJ_KEY_START(b) * p.k_stride_n + hk * p.k_stride_h + d;
      double sum = 0.0;
      for (int n = first; n < end; n += k_step)
        if (SJ_STATS_KEY_VALID(n)) sum = sj_add_rn_f64(sum, (double)sj_load_input(p.k, base + n * p.k_stride_n));
      p.k_mean_partial[partial + d] = sum;
    } else {
#if !SJ_PV_FP16
      const sj_i64 base = b * p.v_stride_b + (sj_i64)SJ_KEY_START(b) * p.v_stride_n + hk * p.v_stride_h + d;
      float amax = 0.0f;
      for (int n = first; n < end; ++n)
        if (SJ_STATS_KEY_VALID(n)) amax = sj_amax_update(amax, sj_load_input(p.v, base + n * p.v_stride_n));
      p.v_amax_partial[partial + d] = amax;
#endif
    }
  }
}

// The K mean of KV head (b, hk) from its fp64 sum over the chunks' partials in chunk order (the
// contract's): over the keys, or with a mask over the valid keys (integers: any order); 0 without
// smoothing.
SJ_DEVICE float sj_k_mean_of_sum(const SjPrepareParams& p, int b, int hk, double sum SJ_KEY_MASK_ARGUMENT) {
  if (!p.smooth_k) return 0.0f;
#if SJ_KEY_MASK
  const int chunks = sj_k_mean_chunks(p.seq_kv);
  int valid_keys = 0;
  const sj_i64 row = sj_key_mask_row(km.heads, b, hk);
  for (int c = 0; c < chunks; ++c) valid_keys += km.valid_keys_partial[row * chunks + c];
  return sj_masked_k_mean(sum, valid_keys);
#else
  return sj_k_mean(sum, sj_k_mean_samples(p.seq_kv));
#endif
}

// A V channel's scale from its max|V| over the keys: sj_v_scale for fp8 PV, 1 for fp16 PV.
SJ_DEVICE float sj_v_scale_of_amax(float amax) { return SJ_PV_FP16 ? 1.0f : sj_v_scale(amax); }

// The K mean of channel d of KV head (b, hk) from the stats kernel's partials (none without smoothing).
SJ_DEVICE float sj_head_k_mean(const SjPrepareParams& p, int b, int hk, int d SJ_KEY_MASK_ARGUMENT) {
  const int chunks = sj_k_mean_chunks(p.seq_kv);
  const sj_i64 head = (sj_i64)b * p.heads_kv + hk;
  double sum = 0.0;
  if (p.smooth_k) {
#pragma unroll 16
    for (int c = 0; c < chunks; ++c) sum = sj_add_rn_f64(sum, p.k_mean_partial[(head * chunks + c) * SJ_D + d]);
  }
  return sj_k_mean_of_sum(p, b, hk, sum SJ_KEY_MASK_PASS);
}

// The V scale of channel d of KV head (b, hk) from the chunks' max|V| (none for fp16 PV).
SJ_DEVICE float sj_head_v_scale(const SjPrepareParams& p, int b, int hk, int d) {
  const int chunks = sj_k_mean_chunks(p.seq_kv);
  const sj_i64 head = (sj_i64)b * p.heads_kv + hk;
  float amax = 0.0f;
  if (!SJ_PV_FP16) {
#pragma unroll 16
    for (int c = 0; c < chunks; ++c) amax = sj_amax_update(amax, p.v_amax_partial[(head * chunks + c) * SJ_D + d]);
  }
  return sj_v_scale_of_amax(amax);
}

// The finalize kernel: workgroup (hk, b, z) takes SJ_FINALIZE_CHANNELS channels of K's mean and V's
// scale (channels z * SJ_FINALIZE_CHANNELS onwards). It stages SJ_FINALIZE_PASS chunks of their
// partials in shared memory at a time, every load of a pass in flight together (one thread walking
// its channel's partials from global memory kept 16 loads in flight: a round trip per 16 chunks),
// then one thread per channel folds them in chunk order, as sj_head_k_mean and sj_head_v_scale do.
#define SJ_FINALIZE_PASS 64  // chunks per pass: 64 x 32 channels x (8 + 4) bytes = 24 KiB
#define SJ_FINALIZE_STAGE (SJ_FINALIZE_PASS * SJ_FINALIZE_CHANNELS / SJ_THREADS)  // staged partials per thread
SJ_KERNEL void SJ_PREPARE_BOUNDS sj_prepare_finalize(SjPrepareParams p SJ_KEY_MASK_ARGUMENT) {
  SJ_SHARED double k_partial[SJ_FINALIZE_PASS * SJ_FINALIZE_CHANNELS];
  SJ_SHARED float v_partial[SJ_FINALIZE_PASS * SJ_FINALIZE_CHANNELS];
  static_assert(SJ_THREADS >= 2 * SJ_FINALIZE_CHANNELS && SJ_D % SJ_FINALIZE_CHANNELS == 0, "one walk per thread");
  static_assert(SJ_FINALIZE_STAGE * SJ_THREADS == SJ_FINALIZE_PASS * SJ_FINALIZE_CHANNELS, "whole staging items");
  const int tid = (int)sj_thread_x();
  const int hk = (int)sj_block_x(), b = (int)sj_block_y(), d0 = (int)sj_block_z() * SJ_FINALIZE_CHANNELS;
  const sj_i64 head = (sj_i64)b * p.heads_kv + hk;
  const int chunks = sj_k_mean_chunks(p.seq_kv);
  const bool want_k = p.smooth_k != 0, want_v = SJ_PV_FP16 == 0;
  // Threads 0..C-1 fold the K sums of channels d0 + tid, threads C..2C-1 the V maxima of d0 + tid - C.
  const int channel = tid % SJ_FINALIZE_CHANNELS;
  double sum = 0.0;
  float amax = 0.0f;
#pragma unroll 1
  for (int c0 = 0; c0 < chunks; c0 += SJ_FINALIZE_PASS) {
    if (c0 > 0) sj_barrier();  // every walk is done with the previous pass
    const int pass = chunks - c0 < SJ_FINALIZE_PASS ? chunks - c0 : SJ_FINALIZE_PASS;
    double k_loaded[SJ_FINALIZE_STAGE];  // all loads issued before the first store
    float v_loaded[SJ_FINALIZE_STAGE];
#pragma unroll
    for (int k = 0; k < SJ_FINALIZE_STAGE; ++k) {
      const int i = tid + k * SJ_THREADS;
      const sj_i64 at = (head * chunks + c0 + i / SJ_FINALIZE_CHANNELS) * SJ_D + d0 + i % SJ_FINALIZE_CHANNELS;
      const bool inside = i < pass * SJ_FINALIZE_CHANNELS;
      k_loaded[k] = inside && want_k ? p.k_mean_partial[at] : 0.0;
      v_loaded[k] = inside && want_v ? p.v_amax_partial[at] : 0.0f;
    }
#pragma unroll
    for (int k = 0; k < SJ_FINALIZE_STAGE; ++k) {
      k_partial[tid + k * SJ_THREADS] = k_loaded[k];
      v_partial[tid + k * SJ_THREADS] = v_loaded[k];
    }
    sj_barrier();
    if (tid < SJ_FINALIZE_CHANNELS && want_k)
      for (int c = 0; c < pass; ++c) sum = sj_add_rn_f64(sum, k_partial[c * SJ_FINALIZE_CHANNELS + channel]);
    else if (tid >= SJ_FINALIZE_CHANNELS && tid < 2 * SJ_FINALIZE_CHANNELS && want_v)
      for (int c = 0; c < pass; ++c) amax = sj_amax_update(amax, v_partial[c * SJ_FINALIZE_CHANNELS + channel]);
  }
  if (tid < SJ_FINALIZE_CHANNELS)
    p.k_mean[head * SJ_D + d0 + channel] = sj_k_mean_of_sum(p, b, hk, sum SJ_KEY_MASK_PASS);
  else if (tid < 2 * SJ_FINALIZE_CHANNELS)
    p.v_scale[head * SJ_D + d0 + channel] = sj_v_scale_of_amax(amax);
}

// Block-wide max|x| (NaN-propagating) of the threads' magnitude bits (x & 0x7fffffff: for
// non-negative floats the integer order is the float order, and every NaN pattern is above +inf), for
// block `slot` of a tile (each slot has its own partials, so consecutive blocks need no second barrier).
// NVIDIA sm_80 and later: one redux.sync per warp, the warps' maxima in the slot's partials, one
// barrier. Elsewhere: two levels through shared memory and two barriers, in floats. max is exact and
// NaN propagates in any order, so the result is the block's amax either way (a NaN block: some NaN).
// scratch[0 .. SJ_THREADS) is free once it returns.
#define SJ_TILE_BLOCKS (SJ_QUANT_TILE / SJ_QUANT_BLOCK)  // 32-row blocks (scales) per tile
#define SJ_SCRATCH_FLOATS (SJ_THREADS + 32 * SJ_TILE_BLOCKS)
SJ_DEVICE float sj_block_amax(sj_u32 magnitude_bits, float* scratch, int slot) {
  const int tid = (int)sj_thread_x();
  float* partials = scratch + SJ_THREADS + 32 * slot;
#if defined(SJ_NVIDIA) && __CUDA_ARCH__ >= 800
  constexpr int warps = SJ_THREADS / 32;
  sj_u32* partial = (sj_u32*)partials;
  const sj_u32 warp_max = __reduce_max_sync(0xffffffffu, magnitude_bits);
  if ((tid & 31) == 0) partial[tid >> 5] = warp_max;
  sj_barrier();
  sj_u32 result = partial[0];
#pragma unroll
  for (int i = 1; i < warps; ++i) result = partial[i] > result ? partial[i] : result;
  return sj_bit_cast<float>(result);
#else
  constexpr int per_partial = SJ_THREADS / 32;
  scratch[tid] = sj_bit_cast<float>(magnitude_bits);
  sj_barrier();
  if (tid < 32) {
    float partial = scratch[tid * per_partial];
#pragma unroll
    for (int i = 1; i < per_partial; ++i) partial = sj_amax_update(partial, scratch[tid * per_partial + i]);
    partials[tid] = partial;
  }
  sj_barrier();
  float result = partials[0];
#pragma unroll
  for (int i = 1; i < 32; ++i) result = sj_amax_update(result, partials[i]);
  return result;
#endif
}

// 16 bytes moved as one vector access (8 bf16/fp16 inputs, 16 e4m3 or 8 fp16 outputs).
struct alignas(16) SjVec16 {
  sj_u32 word[4];
};
struct alignas(8) SjVec8 {
  sj_u32 word[2];
};
#define SJ_CHUNKS (SJ_D / 8)  // 8-channel chunks per row

// Channels d0..d0+7 of one input row as their 16-bit values (channel i in half i of the 16 bytes):
// one 16-byte load when the row is 16-byte aligned (`vector`, uniform per workgroup), otherwise
// eight 2-byte loads (any even or odd strides).
SJ_DEVICE SjVec16 sj_load_raw_chunk(const void* input, sj_i64 offset, bool vector) {
  if (vector) return *(const SjVec16*)((const sj_u16*)input + offset);
  SjVec16 v;
#pragma unroll
  for (int i = 0; i < 4; ++i)
    v.word[i] = (sj_u32)((const sj_u16*)input)[offset + 2 * i] |
                ((sj_u32)((const sj_u16*)input)[offset + 2 * i + 1] << 16);
  return v;
}

// Input value i (0..7) of a chunk.
SJ_DEVICE float sj_chunk_value(const SjVec16& v, int i) {
  return sj_from_dtype((sj_u16)(i & 1 ? v.word[i >> 1] >> 16 : v.word[i >> 1] & 0xFFFFu), SJ_DTYPE);
}

// True when every row start base + n * stride_n of this tensor head is 16-byte aligned.
SJ_DEVICE bool sj_rows_aligned(const void* input, sj_i64 base, sj_i64 stride_n) {
  return ((((sj_u64)input + (sj_u64)(base * 2)) | (sj_u64)(stride_n * 2)) & 15u) == 0;
}

// The chunks of one block a thread owns: items tid + k * SJ_THREADS of the block's
// SJ_QUANT_BLOCK * SJ_CHUNKS (row, 8-channel chunk) items; the channel chunk of each is the same in
// every block of the tile.
#define SJ_ROW_ITEMS (SJ_QUANT_BLOCK * SJ_CHUNKS)
#define SJ_ROW_PER_THREAD ((SJ_ROW_ITEMS + SJ_THREADS - 1) / SJ_THREADS)

// The int8 rows of one block from the registers of sj_quantize_rows (8 int8 per 8-byte store);
// rows past the sequence are written as 0. kFast (the scale is sj_divisor_fast and every x finite):
// sj_int8_word of the quotient, the code of sj_quantize_int8_by; else sj_quantize_int8.
template <bool kFast>
SJ_DEVICE void sj_store_int8_rows(const float (&x)[SJ_ROW_PER_THREAD][8], const SjDivisor& scale, int first_row,
                                  int seq, sj_i8* out) {
  const int tid = (int)sj_thread_x();
#pragma unroll
  for (int k = 0; k < SJ_ROW_PER_THREAD; ++k) {
    const int item = tid + k * SJ_THREADS;
    if (item >= SJ_ROW_ITEMS) continue;
    const int r = item / SJ_CHUNKS, d0 = (item % SJ_CHUNKS) * 8;
    sj_u32 packed[2] = {0u, 0u};
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      const sj_u32 code = kFast ? sj_int8_word(sj_div_rn_by(x[k][i], scale))
                                : (sj_u32)(sj_u8)sj_quantize_int8(x[k][i], scale.value);
      packed[i >> 2] |= (code & 0xFFu) << (8 * (i & 3));
    }
    if (first_row + r >= seq) packed[0] = packed[1] = 0u;
    *(SjVec8*)(out + r * SJ_D + d0) = SjVec8{{packed[0], packed[1]}};  // 8-byte aligned: sections are 256-aligned
  }
}

// One tile (SJ_TILE_BLOCKS blocks of 32 rows) of Q (is_q) or K: per block x per element, block amax,
// int8 with the block scale. Each thread keeps its 8-channel chunks in registers and loads the next
// block's while it quantizes this one; rows past the sequence (and masked keys) and channels past
// p.head_dim are x = 0 (outside the amax) and written as 0 (code 0 of x = 0).
// head_stats: the K mean of the tile's KV head (K; Q with an LSE correction), in shared memory.
SJ_DEVICE void sj_quantize_rows(const SjPrepareParams& p, bool is_q, int b, int head, int tile, float* scratch,
                                const float* head_stats SJ_KEY_MASK_ARGUMENT) {
  const int tid = (int)sj_thread_x();
  const int heads = is_q ? p.heads_q : p.heads_kv;
#if SJ_KEY_MASK
  // A varlen call's batch item b: its own rows of the packed input, and its own length.
  const int seq = is_q ? sj_seq_length(km.cu_seqlens_q, b, p.seq_q, km.total_q) : sj_key_count(p, km, b);
  const int start = is_q ? sj_seq_start(km.cu_seqlens_q, b, km.total_q) : sj_key_start(km, b);
#else
  const int seq = is_q ? p.seq_q : p.seq_kv;
  const int start = 0;
#endif
  const int seq_pad = is_q ? p.seq_q_pad : p.seq_kv_pad;
  const void* input = is_q ? p.q : p.k;
  const sj_i64 stride_n = is_q ? p.q_stride_n : p.k_stride_n;
  const sj_i64 base = (is_q ? b * p.q_stride_b + head * p.q_stride_h : b * p.k_stride_b + head * p.k_stride_h) +
                      (sj_i64)start * stride_n;
  const bool vector = sj_rows_aligned(input, base, stride_n);
  const sj_i64 head_row0 = ((sj_i64)b * heads + head) * seq_pad;
  const int tile_row0 = tile * SJ_QUANT_TILE;

  // The thread's channel chunks (the same in every block) and, for K, their means.
  int item_row[SJ_ROW_PER_THREAD], item_d0[SJ_ROW_PER_THREAD];
  float mean[SJ_ROW_PER_THREAD][8];
  const float* k_mean = head_stats;
#pragma unroll
  for (int k = 0; k < SJ_ROW_PER_THREAD; ++k) {
    const int item = tid + k * SJ_THREADS;
    item_row[k] = item / SJ_CHUNKS;
    item_d0[k] = (item % SJ_CHUNKS) * 8;
    if (item >= SJ_ROW_ITEMS || item_d0[k] >= p.head_dim) item_row[k] = SJ_QUANT_TILE;  // never a row: x = 0
#pragma unroll
    for (int i = 0; i < 8; ++i) mean[k][i] = 0.0f;
    if (!is_q && item_row[k] < SJ_QUANT_TILE) {  // two 16-byte loads (head_stats is 16-byte aligned)
      const SjVec16 low = ((const SjVec16*)(k_mean + item_d0[k]))[0], high = ((const SjVec16*)(k_mean + item_d0[k]))[1];
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        mean[k][i] = sj_bit_cast<float>(low.word[i]);
        mean[k][4 + i] = sj_bit_cast<float>(high.word[i]);
      }
    }
  }
  // The chunks of block `block` of the tile (zeros where there is no input).
  auto load_block = [&](int block, SjVec16 (&raw)[SJ_ROW_PER_THREAD]) {
#pragma unroll
    for (int k = 0; k < SJ_ROW_PER_THREAD; ++k) {
      const int n = tile_row0 + block * SJ_QUANT_BLOCK + item_row[k];
      raw[k] = SjVec16{{0u, 0u, 0u, 0u}};
      if (item_row[k] < SJ_QUANT_TILE && n < seq)
        raw[k] = sj_load_raw_chunk(input, base + n * stride_n + item_d0[k], vector);
    }
  };

  SjVec16 next[SJ_ROW_PER_THREAD];
  load_block(0, next);
#pragma unroll 1
  for (int slot = 0; slot < SJ_TILE_BLOCKS; ++slot) {
    const int first_row = tile_row0 + slot * SJ_QUANT_BLOCK;
    float x[SJ_ROW_PER_THREAD][8];
    // max|x| as the maximum of the magnitudes' bit patterns (two ALU operations per element).
    sj_u32 amax_bits = 0u;
#pragma unroll
    for (int k = 0; k < SJ_ROW_PER_THREAD; ++k) {
      const int n = first_row + item_row[k];
#if SJ_KEY_MASK
      const bool valid = item_row[k] < SJ_QUANT_TILE && n < seq && (is_q || sj_key_valid(p, km, b, head, n));
#else
      const bool valid = item_row[k] < SJ_QUANT_TILE && n < seq;
#endif
#pragma unroll
      for (int i = 0; i < 8; ++i) {
        const float value = sj_chunk_value(next[k], i);
        x[k][i] = !valid ? 0.0f : is_q ? sj_q_prescale(value, p.q_mul) : sj_k_smooth(value, mean[k][i]);
        const sj_u32 magnitude = sj_bit_cast<sj_u32>(x[k][i]) & 0x7fffffffu;
        amax_bits = magnitude > amax_bits ? magnitude : amax_bits;
      }
    }
    if (slot + 1 < SJ_TILE_BLOCKS) load_block(slot + 1, next);  // in flight across the block max
    const float amax = sj_block_amax(amax_bits, scratch, slot);
    const float scale = sj_int8_scale(amax);

    sj_i8* out = (is_q ? p.q8 : p.k8) + (head_row0 + first_row) * SJ_D;
    // A scale in sj_divisor_fast's range (every finite block of ordinary inputs) also means every x of
    // the block is finite: the branch-free quantizer with the hoisted reciprocal, else the general one.
    if (sj_divisor_fast(scale))
      sj_store_int8_rows<true>(x, sj_divisor(scale), first_row, seq, out);
    else
      sj_store_int8_rows<false>(x, SjDivisor{scale, 0.0f}, first_row, seq, out);
#if SJ_KEY_MASK
    // The mask row owner's K blocks write the log2-domain bias of their 32 keys (-inf past Nk) for the
    // attention kernel.
    if (!is_q && sj_writes_mask_row(km, head) && tid < SJ_QUANT_BLOCK) {
      const int n = first_row + tid;
      km.key_bias[sj_key_mask_row(km.heads, b, head) * p.seq_kv_pad + n] = n < seq ? sj_key_bias_at(km, b, head, n)
                                                                                   : sj_neg_inf();
    }
#endif
    if (tid == 0) (is_q ? p.q_scale : p.k_scale)[(head_row0 + first_row) / SJ_QUANT_BLOCK] = scale;

    // LSE correction: delta = x . mean_k of the query head's KV head (fp32, any order per the contract).
    // The chunks of one row sit in SJ_CHUNKS consecutive items: partial dots go through shared memory.
    if (is_q && p.want_lse_delta) {
      const float* mean_k = head_stats;
      float* partial = scratch;  // SJ_THREADS floats, free after sj_block_amax
#pragma unroll
      for (int k = 0; k < SJ_ROW_PER_THREAD; ++k) {
        const int item = tid + k * SJ_THREADS;
        float dot = 0.0f;
        if (item < SJ_ROW_ITEMS) {
          const int d0 = (item % SJ_CHUNKS) * 8;
#pragma unroll
          for (int i = 0; i < 8; ++i) dot += x[k][i] * mean_k[d0 + i];
        }
        partial[tid] = dot;
        sj_barrier();
        // Items of this pass cover rows (k * SJ_THREADS) / SJ_CHUNKS onwards, SJ_THREADS / SJ_CHUNKS of them.
        const int rows_per_pass = SJ_THREADS / SJ_CHUNKS;
        if (tid < rows_per_pass) {
          const int r = (k * SJ_THREADS) / SJ_CHUNKS + tid;
          float delta = 0.0f;
#pragma unroll
          for (int c = 0; c < SJ_CHUNKS; ++c) delta += partial[tid * SJ_CHUNKS + c];
          if (r < SJ_QUANT_BLOCK && first_row + r < seq)
            p.lse_delta[((sj_i64)b * p.heads_q + head) * p.seq_q + first_row + r] = delta;
        }
        sj_barrier();
      }
    }
  }
}

// A V tile is staged in passes of at most 128 channels: a whole 256-channel tile of 16-bit inputs
// would take 64 KiB of shared memory (more than a static NVIDIA allocation, all of a gfx12 LDS).
#define SJ_V_PASS_D (SJ_D < 128 ? SJ_D : 128)
#define SJ_V_PASSES (SJ_D / SJ_V_PASS_D)
#define SJ_V_PASS_CHUNKS (SJ_V_PASS_D / 8)  // 8-channel chunks of a pass

// Work items of the V store: (channel pair, part) of a pass. A thread takes two neighbouring channels,
// whose 16-bit inputs of one key are one 32-bit shared-memory word, and SJ_V_SLOTS consecutive slots of
// them, written in runs of SJ_V_RUN slots; consecutive threads take consecutive pairs
// (conflict-free reads). SJ_V_PAIRS * SJ_V_PARTS == SJ_THREADS: every thread has one item per pass.
#define SJ_V_PAIRS (SJ_V_PASS_D / 2)
#define SJ_V_PARTS (SJ_THREADS / SJ_V_PAIRS)     // 2, 4 or 8
#define SJ_V_SLOTS (SJ_QUANT_TILE / SJ_V_PARTS)  // 64, 32 or 16 slots per item
#define SJ_V_RUN 16

// The tile key in slot run0 + s of a V tile, for a run start run0 that is a multiple of 16 and
// s < 16: a group of 32 keys keeps each half in place (arch/mma_sm80.h), so the key is run0 plus the
// compile-time key of slot s, and a run's shared-memory reads are constant offsets from one address.
SJ_DEVICE int sj_v_run_key(int run0, int s) { return run0 + sj_v_key_of_slot(s); }

// kWords 32-bit words stored with 16-byte accesses (the destination is 16-byte aligned: sections
// are 256-aligned, seq_kv_pad is a multiple of 128 and a run starts at a multiple of 16 slots).
template <int kWords>
SJ_DEVICE void sj_store_words(sj_u32* destination, const sj_u32 (&words)[kWords]) {
  static_assert(kWords % 4 == 0, "whole 16-byte stores");
#pragma unroll
  for (int w = 0; w < kWords; w += 4)
    *(SjVec16*)(destination + w) = SjVec16{{words[w], words[w + 1], words[w + 2], words[w + 3]}};
}

// Slots run0 .. run0 + SJ_V_RUN - 1 of channel d, v[s] the value of slot run0 + s (keys past the
// sequence hold 0), quantized and stored.
SJ_DEVICE void sj_store_v_run(const SjPrepareParams& p, const float (&v)[SJ_V_RUN], sj_i64 head, int d, int first_key,
                              int run0, const float* v_scale) {
  constexpr int slots = SJ_V_RUN;
  const sj_i64 row = (head * SJ_D + d) * p.seq_kv_pad + first_key + run0;
#if SJ_PV_FP16
  sj_u32 words[slots / 2];
#pragma unroll
  for (int w = 0; w < slots / 2; ++w) {
    sj_u16 half[2];
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      const int key = sj_v_run_key(run0, 2 * w + i);
      half[i] = first_key + key < p.seq_kv ? sj_v_to_fp16(v[2 * w + i]) : (sj_u16)0;
    }
    words[w] = (sj_u32)half[0] | ((sj_u32)half[1] << 16);
  }
  sj_store_words((sj_u32*)((sj_u16*)p.v_quant + row), words);
#else
  const float scale = v_scale[d];
  sj_u32 words[slots / 4];
  if (sj_divisor_fast(scale)) {
    // Every V of the channel is finite (its amax is), and keys past the sequence hold 0, which
    // quantizes to code 0 as the general path writes for them: no per-key test.
    const SjDivisor divisor = sj_divisor(scale);
#pragma unroll
    for (int w = 0; w < slots / 4; ++w) {
      float quotient[4];
#pragma unroll
      for (int i = 0; i < 4; ++i)
        quotient[i] = sj_with_sign_of(sj_div_rn_by(sj_abs(v[4 * w + i]), divisor), v[4 * w + i]);
      words[w] = sj_e4m3x4(quotient);  // the codes of sj_quantize_e4m3_by
    }
  } else {
#pragma unroll
    for (int w = 0; w < slots / 4; ++w) {
      sj_u32 packed = 0;
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const int key = sj_v_run_key(run0, 4 * w + i);
        const sj_u8 q = first_key + key < p.seq_kv ? sj_quantize_e4m3(v[4 * w + i], scale) : (sj_u8)0;
        packed |= (sj_u32)q << (8 * i);
      }
      words[w] = packed;
    }
  }
  sj_store_words((sj_u32*)((sj_u8*)p.v_quant + row), words);
#endif
}

// The item (pair, part) of the pass whose first channel is pass_d0: its runs over the pass staged in
// `tile` (the inputs' 16-bit values, [key][channel of the pass], two channels per word), both
// channels of each run.
SJ_DEVICE void sj_store_v_item(const SjPrepareParams& p, const sj_u32* tile, sj_i64 head, int pair, int part,
                               int pass_d0, int first_key, const float* v_scale) {
#pragma unroll 1
  for (int run0 = part * SJ_V_SLOTS; run0 < (part + 1) * SJ_V_SLOTS; run0 += SJ_V_RUN) {
    sj_u32 raw[SJ_V_RUN];
#pragma unroll
    for (int s = 0; s < SJ_V_RUN; ++s) raw[s] = tile[sj_v_run_key(run0, s) * SJ_V_PAIRS + pair];
    float v[SJ_V_RUN];
#pragma unroll
    for (int s = 0; s < SJ_V_RUN; ++s) v[s] = sj_from_dtype((sj_u16)(raw[s] & 0xFFFFu), SJ_DTYPE);
    sj_store_v_run(p, v, head, pass_d0 + 2 * pair, first_key, run0, v_scale);
#pragma unroll
    for (int s = 0; s < SJ_V_RUN; ++s) v[s] = sj_from_dtype((sj_u16)(raw[s] >> 16), SJ_DTYPE);
    sj_store_v_run(p, v, head, pass_d0 + 2 * pair + 1, first_key, run0, v_scale);
  }
}

// One tile of SJ_QUANT_TILE keys of V: quantize and store transposed, keys in the target's slot
// order. Each pass's 16-bit inputs are staged in shared memory (8-channel chunks, 16 bytes each, all
// of a thread's loads in flight together); then each thread writes one item of the pass.
#define SJ_V_STAGE_PER_THREAD (SJ_QUANT_TILE * SJ_V_PASS_CHUNKS / SJ_THREADS)
// head_stats: the V scales of the KV head, in shared memory.
SJ_DEVICE void sj_quantize_v(const SjPrepareParams& p, int b, int hk, int tile_index, SjVec16* tile,
                             const float* head_stats SJ_KEY_MASK_ARGUMENT) {
  const int tid = (int)sj_thread_x();
  const int first_key = tile_index * SJ_QUANT_TILE;
  const sj_i64 base = b * p.v_stride_b + (sj_i64)SJ_KEY_START(b) * p.v_stride_n + hk * p.v_stride_h;
  const bool vector = sj_rows_aligned(p.v, base, p.v_stride_n);
  const sj_i64 head = (sj_i64)b * p.heads_kv + hk;
  static_assert(SJ_V_STAGE_PER_THREAD * SJ_THREADS == SJ_QUANT_TILE * SJ_V_PASS_CHUNKS, "whole staging passes");
  static_assert(SJ_V_PAIRS * SJ_V_PARTS == SJ_THREADS && SJ_V_SLOTS % SJ_V_RUN == 0,
                "one V item of whole runs per thread");
#pragma unroll
  for (int pass = 0; pass < SJ_V_PASSES; ++pass) {
    const int pass_d0 = pass * SJ_V_PASS_D;
    SjVec16 raw[SJ_V_STAGE_PER_THREAD];
#pragma unroll
    for (int k = 0; k < SJ_V_STAGE_PER_THREAD; ++k) {
      const int item = tid + k * SJ_THREADS;
      const int key = item / SJ_V_PASS_CHUNKS, d0 = pass_d0 + (item % SJ_V_PASS_CHUNKS) * 8;
      const int n = first_key + key;
      raw[k] = SjVec16{{0u, 0u, 0u, 0u}};  // the bits of +0
#if SJ_KEY_MASK
      const bool kept = n < p.seq_kv && sj_key_valid(p, km, b, hk, n);  // a masked key is staged as +0: code 0
#else
      const bool kept = n < p.seq_kv;
#endif
      if (kept && d0 < p.head_dim) raw[k] = sj_load_raw_chunk(p.v, base + n * p.v_stride_n + d0, vector);
    }
    if (pass > 0) sj_barrier();  // every thread has read the previous pass's tile
    // item tid + k * SJ_THREADS == key * SJ_V_PASS_CHUNKS + (d0 - pass_d0) / 8: the tile is [key][channel]
#pragma unroll
    for (int k = 0; k < SJ_V_STAGE_PER_THREAD; ++k) tile[tid + k * SJ_THREADS] = raw[k];
    sj_barrier();
    sj_store_v_item(p, (const sj_u32*)tile, head, tid % SJ_V_PAIRS, tid / SJ_V_PAIRS, pass_d0, first_key, head_stats);
  }
}

// The KV head's K mean (what 1: K, 0: Q with an LSE correction) or V scales (what 2) into head_stats,
// for a quantize workgroup: the finalize kernel's, or (p.finalize_in_quantize: short key sequences,
// where that launch costs more than every workgroup summing the few partials itself) computed by the
// finalize kernel's functions, so the values are the same; then a head's first K and V tiles (first)
// also write the workspace's k_mean and v_scale (the attention kernel reads v_scale).
SJ_DEVICE void sj_head_stats_to_shared(const SjPrepareParams& p, int b, int hk, int what, bool first,
                                       float* head_stats SJ_KEY_MASK_ARGUMENT) {
  const sj_i64 stats = ((sj_i64)b * p.heads_kv + hk) * SJ_D;
  float* workspace = what == 2 ? p.v_scale : p.k_mean;
  for (int d = (int)sj_thread_x(); d < SJ_D; d += SJ_THREADS) {
    if (!p.finalize_in_quantize) {
      head_stats[d] = workspace[stats + d];
      continue;
    }
    const float value = what == 2 ? sj_head_v_scale(p, b, hk, d) : sj_head_k_mean(p, b, hk, d SJ_KEY_MASK_PASS);
    head_stats[d] = value;
    if (first) workspace[stats + d] = value;
  }
  sj_barrier();
}

SJ_KERNEL void SJ_PREPARE_BOUNDS sj_prepare_quantize(SjPrepareParams p SJ_KEY_MASK_ARGUMENT) {
  SJ_SHARED SjVec16 tile[SJ_QUANT_TILE * SJ_V_PASS_CHUNKS];  // one V pass's 16-bit inputs
  SJ_SHARED float scratch[SJ_SCRATCH_FLOATS];
  SJ_SHARED __attribute__((aligned(16))) float head_stats[SJ_D];  // the K mean or the V scales of the tile's KV head
  // The workgroups visit the tiles in the reverse of the stats launch's order: the last batch item
  // first, in it the last KV head first, each head's K and V tiles together, then the Q tiles. The
  // stats launch read every K and V row just before, so the rows it read last (the last heads) may
  // still be in L2 when these workgroups read them again.
  const int b = p.batch - 1 - (int)sj_block_y();
  const int index = (int)sj_block_x();
  const int q_tiles = p.seq_q_pad / SJ_QUANT_TILE, k_tiles = p.seq_kv_pad / SJ_QUANT_TILE;
  if (index < 2 * p.heads_kv * k_tiles) {  // (head from the last, K tiles then V tiles)
    const int hk = p.heads_kv - 1 - index / (2 * k_tiles), tile_index = index % (2 * k_tiles);
    if (tile_index < k_tiles) {
      sj_head_stats_to_shared(p, b, hk, 1, tile_index == 0, head_stats SJ_KEY_MASK_PASS);
      sj_quantize_rows(p, false, b, hk, tile_index, scratch, head_stats SJ_KEY_MASK_PASS);
    } else {
      sj_head_stats_to_shared(p, b, hk, 2, tile_index == k_tiles, head_stats SJ_KEY_MASK_PASS);
      sj_quantize_v(p, b, hk, tile_index - k_tiles, tile, head_stats SJ_KEY_MASK_PASS);
    }
    return;
  }
  const int q_index = index - 2 * p.heads_kv * k_tiles;  // (query head, tile)
  const int head = q_index / q_tiles;
  if (p.want_lse_delta)
    sj_head_stats_to_shared(p, b, head / (p.heads_q / p.heads_kv), 0, false, head_stats SJ_KEY_MASK_PASS);
  sj_quantize_rows(p, true, b, head, q_index % q_tiles, scratch, head_stats SJ_KEY_MASK_PASS);
}
