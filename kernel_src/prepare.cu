// Prepare stage of docs/NUMERICS.md for both vendors (NVRTC/nvcc and clang HIP, no vendor intrinsics
// beyond the prelude): int8 Q and K per 32-row block, the fixed-order fp64 K mean, V in e4m3 per
// channel (or fp16), stored transposed [B, Hk, D, Nk_pad] in the target's key order, and the LSE
// correction. Every scalar step is a function of common/quant.h, which the CPU emulator also calls,
// so the workspace matches the emulator bit for bit.
//
// Three entries, launched in order by runtime/src/plan/attention_runner.cpp:
//   sj_prepare_stats     grid (ceil(Nk/64), Hk, B) (x: sj_k_mean_chunks): per 64-token chunk, fp64
//                        partial K sums (smoothing) and partial max|V| (fp8 PV). Skipped when neither
//                        is needed.
//   sj_prepare_finalize  grid (Hk, B): partials -> k_mean (0 without smoothing) and v_scale (1 for fp16 PV).
//   sj_prepare_quantize  grid (Hq*Nq_pad/32 + 2*Hk*Nk_pad/32, B) (x: sj_quantize_blocks): one 32-row
//                        block of Q or K, or one 32-key group of V, per workgroup.
//
// Compile-time defines: SJ_HEAD_DIM (64|128), SJ_DTYPE (0 bf16, 1 fp16), SJ_PV_FP16 (0|1),
// SJ_PREPARE_THREADS (128|256), SJ_V_PERMUTE (0 natural key order, 1 the sm80 fp8 order of
// arch/mma_sm80.h), SJ_KEY_MASK (optional, 1: a key mask, docs/NUMERICS.md "Key masks": a masked key
// is left out like a key past Nk everywhere: the K mean (over the valid keys, counted per chunk),
// the K block scales, the V channel scales, and its K and V rows are stored as 0; the quantize
// kernel's K blocks of KV head 0 also write the log2-domain bias of their 32 keys to key_bias).
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

#if SJ_KEY_MASK
// Whether key n of batch item b takes part (its bias is not -inf).
SJ_DEVICE bool sj_key_valid(const SjKeyMask& km, int b, int n) {
  return sj_key_bias_valid(sj_key_bias(km.mask, km.kind, (sj_i64)b * km.stride_b + (sj_i64)n * km.stride_n));
}
#endif

SJ_KERNEL void SJ_PREPARE_BOUNDS sj_prepare_stats(SjPrepareParams p SJ_KEY_MASK_ARGUMENT) {
  const int chunk = (int)sj_block_x(), hk = (int)sj_block_y(), b = (int)sj_block_z();
  const int chunks = sj_k_mean_chunks(p.seq_kv);
  const int first = chunk * SJ_K_MEAN_CHUNK;
  const int last = first + SJ_K_MEAN_CHUNK < p.seq_kv ? first + SJ_K_MEAN_CHUNK : p.seq_kv;
  const sj_i64 partial = (((sj_i64)b * p.heads_kv + hk) * chunks + chunk) * SJ_D;
#if SJ_KEY_MASK
  // The chunk's valid keys, once per block; KV head 0's block also counts them for the K mean.
  SJ_SHARED unsigned char valid[SJ_K_MEAN_CHUNK];
  for (int n = (int)sj_thread_x(); n < SJ_K_MEAN_CHUNK; n += SJ_THREADS)
    valid[n] = first + n < last && sj_key_valid(km, b, first + n) ? 1 : 0;
  sj_barrier();
  if (sj_thread_x() == 0 && hk == 0 && p.smooth_k) {
    int valid_count = 0;
    for (int n = 0; n < SJ_K_MEAN_CHUNK; ++n) valid_count += valid[n];
    km.valid_keys_partial[(sj_i64)b * chunks + chunk] = valid_count;
  }
#define SJ_STATS_KEY_VALID(n) (valid[(n) - first] != 0)
#else
#define SJ_STATS_KEY_VALID(n) true
#endif
  // Work items 0..D-1: the K sum of one channel; D..2D-1: max|V| of one channel. Each is a sequential
  // loop over the chunk's tokens in order, which fixes the fp64 summation order of the contract.
  for (int item = (int)sj_thread_x(); item < 2 * SJ_D; item += SJ_THREADS) {
    const int d = item % SJ_D;
    const int end = d < p.head_dim ? last : first;  // a padded channel reads no token: sum 0, amax 0
    if (item < SJ_D) {
      if (!p.smooth_k) continue;
      const sj_i64 base = b * p.k_stride_b + hk * p.k_stride_h + d;
      double sum = 0.0;
      for (int n = first; n < end; ++n)
        if (SJ_STATS_KEY_VALID(n)) sum = sj_add_rn_f64(sum, (double)sj_load_input(p.k, base + n * p.k_stride_n));
      p.k_mean_partial[partial + d] = sum;
    } else {
#if !SJ_PV_FP16
      const sj_i64 base = b * p.v_stride_b + hk * p.v_stride_h + d;
      float amax = 0.0f;
      for (int n = first; n < end; ++n)
        if (SJ_STATS_KEY_VALID(n)) amax = sj_amax_update(amax, sj_load_input(p.v, base + n * p.v_stride_n));
      p.v_amax_partial[partial + d] = amax;
#endif
    }
  }
}

SJ_KERNEL void SJ_PREPARE_BOUNDS sj_prepare_finalize(SjPrepareParams p SJ_KEY_MASK_ARGUMENT) {
  const int hk = (int)sj_block_x(), b = (int)sj_block_y();
  const int chunks = sj_k_mean_chunks(p.seq_kv);
  const sj_i64 head = (sj_i64)b * p.heads_kv + hk;
  // Work items 0..D-1: the K mean of one channel; D..2D-1: the V scale of one channel, on separate
  // threads (each item is one latency-bound walk over the chunks' partials). Unrolled so the loads
  // are in flight together; the adds stay in chunk order (the contract's).
  for (int item = (int)sj_thread_x(); item < 2 * SJ_D; item += SJ_THREADS) {
    const int d = item % SJ_D;
    if (item < SJ_D) {
      float mean = 0.0f;
      if (p.smooth_k) {
        double sum = 0.0;
#pragma unroll 16
        for (int c = 0; c < chunks; ++c) sum = sj_add_rn_f64(sum, p.k_mean_partial[(head * chunks + c) * SJ_D + d]);
#if SJ_KEY_MASK
        int valid_keys = 0;  // integers: any order
        for (int c = 0; c < chunks; ++c) valid_keys += km.valid_keys_partial[(sj_i64)b * chunks + c];
        mean = sj_masked_k_mean(sum, valid_keys);
#else
        mean = sj_k_mean(sum, p.seq_kv);
#endif
      }
      p.k_mean[head * SJ_D + d] = mean;
    } else {
#if SJ_PV_FP16
      p.v_scale[head * SJ_D + d] = 1.0f;
#else
      float amax = 0.0f;
#pragma unroll 16
      for (int c = 0; c < chunks; ++c) amax = sj_amax_update(amax, p.v_amax_partial[(head * chunks + c) * SJ_D + d]);
      p.v_scale[head * SJ_D + d] = sj_v_scale(amax);
#endif
    }
  }
}

// Block-wide max|x| (NaN-propagating) through shared memory in two levels and two barriers (a tree
// took log2(threads) + 1 barriers): 32 partial maxima of SJ_THREADS / 32 values each, then every
// thread reads the 32. max is exact and NaN propagates in any order, so the order does not matter.
SJ_DEVICE float sj_block_amax(float amax, float* scratch) {
  constexpr int per_partial = SJ_THREADS / 32;
  const int tid = (int)sj_thread_x();
  scratch[tid] = amax;
  sj_barrier();
  if (tid < 32) {
    float partial = scratch[tid * per_partial];
#pragma unroll
    for (int i = 1; i < per_partial; ++i) partial = sj_amax_update(partial, scratch[tid * per_partial + i]);
    scratch[SJ_THREADS + tid] = partial;
  }
  sj_barrier();
  float result = scratch[SJ_THREADS];
#pragma unroll
  for (int i = 1; i < 32; ++i) result = sj_amax_update(result, scratch[SJ_THREADS + i]);
  return result;  // scratch[0 .. SJ_THREADS) is free again; the partials stay until the next call's barrier
}

// 16 bytes moved as one vector access (8 bf16/fp16 inputs, 16 e4m3 or 8 fp16 outputs).
struct alignas(16) SjVec16 {
  sj_u32 word[4];
};
#define SJ_CHUNKS (SJ_D / 8)  // 8-channel chunks per row

// Channels d0..d0+7 of one input row as floats: one 16-byte load when the row is 16-byte aligned
// (`vector`, uniform per block), otherwise eight 2-byte loads (any even or odd strides).
SJ_DEVICE void sj_load_chunk(const void* input, sj_i64 offset, bool vector, float (&out)[8]) {
  if (vector) {
    const SjVec16 v = *(const SjVec16*)((const sj_u16*)input + offset);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      out[2 * i] = sj_from_dtype((sj_u16)(v.word[i] & 0xFFFFu), SJ_DTYPE);
      out[2 * i + 1] = sj_from_dtype((sj_u16)(v.word[i] >> 16), SJ_DTYPE);
    }
  } else {
#pragma unroll
    for (int i = 0; i < 8; ++i) out[i] = sj_load_input(input, offset + i);
  }
}

// True when every row start base + n * stride_n of this block is 16-byte aligned.
SJ_DEVICE bool sj_rows_aligned(const void* input, sj_i64 base, sj_i64 stride_n) {
  return ((((sj_u64)input + (sj_u64)(base * 2)) | (sj_u64)(stride_n * 2)) & 15u) == 0;
}

// The int8 rows of one block from the registers of sj_quantize_rows (8 int8 per 8-byte store);
// rows past the sequence are written as 0. kFast: sj_quantize_int8_by (the scale is
// sj_divisor_fast and every x finite), else sj_quantize_int8.
template <bool kFast, int kPerThread>
SJ_DEVICE void sj_store_int8_rows(const float (&x)[kPerThread][8], const SjDivisor& scale, int first_row, int seq,
                                  sj_i8* out, const bool (&row_kept)[kPerThread]) {
  const int tid = (int)sj_thread_x();
#pragma unroll
  for (int k = 0; k < kPerThread; ++k) {
    const int item = tid + k * SJ_THREADS;
    if (item >= SJ_QUANT_BLOCK * SJ_CHUNKS) continue;
    const int r = item / SJ_CHUNKS, d0 = (item % SJ_CHUNKS) * 8;
    const bool valid = first_row + r < seq && row_kept[k];
    sj_u32 packed[2] = {0u, 0u};
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      const sj_i8 q = kFast ? sj_quantize_int8_by(x[k][i], scale) : sj_quantize_int8(x[k][i], scale.value);
      packed[i >> 2] |= (sj_u32)(sj_u8)q << (8 * (i & 3));
    }
    if (!valid) packed[0] = packed[1] = 0u;
    sj_u32* destination = (sj_u32*)(out + r * SJ_D + d0);  // 8-byte aligned: sections are 256-aligned
    destination[0] = packed[0];
    destination[1] = packed[1];
  }
}

// One 32-row block of Q (is_q) or K: x per element, block amax, int8 with the block scale. Each
// thread keeps its 8-channel chunks in registers; rows past the sequence (and masked keys) and
// channels past p.head_dim are x = 0 (outside the amax) and written as 0.
SJ_DEVICE void sj_quantize_rows(const SjPrepareParams& p, bool is_q, int b, int head, int block,
                                float* scratch SJ_KEY_MASK_ARGUMENT) {
  constexpr int per_thread = (SJ_QUANT_BLOCK * SJ_CHUNKS + SJ_THREADS - 1) / SJ_THREADS;
  const int tid = (int)sj_thread_x();
  const int heads = is_q ? p.heads_q : p.heads_kv;
  const int seq = is_q ? p.seq_q : p.seq_kv;
  const int seq_pad = is_q ? p.seq_q_pad : p.seq_kv_pad;
  const void* input = is_q ? p.q : p.k;
  const sj_i64 stride_n = is_q ? p.q_stride_n : p.k_stride_n;
  const sj_i64 base = is_q ? b * p.q_stride_b + head * p.q_stride_h : b * p.k_stride_b + head * p.k_stride_h;
  const int first_row = block * SJ_QUANT_BLOCK;
  const float* mean = p.k_mean + ((sj_i64)b * p.heads_kv + head) * SJ_D;
  const bool vector = sj_rows_aligned(input, base, stride_n);

  float x[per_thread][8];
  bool row_kept[per_thread];  // false: a masked key (stored as 0 like a row past the end)
  // max|x| as the maximum of the magnitudes' bit patterns: for non-negative floats the integer order
  // is the float order, and every NaN pattern is above +inf, so a NaN still wins (two ALU operations
  // per element instead of four for sj_amax_update's compare, NaN test and select).
  sj_u32 amax_bits = 0u;
#pragma unroll
  for (int k = 0; k < per_thread; ++k) {
    const int item = tid + k * SJ_THREADS;
    const int r = item / SJ_CHUNKS, d0 = (item % SJ_CHUNKS) * 8;
    const int n = first_row + r;
#if SJ_KEY_MASK
    row_kept[k] = is_q || n >= seq || sj_key_valid(km, b, n);
#else
    row_kept[k] = true;
#endif
    if (item < SJ_QUANT_BLOCK * SJ_CHUNKS && n < seq && d0 < p.head_dim && row_kept[k]) {
      float value[8], mean_chunk[8] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
      sj_load_chunk(input, base + n * stride_n + d0, vector, value);
      if (!is_q) {  // two 16-byte loads: k_mean is a 256-aligned section and d0 a multiple of 8
        const SjVec16 low = ((const SjVec16*)(mean + d0))[0], high = ((const SjVec16*)(mean + d0))[1];
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          mean_chunk[i] = sj_bit_cast<float>(low.word[i]);
          mean_chunk[4 + i] = sj_bit_cast<float>(high.word[i]);
        }
      }
#pragma unroll
      for (int i = 0; i < 8; ++i) {
        x[k][i] = is_q ? sj_q_prescale(value[i], p.q_mul) : sj_k_smooth(value[i], mean_chunk[i]);
        const sj_u32 magnitude = sj_bit_cast<sj_u32>(x[k][i]) & 0x7fffffffu;
        amax_bits = magnitude > amax_bits ? magnitude : amax_bits;
      }
    } else {
#pragma unroll
      for (int i = 0; i < 8; ++i) x[k][i] = 0.0f;
    }
  }
  const float amax = sj_block_amax(sj_bit_cast<float>(amax_bits), scratch);
  const float scale = sj_int8_scale(amax);

  const sj_i64 head_row0 = ((sj_i64)b * heads + head) * seq_pad;
  sj_i8* out = (is_q ? p.q8 : p.k8) + (head_row0 + first_row) * SJ_D;
  // A scale in sj_divisor_fast's range (every finite block of ordinary inputs) also means every x of
  // the block is finite: the branch-free quantizer with the hoisted reciprocal, else the general one.
  if (sj_divisor_fast(scale))
    sj_store_int8_rows<true>(x, sj_divisor(scale), first_row, seq, out, row_kept);
  else
    sj_store_int8_rows<false>(x, SjDivisor{scale, 0.0f}, first_row, seq, out, row_kept);
#if SJ_KEY_MASK
  // KV head 0's K blocks write the log2-domain bias of their 32 keys (-inf past Nk) for the attention kernel.
  if (!is_q && head == 0 && tid < SJ_QUANT_BLOCK) {
    const int n = first_row + tid;
    km.key_bias[(sj_i64)b * p.seq_kv_pad + n] =
        n < seq ? sj_key_bias(km.mask, km.kind, (sj_i64)b * km.stride_b + (sj_i64)n * km.stride_n) : sj_neg_inf();
  }
#endif
  if (tid == 0) (is_q ? p.q_scale : p.k_scale)[head_row0 / SJ_QUANT_BLOCK + block] = scale;

  // LSE correction: delta = x . mean_k of the query head's KV head (fp32, any order per the contract).
  // The chunks of one row sit in SJ_CHUNKS consecutive items: partial dots go through shared memory.
  if (is_q && p.want_lse_delta) {
    const int hk = head / (p.heads_q / p.heads_kv);
    const float* mean_k = p.k_mean + ((sj_i64)b * p.heads_kv + hk) * SJ_D;
    float* partial = scratch;  // SJ_THREADS floats; sj_block_amax's last barrier freed it
#pragma unroll
    for (int k = 0; k < per_thread; ++k) {
      const int item = tid + k * SJ_THREADS;
      float dot = 0.0f;
      if (item < SJ_QUANT_BLOCK * SJ_CHUNKS) {
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

// Work items of the V store: (channel d, part), `parts` items per channel, each writing `slots`
// consecutive slots; consecutive threads take consecutive channels (conflict-free shared reads).
// SJ_D * parts == SJ_THREADS, so every thread has one item, and the part (tid / SJ_D) is uniform
// per warp: it is made a template argument, so the slot -> key map is resolved at compile time.
#define SJ_V_PARTS (SJ_THREADS > SJ_D ? SJ_THREADS / SJ_D : 1)
#define SJ_V_SLOTS (SJ_QUANT_BLOCK / SJ_V_PARTS)  // 32, 16 or 8 slots per item

// Slots kSlot0 .. kSlot0 + SJ_V_SLOTS - 1 of channel d of one group of 32 keys staged in `tile`
// (keys past the sequence hold 0), quantized and stored with 16-byte (or 8-byte) stores.
template <int kSlot0>
SJ_DEVICE void sj_store_v_item(const SjPrepareParams& p, const float* tile, sj_i64 head, int d, int first_key) {
  constexpr int slots = SJ_V_SLOTS;
  const sj_i64 row = (head * SJ_D + d) * p.seq_kv_pad + first_key + kSlot0;
#if SJ_PV_FP16
  sj_u32 words[slots / 2];
#pragma unroll
  for (int w = 0; w < slots / 2; ++w) {
    sj_u16 half[2];
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      const int key = sj_v_key_of_slot(kSlot0 + 2 * w + i);
      half[i] = first_key + key < p.seq_kv ? sj_v_to_fp16(tile[key * SJ_D + d]) : (sj_u16)0;
    }
    words[w] = (sj_u32)half[0] | ((sj_u32)half[1] << 16);
  }
  sj_u32* destination = (sj_u32*)((sj_u16*)p.v_quant + row);
#else
  const float scale = p.v_scale[head * SJ_D + d];
  sj_u32 words[slots / 4];
  if (sj_divisor_fast(scale)) {
    // Every V of the channel is finite (its amax is), and keys past the sequence hold 0 in the tile,
    // which quantizes to code 0 as the general path writes for them: no per-key test.
    const SjDivisor divisor = sj_divisor(scale);
#pragma unroll
    for (int w = 0; w < slots / 4; ++w) {
      sj_u32 packed = 0;
#pragma unroll
      for (int i = 0; i < 4; ++i)
        packed |= (sj_u32)sj_quantize_e4m3_by(tile[sj_v_key_of_slot(kSlot0 + 4 * w + i) * SJ_D + d], divisor) << (8 * i);
      words[w] = packed;
    }
  } else {
#pragma unroll
    for (int w = 0; w < slots / 4; ++w) {
      sj_u32 packed = 0;
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const int key = sj_v_key_of_slot(kSlot0 + 4 * w + i);
        const sj_u8 q = first_key + key < p.seq_kv ? sj_quantize_e4m3(tile[key * SJ_D + d], scale) : (sj_u8)0;
        packed |= (sj_u32)q << (8 * i);
      }
      words[w] = packed;
    }
  }
  sj_u32* destination = (sj_u32*)((sj_u8*)p.v_quant + row);
#endif
  // The destination is 16-byte aligned whenever the item writes >= 16 bytes (sections are
  // 256-aligned, seq_kv_pad is a multiple of 128 and kSlot0 of slots).
  constexpr int word_count = (int)(sizeof(words) / sizeof(words[0]));
  if (word_count % 4 == 0) {
#pragma unroll
    for (int w = 0; w < word_count; w += 4) {
      SjVec16 v;
#pragma unroll
      for (int i = 0; i < 4; ++i) v.word[i] = words[w + i];
      *(SjVec16*)(destination + w) = v;
    }
  } else {
#pragma unroll
    for (int w = 0; w < word_count; ++w) destination[w] = words[w];
  }
}

// One group of 32 keys of V: quantize and store transposed, keys in the target's slot order. The
// group is staged in shared memory (loaded in 8-channel chunks); then each thread writes one item.
SJ_DEVICE void sj_quantize_v(const SjPrepareParams& p, int b, int hk, int group, float* tile SJ_KEY_MASK_ARGUMENT) {
  const int tid = (int)sj_thread_x();
  const int first_key = group * SJ_QUANT_BLOCK;
  const sj_i64 base = b * p.v_stride_b + hk * p.v_stride_h;
  const bool vector = sj_rows_aligned(p.v, base, p.v_stride_n);
  for (int item = tid; item < SJ_QUANT_BLOCK * SJ_CHUNKS; item += SJ_THREADS) {
    const int key = item / SJ_CHUNKS, d0 = (item % SJ_CHUNKS) * 8;
    const int n = first_key + key;
    float value[8] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
#if SJ_KEY_MASK
    const bool kept = n < p.seq_kv && sj_key_valid(km, b, n);  // a masked key is staged as 0: code 0
#else
    const bool kept = n < p.seq_kv;
#endif
    if (kept && d0 < p.head_dim) sj_load_chunk(p.v, base + n * p.v_stride_n + d0, vector, value);
#pragma unroll
    for (int i = 0; i < 8; ++i) tile[key * SJ_D + d0 + i] = value[i];
  }
  sj_barrier();
  const sj_i64 head = (sj_i64)b * p.heads_kv + hk;
  static_assert(SJ_D * SJ_V_PARTS == SJ_THREADS, "one V item per thread");
  const int d = tid % SJ_D, part = tid / SJ_D;
  if (part == 0) sj_store_v_item<0>(p, tile, head, d, first_key);
  if (SJ_V_PARTS > 1 && part == 1) sj_store_v_item<SJ_V_SLOTS>(p, tile, head, d, first_key);
  if (SJ_V_PARTS > 2 && part == 2) sj_store_v_item<2 * SJ_V_SLOTS>(p, tile, head, d, first_key);
  if (SJ_V_PARTS > 3 && part == 3) sj_store_v_item<3 * SJ_V_SLOTS>(p, tile, head, d, first_key);
}

SJ_KERNEL void SJ_PREPARE_BOUNDS sj_prepare_quantize(SjPrepareParams p SJ_KEY_MASK_ARGUMENT) {
  SJ_SHARED float tile[SJ_BLOCK_ELEMENTS];
  SJ_SHARED float scratch[SJ_THREADS + 32];
  const int b = (int)sj_block_y();
  int index = (int)sj_block_x();
  const int q_blocks = p.seq_q_pad / SJ_QUANT_BLOCK, k_blocks = p.seq_kv_pad / SJ_QUANT_BLOCK;
  if (index < p.heads_q * q_blocks) {
    sj_quantize_rows(p, true, b, index / q_blocks, index % q_blocks, scratch SJ_KEY_MASK_PASS);
    return;
  }
  index -= p.heads_q * q_blocks;
  if (index < p.heads_kv * k_blocks) {
    sj_quantize_rows(p, false, b, index / k_blocks, index % k_blocks, scratch SJ_KEY_MASK_PASS);
    return;
  }
  index -= p.heads_kv * k_blocks;
  sj_quantize_v(p, b, index / k_blocks, index % k_blocks, tile SJ_KEY_MASK_PASS);
}
