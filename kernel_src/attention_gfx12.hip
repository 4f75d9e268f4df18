// SageAttention forward for RDNA4 (gfx1200/gfx1201): INT8 S^T = K*Q^T and FP8 O^T = V^T*P^T with
// wave32 WMMA, FP32 accumulation, online softmax in the log2 domain (docs/NUMERICS.md, steps 1-9).
//
// Workgroup: SJ_WAVES waves; each wave owns SJ_ROWS_PER_WAVE query rows (1 or 2 WMMA column blocks)
// held in registers for the whole key loop. Key tiles of SJ_BLOCK_N keys (K rows and V^T columns)
// are staged in LDS, shared by the waves, with SJ_STAGES buffers; the next tile's global loads are
// issued into registers after the current tile's softmax, so their latency hides behind the PV WMMAs.
// Fragment layouts and the index math are in arch/mma_gfx12.h (host-tested); the per-element math
// is common/online_softmax.h, shared with the NVIDIA kernels and the CPU emulator.
//
// Compile-time parameters (all required; one code object per combination):
//   SJ_HEAD_DIM 64|128|256, SJ_DTYPE 0 (bf16) | 1 (fp16), SJ_CAUSAL 0|1, SJ_WRITE_LSE 0|1,
//   SJ_WAVES, SJ_ROWS_PER_WAVE 16|32, SJ_BLOCK_N 32|64, SJ_STAGES 1|2. SJ_HEAD_DIM is the kernel head
//   dim; out gets the call's p.head_dim columns (fewer when the call's head dim is zero-padded).
//   SJ_KEY_MASK (optional, 1): a key mask (docs/NUMERICS.md "Key masks"), SjKeyMask as the second
//   kernel argument: the key bias prepare wrote enters every score's fma (the fused form with a
//   bias), a key tile without a valid key is neither loaded nor computed (the decision is uniform:
//   the mask row is per batch item, or item and head), and a row without any valid key writes 0. Without it the code is
//   what it was before masks existed. Masked calls run at 16 rows per wave (the plan's rule).
// Launch (attention_gfx12_desc.cpp): grid (ceil(Nq / (WAVES*ROWS_PER_WAVE)), Hq, B), block WAVES*32.
// Workspace pointers must be 16-byte aligned (the runner's workspace layout guarantees it), and a KV
// head's V workspace must be below 4 GiB (Nk_pad * D < 2^32): per-lane tile offsets are 32-bit.
#include "common/prelude.h"
#include "common/constants.h"
#include "common/online_softmax.h"
#include "common/query_block.h"
#include "arch/mma_gfx12.h"
#ifndef SJ_KEY_MASK
#define SJ_KEY_MASK 0
#endif
#if SJ_KEY_MASK
#include "common/key_mask.h"
#endif

#if !defined(SJ_HEAD_DIM) || !defined(SJ_DTYPE) || !defined(SJ_CAUSAL) || !defined(SJ_WRITE_LSE) || \
    !defined(SJ_WAVES) || !defined(SJ_ROWS_PER_WAVE) || !defined(SJ_BLOCK_N) || !defined(SJ_STAGES)
#error "attention_gfx12.hip needs SJ_HEAD_DIM, SJ_DTYPE, SJ_CAUSAL, SJ_WRITE_LSE, SJ_WAVES, SJ_ROWS_PER_WAVE, SJ_BLOCK_N, SJ_STAGES"
#endif

namespace sj_gfx12 {

constexpr int kD = SJ_HEAD_DIM;
constexpr int kWaves = SJ_WAVES;
constexpr int kRowsPerWave = SJ_ROWS_PER_WAVE;
constexpr int kBlockN = SJ_BLOCK_N;
constexpr int kStages = SJ_STAGES;
constexpr bool kCausal = SJ_CAUSAL != 0;
constexpr bool kWriteLse = SJ_WRITE_LSE != 0;

constexpr int kThreads = kWaves * SJ_GFX12_WAVE;
constexpr int kRowsPerGroup = kWaves * kRowsPerWave;
constexpr int kQBlocks = kRowsPerWave / 16;  // WMMA column blocks (16 queries each) per wave
constexpr int kKBlocks = kBlockN / 16;       // WMMA row blocks (16 keys each) per key tile
constexpr int kSteps = kD / 16;              // WMMA k-steps over channels (QK) / channel blocks (PV)

// LDS rows are padded by 16 bytes: with a row stride of D (or BLOCK_N) bytes every lane of a
// 16-byte read would hit the same banks; +16 makes 8 consecutive rows cover all 32 banks.
constexpr int kLdsPad = 16;
constexpr int kKRowBytes = kD + kLdsPad;       // K tile: BLOCK_N rows (keys) of D channels
constexpr int kVRowBytes = kBlockN + kLdsPad;  // V^T tile: D rows (channels) of BLOCK_N keys
constexpr int kKTileBytes = kBlockN * kKRowBytes;
constexpr int kVTileBytes = kD * kVRowBytes;
constexpr int kStageBytes = kKTileBytes + kVTileBytes;

// Global -> LDS copy in 16-byte chunks spread over the workgroup; K and V^T tiles have as many.
constexpr int kChunks = kBlockN * kD / 16;
constexpr int kChunkIters = (kChunks + kThreads - 1) / kThreads;
constexpr bool kChunksExact = kChunks % kThreads == 0;

static_assert(kD == 64 || kD == 128 || kD == 256, "SJ_HEAD_DIM must be 64, 128 or 256");
static_assert(kRowsPerWave == 16 || kRowsPerWave == 32, "SJ_ROWS_PER_WAVE must be 16 or 32");
static_assert(kBlockN == 32 || kBlockN == 64, "SJ_BLOCK_N must be 32 or 64");
static_assert(kStages == 1 || kStages == 2, "SJ_STAGES must be 1 or 2");
static_assert(kStages * kStageBytes <= 65536, "LDS over 64 KiB");

// Chunks of the next tile's K (or V^T), in flight in registers while the current tile is computed.
struct ChunkRegs {
  sj_v4i chunk[kChunkIters];
};

// Chunk c = tid + i*THREADS of a tile. THREADS is a multiple of both D/16 and BLOCK_N/16 (chunks
// per K row and per V^T row), so chunk i of a thread is its chunk 0 moved down by a fixed number
// of rows: every address below is one per-thread base plus a constant (or uniform) offset, and the
// loop keeps two VGPRs of addresses instead of one per chunk.
static_assert(kThreads % (kD / 16) == 0 && kThreads % (kBlockN / 16) == 0, "chunk rows must be thread-aligned");
constexpr int kKRowsPerPass = kThreads / (kD / 16);       // K rows covered by one pass of the threads
constexpr int kVRowsPerPass = kThreads / (kBlockN / 16);  // V^T rows covered by one pass

SJ_DEVICE bool chunk_exists(int tid, int i) { return kChunksExact || tid + i * kThreads < kChunks; }

// The thread id, opaque to the optimiser: addresses derived from it are recomputed inside the key
// loop (a few VALU ops per tile) instead of being hoisted out and held in VGPRs, which the
// 32-rows-per-wave configs cannot spare.
SJ_DEVICE int opaque_tid(int tid) {
  asm volatile("" : "+v"(tid));
  return tid;
}

// Global offsets are 32-bit and added to a uniform (SGPR) tile base, so each load is one
// global_load_b128 with a scalar base (hence the 4 GiB per KV head limit in the header comment).
// The lane's offset (k_lane_offset / v_lane_offset) is computed once, and the key loop passes it
// through an opaque copy per tile (a v_mov): loop strength reduction otherwise folds it into 64-bit
// per-lane pointers that cost two VALU adds per load stream and tile.
SJ_DEVICE unsigned k_lane_offset(int tid) { return (unsigned)tid * 16; }
SJ_DEVICE unsigned v_lane_offset(int tid, int seq_kv_pad) {
  return (unsigned)(tid / (kBlockN / 16)) * (unsigned)seq_kv_pad + (tid % (kBlockN / 16)) * 16;
}

SJ_DEVICE void load_k_tile(ChunkRegs& regs, const sj_i8* k_head, int tile_start, int tid, unsigned lane_offset) {
#pragma unroll
  for (int i = 0; i < kChunkIters; ++i) {
    // K rows are D contiguous bytes; the pass offset is uniform.
    const sj_i8* src = k_head + (long long)tile_start * kD + i * kThreads * 16;
    if (chunk_exists(tid, i)) regs.chunk[i] = *(const sj_v4i*)(src + lane_offset);
  }
}

SJ_DEVICE void load_v_tile(ChunkRegs& regs, const sj_u8* v_head, int seq_kv_pad, int tile_start, int tid,
                           unsigned lane_offset) {
#pragma unroll
  for (int i = 0; i < kChunkIters; ++i) {
    // V^T rows (channels) are seq_kv_pad bytes apart; the pass offset is uniform.
    const sj_u8* src = v_head + tile_start + (long long)(i * kVRowsPerPass) * seq_kv_pad;
    if (chunk_exists(tid, i)) regs.chunk[i] = *(const sj_v4i*)(src + lane_offset);
  }
}

SJ_DEVICE void store_k_tile(const ChunkRegs& regs, sj_u8* stage, int tid) {
  tid = opaque_tid(tid);
  sj_u8* dst = stage + (tid / (kD / 16)) * kKRowBytes + (tid % (kD / 16)) * 16;
#pragma unroll
  for (int i = 0; i < kChunkIters; ++i)
    if (chunk_exists(tid, i)) *(sj_v4i*)(dst + i * kKRowsPerPass * kKRowBytes) = regs.chunk[i];
}

SJ_DEVICE void store_v_tile(const ChunkRegs& regs, sj_u8* stage, int tid) {
  tid = opaque_tid(tid);
  sj_u8* dst = stage + kKTileBytes + (tid / (kBlockN / 16)) * kVRowBytes + (tid % (kBlockN / 16)) * 16;
#pragma unroll
  for (int i = 0; i < kChunkIters; ++i)
    if (chunk_exists(tid, i)) *(sj_v4i*)(dst + i * kVRowsPerPass * kVRowBytes) = regs.chunk[i];
}

// 16 bytes of the K tile = the A fragments of WMMA steps 2c and 2c+1 of key block kb.
SJ_DEVICE sj_v4i read_k_frags(const sj_u8* k_tile, int kb, int c, int lane) {
  return *(const sj_v4i*)(k_tile + sj_g12_k_frag_key(kb, lane) * kKRowBytes + sj_g12_qk_channel(2 * c, lane, 0));
}

// 16 bytes of the V^T tile = the A fragments of key blocks 2g and 2g+1 for channel block cb.
SJ_DEVICE sj_v4i read_v_frags(const sj_u8* v_tile, int cb, int g, int lane) {
  return *(const sj_v4i*)(v_tile + (cb * 16 + sj_g12_v_frag_channel(lane)) * kVRowBytes + sj_g12_v_frag_key(2 * g, lane, 0));
}

// Sets the values of one query's masked keys of the tile to -inf (lane `lane`'s accumulator layout).
// Keys are taken relative to the lane's first key, key0 = key - offset (visibility is shift
// invariant), so each test compares a constant offset with two per-lane limits instead of computing
// every key. The limits pass through an opaque copy so that each call computes its own compares
// inside its masked branch; otherwise the compiler hoists them into the unmasked path to share them.
SJ_DEVICE void mask_keys(float (&x)[kKBlocks][8], int query_rel, int seq_kv_rel, int lane) {
  asm volatile("" : "+v"(query_rel), "+v"(seq_kv_rel));
#pragma unroll
  for (int kb = 0; kb < kKBlocks; ++kb)
#pragma unroll
    for (int v = 0; v < 8; ++v)
      if (!sj_key_visible(query_rel, sj_g12_s_key(kb, lane, v) - sj_g12_s_key(0, lane, 0), seq_kv_rel, kCausal))
        x[kb][v] = sj_neg_inf();
}

// Stores 8 consecutive output elements; 16-byte stores when the caller's tensor allows it.
SJ_DEVICE void store_out8(sj_u16* dst, const sj_u16 (&vals)[8], bool aligned16) {
  if (aligned16) {
    sj_v4i packed;
    packed.x = (int)(vals[0] | ((sj_u32)vals[1] << 16));
    packed.y = (int)(vals[2] | ((sj_u32)vals[3] << 16));
    packed.z = (int)(vals[4] | ((sj_u32)vals[5] << 16));
    packed.w = (int)(vals[6] | ((sj_u32)vals[7] << 16));
    *(sj_v4i*)dst = packed;
  } else {
#pragma unroll
    for (int e = 0; e < 8; ++e) dst[e] = vals[e];
  }
}

#if SJ_KEY_MASK
// Whether key tile `tile_start` holds a valid key (a bias other than -inf): every wave reads the
// tile's BLOCK_N biases (one or two per lane) and ballots, so the answer is uniform (SGPR).
SJ_DEVICE bool tile_has_valid_key(const float* key_bias, int tile_start, int lane) {
  bool valid = false;
#pragma unroll
  for (int i = 0; i < kBlockN / SJ_GFX12_WAVE; ++i) valid = valid || sj_key_bias_valid(key_bias[tile_start + i * SJ_GFX12_WAVE + lane]);
  return __builtin_amdgcn_ballot_w32(valid) != 0u;
}
#endif

}  // namespace sj_gfx12

SJ_KERNEL __attribute__((amdgpu_flat_work_group_size(sj_gfx12::kThreads, sj_gfx12::kThreads)))
#if SJ_KEY_MASK
void sj_attention_gfx12(SjAttentionParams p, SjKeyMask km) {
#else
void sj_attention_gfx12(SjAttentionParams p) {
#endif
  using namespace sj_gfx12;
  SJ_SHARED __attribute__((aligned(16))) sj_u8 lds[kStages * kStageBytes];

  const int tid = (int)sj_thread_x();
  const int wave = __builtin_amdgcn_readfirstlane(tid / SJ_GFX12_WAVE);  // uniform: lets branches stay scalar
  const int lane = tid % SJ_GFX12_WAVE;
  [[maybe_unused]] const auto [group, hq, b, hk, group_row0] = sj_query_block(p, kRowsPerGroup, /*heaviest_first=*/true);
  const int wave_row0 = group_row0 + wave * kRowsPerWave;
  const int seq_q = p.seq_q, seq_kv = p.seq_kv;
  // A varlen call's batch item runs at the longest query length: its rows past its own length are zero
  // and are not written (the epilogue's rows_q). Unlike the NVIDIA kernels this one does not send such
  // workgroups home early: that branch, or per-item lengths held across the key loop, spilled 2 SGPRs
  // at 2 waves x 16 rows x 64 keys (clang-22).

  // ---- Q fragments and scales, in registers for the whole key loop --------------------------------
  const long long q_head = (long long)b * p.heads_q + hq;
  const long long kv_head = (long long)b * p.heads_kv + hk;
  const sj_i8* q_rows = p.q8 + q_head * p.seq_q_pad * kD;
  sj_v2i q_frag[kQBlocks][kSteps];
  float q_scale[kQBlocks];
#pragma unroll
  for (int qb = 0; qb < kQBlocks; ++qb) {
    const int block_row0 = wave_row0 + qb * 16;  // uniform; one 32-row scale block
    const int query = block_row0 + sj_g12_q_frag_query(lane);
    q_scale[qb] = block_row0 < p.seq_q_pad ? p.q_scale[q_head * (p.seq_q_pad / SJ_QUANT_BLOCK) + block_row0 / SJ_QUANT_BLOCK]
                                           : 0.0f;
#pragma unroll
    for (int c = 0; c < kSteps / 2; ++c) {
      sj_v4i chunk = {0, 0, 0, 0};
      if (query < p.seq_q_pad) chunk = *(const sj_v4i*)(q_rows + (long long)query * kD + sj_g12_qk_channel(2 * c, lane, 0));
      q_frag[qb][2 * c] = chunk.xy;
      q_frag[qb][2 * c + 1] = chunk.zw;
    }
  }

  // ---- Running state: row max m, this half-wave's partial row sum l, O^T accumulators ------------
  float m[kQBlocks], l[kQBlocks];
  sj_v8f o[kQBlocks][kSteps];
#pragma unroll
  for (int qb = 0; qb < kQBlocks; ++qb) {
    m[qb] = sj_neg_inf();
    l[qb] = 0.0f;
#pragma unroll
    for (int cb = 0; cb < kSteps; ++cb) o[qb][cb] = (sj_v8f){0, 0, 0, 0, 0, 0, 0, 0};
  }

  const sj_i8* k_head = p.k8 + kv_head * p.seq_kv_pad * kD;
  const sj_u8* v_head = (const sj_u8*)p.v_quant + kv_head * kD * p.seq_kv_pad;
  // Read-only for the whole kernel, so the constant address space: uniform loads become s_load
  // into SGPRs and q_scale * k_scale a scalar multiply (a global pointer's loads stayed per lane).
  const SJ_G12_CONSTANT float* k_scales = (const SJ_G12_CONSTANT float*)(p.k_scale + kv_head * (p.seq_kv_pad / SJ_QUANT_BLOCK));

  const int group_rows = seq_q - group_row0 < kRowsPerGroup ? seq_q - group_row0 : kRowsPerGroup;
  const int keys = sj_keys_to_visit(group_row0, group_rows, seq_kv, kCausal);
  const int tiles = (keys + kBlockN - 1) / kBlockN;
  const bool wave_active = wave_row0 < seq_q;
  const int wave_last_query = (wave_row0 + kRowsPerWave < seq_q ? wave_row0 + kRowsPerWave : seq_q) - 1;

  // Pipeline: the next tile's global loads are issued after this tile's softmax, when the S
  // accumulators have become 8-bit P and their registers are free; the PV WMMAs hide the latency.
  // STAGES 2 stores them into the other LDS buffer (one barrier per tile); STAGES 1 has one buffer,
  // so it waits for every wave to finish reading it first (two barriers per tile).
  ChunkRegs k_regs, v_regs;
  const unsigned k_offset = k_lane_offset(tid), v_offset = v_lane_offset(tid, p.seq_kv_pad);
#if SJ_KEY_MASK
  // The key tiles without a valid key are skipped: neither loaded nor computed.
  const float* key_bias = km.key_bias + sj_key_mask_row(km.heads, b, hk) * p.seq_kv_pad;
  // Prepare wrote it before this launch and nothing writes it now: readable as constant memory.
  const SJ_G12_CONSTANT float* uniform_bias = (const SJ_G12_CONSTANT float*)key_bias;
  bool tile_valid = tiles > 0 && tile_has_valid_key(key_bias, 0, lane);
  if (tile_valid) {
#endif
  load_k_tile(k_regs, k_head, 0, tid, k_offset);
  load_v_tile(v_regs, v_head, p.seq_kv_pad, 0, tid, v_offset);
  store_k_tile(k_regs, lds, tid);
  store_v_tile(v_regs, lds, tid);
#if SJ_KEY_MASK
  }
#endif
  sj_barrier();

#pragma clang loop unroll(disable)
  for (int t = 0; t < tiles; ++t) {
    const int tile_start = t * kBlockN;
#if SJ_KEY_MASK
    const bool has_next = t + 1 < tiles && tile_has_valid_key(key_bias, tile_start + kBlockN, lane);
#else
    const bool has_next = t + 1 < tiles;
#endif
    sj_u8* const next_stage = lds + (kStages == 1 ? 0 : ((t + 1) & 1) * kStageBytes);
    const sj_u8* k_tile = lds + (kStages == 1 ? 0 : (t & 1) * kStageBytes);
    const sj_u8* v_tile = k_tile + kKTileBytes;

    // Tiles that hold keys past the end or (causal) past a row of the wave's diagonal are masked.
    const bool needs_mask = tile_start + kBlockN > seq_kv || (kCausal && tile_start + kBlockN - 1 > wave_row0);
    // Waves whose rows are all past the end, or (causal) all before this tile, skip the math.
#if SJ_KEY_MASK
    const bool wave_computes = tile_valid && wave_active && (!kCausal || tile_start <= wave_last_query);
#else
    const bool wave_computes = wave_active && (!kCausal || tile_start <= wave_last_query);
#endif
    sj_v8i acc[kQBlocks][kKBlocks];
    sj_v2i p_frag[kQBlocks][kKBlocks];
    float alpha[kQBlocks];
    if (wave_computes) {
      // ---- S^T = K * Q^T (int8 -> int32) ----
      // Software-pipelined by hand: the K fragments of channel pair c+1 are read from LDS while
      // the WMMAs of pair c run, and a scheduling fence per pair stops the compiler from hoisting
      // every read to the top (which holds D/8 VGPRs per key block and spills at 32 rows a wave).
#pragma unroll
      for (int kb = 0; kb < kKBlocks; ++kb)
#pragma unroll
        for (int qb = 0; qb < kQBlocks; ++qb) acc[qb][kb] = (sj_v8i){0, 0, 0, 0, 0, 0, 0, 0};
      sj_v4i k_next[kKBlocks];
#pragma unroll
      for (int kb = 0; kb < kKBlocks; ++kb) k_next[kb] = read_k_frags(k_tile, kb, 0, lane);
#pragma unroll
      for (int c = 0; c < kSteps / 2; ++c) {
        sj_v4i k_cur[kKBlocks];
#pragma unroll
        for (int kb = 0; kb < kKBlocks; ++kb) {
          k_cur[kb] = k_next[kb];
          if (c + 1 < kSteps / 2) k_next[kb] = read_k_frags(k_tile, kb, c + 1, lane);
        }
#pragma unroll
        for (int kb = 0; kb < kKBlocks; ++kb)
#pragma unroll
          for (int qb = 0; qb < kQBlocks; ++qb) {
            acc[qb][kb] = sj_g12_wmma_iu8(k_cur[kb].xy, q_frag[qb][2 * c], acc[qb][kb]);
            acc[qb][kb] = sj_g12_wmma_iu8(k_cur[kb].zw, q_frag[qb][2 * c + 1], acc[qb][kb]);
          }
        __builtin_amdgcn_sched_barrier(0);
      }
      // S is complete here: without this pin ROCm 6.4's LLVM sinks each query block's QK WMMAs down
      // to that block's softmax, which keeps every K fragment of the tile live across the first
      // block's softmax (+32 VGPRs at D=128: it spilled at 32 rows per wave under hipRTC).
#pragma unroll
      for (int qb = 0; qb < kQBlocks; ++qb)
#pragma unroll
        for (int kb = 0; kb < kKBlocks; ++kb) asm volatile("" : "+v"(acc[qb][kb]));

      // ---- Scores, mask, online softmax, P quantization (per query column, per lane) ----
      // The fused form (docs/NUMERICS.md, "Fused scores"): the running state m is the shifted
      // maximum (row max - P_OFFSET, rounded up), the max runs over float(dot) per 32-key group (one
      // K scale: scaling by a positive scale commutes with max), and each p is exp2 of one fma.
      float k_scale[kKBlocks / 2];
#pragma unroll
      for (int g = 0; g < kKBlocks / 2; ++g) k_scale[g] = k_scales[tile_start / SJ_QUANT_BLOCK + g];

#pragma unroll
      for (int qb = 0; qb < kQBlocks; ++qb) {
        const int query = wave_row0 + qb * 16 + sj_g12_s_query(lane);
        float dot[kKBlocks][8];
#pragma unroll
        for (int kb = 0; kb < kKBlocks; ++kb)
#pragma unroll
          for (int v = 0; v < 8; ++v) dot[kb][v] = (float)acc[qb][kb][v];
        const int key0 = tile_start + sj_g12_s_key(0, lane, 0);
#if SJ_KEY_MASK
        // With a key mask the fused form runs on the biased score x = fma(dot, sq*sk, bias) (one fma
        // per score; docs/NUMERICS.md "Key masks", the fused form): the maximum is taken over x, and
        // each argument is x - c. The 8 keys of a lane in key block kb are consecutive and the same
        // for the 16 lanes of a half-wave (sj_g12_s_key: the half's first key is 16 past the
        // other's), so both halves' biases are uniform: scalar loads (constant address space) and one
        // select per score, since the 32-row configs have no VGPRs for a per-lane copy of them.
        const bool upper_half = sj_g12_lane_half(lane) != 0;
#pragma unroll
        for (int kb = 0; kb < kKBlocks; ++kb) {
          const int bias0 = tile_start + sj_g12_key_slot(kb, 0);
#pragma unroll
          for (int v = 0; v < 8; ++v) {
            const float lower = uniform_bias[bias0 + v], upper = uniform_bias[bias0 + 16 + v];
            dot[kb][v] = sj_masked_fused_score(dot[kb][v], q_scale[qb], k_scale[kb / 2], upper_half ? upper : lower);
          }
          // One key block's 16 biases at a time: all of a 64-key tile's (64 SGPRs) would spill SGPRs.
          if (kKBlocks > 2) __builtin_amdgcn_sched_barrier(0);
        }
        if (needs_mask) mask_keys(dot, query - key0, seq_kv - key0, lane);
        float lane_max = sj_neg_inf();  // over x, so fmax ignores a NaN score as the kernel's v_max does
#pragma unroll
        for (int kb = 0; kb < kKBlocks; ++kb)
#pragma unroll
          for (int v = 0; v < 8; ++v) lane_max = __builtin_fmaxf(lane_max, dot[kb][v]);
        lane_max = sj_masked_shifted_max(lane_max);
#else
        if (needs_mask) mask_keys(dot, query - key0, seq_kv - key0, lane);
        float lane_max = 0.0f;  // the first group's value (fmax(-inf, x) is not x for a NaN x)
#pragma unroll
        for (int g = 0; g < kKBlocks / 2; ++g) {
          float dot_max = sj_neg_inf();  // folds into the first v_max3
#pragma unroll
          for (int kb = 2 * g; kb < 2 * g + 2; ++kb)
#pragma unroll
            for (int v = 0; v < 8; ++v) dot_max = __builtin_fmaxf(dot_max, dot[kb][v]);
          const float group_max = sj_shifted_group_max(dot_max, q_scale[qb], k_scale[g]);
          lane_max = g == 0 ? group_max : __builtin_fmaxf(lane_max, group_max);
        }
#endif
        lane_max = sj_shifted_round_up(lane_max);
        const float m_new = __builtin_fmaxf(m[qb], sj_g12_max_halves(lane_max));
        // = sj_rescale(m, m_new) without branches: exp2(-inf) is 0 for a row that saw nothing yet.
        const float ratio = sj_exp2(m[qb] - m_new);
        alpha[qb] = m[qb] == m_new ? 1.0f : ratio;
        m[qb] = m_new;
        float arg[kKBlocks][8];
#if SJ_KEY_MASK
        // A masked key's x is -inf already, so its x - c is -inf (sj_masked_fused_arg takes c = 0 for
        // a row without a valid key yet): no second mask.
#pragma unroll
        for (int kb = 0; kb < kKBlocks; ++kb)
#pragma unroll
          for (int v = 0; v < 8; ++v) arg[kb][v] = sj_masked_fused_arg(dot[kb][v], m_new);
#else
#pragma unroll
        for (int kb = 0; kb < kKBlocks; ++kb)
#pragma unroll
          for (int v = 0; v < 8; ++v) arg[kb][v] = sj_fused_arg(dot[kb][v], q_scale[qb], k_scale[kb / 2], m_new);
        // Masked again after the fma: -inf times a zero (or NaN) scale is NaN.
        if (needs_mask) mask_keys(arg, query - key0, seq_kv - key0, lane);
#endif
        // l = l * alpha + the sum of the quantized p, accumulated onto the rescaled l (two
        // v_dot4_f32_fp8_fp8 per key block). Each half-wave keeps the sum over its own keys; they are
        // added once, in the epilogue.
        float row_sum = l[qb] * alpha[qb];
#pragma unroll
        for (int kb = 0; kb < kKBlocks; ++kb) {
          float prob[8];
#pragma unroll
          for (int v = 0; v < 8; ++v) prob[v] = sj_exp2(arg[kb][v]);
          p_frag[qb][kb] = sj_g12_pack_p(prob);
          row_sum = sj_g12_sum_p(p_frag[qb][kb], row_sum);
        }
        l[qb] = row_sum;
      }
    }

    if (has_next) {
      unsigned k_lane = k_offset, v_lane = v_offset;
      asm volatile("" : "+v"(k_lane), "+v"(v_lane));
      load_k_tile(k_regs, k_head, tile_start + kBlockN, tid, k_lane);
      load_v_tile(v_regs, v_head, p.seq_kv_pad, tile_start + kBlockN, tid, v_lane);
    }

    if (wave_computes) {
      // ---- O^T = O^T * alpha + V^T * P^T, the WMMAs accumulating straight into O (C operand) ----
      // alpha is exactly 1 for a row whose maximum did not move (sj_rescale), so once the maxima
      // settle the whole wave skips the rescale: a scalar branch on a ballot, no VALU per tile.
      bool moved = false;
#pragma unroll
      for (int qb = 0; qb < kQBlocks; ++qb) moved = moved || alpha[qb] != 1.0f;
      if (__builtin_amdgcn_ballot_w32(moved) != 0u) {
#pragma unroll
        for (int qb = 0; qb < kQBlocks; ++qb)
#pragma unroll
          for (int cb = 0; cb < kSteps; ++cb) o[qb][cb] *= alpha[qb];
      }
      // Hand pipeline: channel block cb+1's V^T fragments are read while cb's WMMAs run.
      sj_v4i v_next[kKBlocks / 2];
#pragma unroll
      for (int g = 0; g < kKBlocks / 2; ++g) v_next[g] = read_v_frags(v_tile, 0, g, lane);
#pragma unroll
      for (int cb = 0; cb < kSteps; ++cb) {
        sj_v4i v_cur[kKBlocks / 2];
#pragma unroll
        for (int g = 0; g < kKBlocks / 2; ++g) {
          v_cur[g] = v_next[g];
          if (cb + 1 < kSteps) v_next[g] = read_v_frags(v_tile, cb + 1, g, lane);
        }
#pragma unroll
        for (int g = 0; g < kKBlocks / 2; ++g)
#pragma unroll
          for (int qb = 0; qb < kQBlocks; ++qb) {
            o[qb][cb] = sj_g12_wmma_fp8(v_cur[g].xy, p_frag[qb][2 * g], o[qb][cb]);
            o[qb][cb] = sj_g12_wmma_fp8(v_cur[g].zw, p_frag[qb][2 * g + 1], o[qb][cb]);
          }
        __builtin_amdgcn_sched_barrier(0);
      }
    }

    if (kStages == 1) sj_barrier();  // every wave is done reading the only buffer
    if (has_next) {
      store_k_tile(k_regs, next_stage, tid);
      store_v_tile(v_regs, next_stage, tid);
    }
    sj_barrier();
#if SJ_KEY_MASK
    // The next tile is computed when it was loaded; a skipped one leaves the next stage stale, which
    // nothing reads, and the loop's search goes on from it.
    tile_valid = has_next;
#endif
  }

  // ---- Epilogue: out = (o / l) * sv in the input dtype; LSE ---------------------------------------
  if (!wave_active) return;
  sj_u16* out = (sj_u16*)p.out;
  const bool aligned16 = ((unsigned long long)p.out % 16 == 0) && p.o_stride_b % 8 == 0 && p.o_stride_h % 8 == 0 &&
                         p.o_stride_n % 8 == 0;
  const float* v_scale = p.v_scale + kv_head * kD;
#if SJ_KEY_MASK
  // A varlen call's item: its rows of the packed out (o_stride_b is 0), read here, after the key loop.
  const long long out_row0 = sj_seq_start(km.cu_seqlens_q, b, km.total_q);
  const int rows_q = sj_seq_length(km.cu_seqlens_q, b, p.seq_q, km.total_q);
#else
  const long long out_row0 = 0;
  const int rows_q = seq_q;
#endif
#pragma unroll
  for (int qb = 0; qb < kQBlocks; ++qb) {
    const float row_sum = sj_g12_sum_halves(l[qb]);
    const int query = wave_row0 + qb * 16 + sj_g12_o_query(lane);
    if (query >= rows_q) continue;
    sj_u16* out_row = out + (long long)b * p.o_stride_b + (long long)hq * p.o_stride_h + (out_row0 + query) * p.o_stride_n;
#pragma unroll
    for (int cb = 0; cb < kSteps; ++cb) {
      const int d0 = cb * 16 + sj_g12_o_channel(lane, 0);
      if (d0 >= p.head_dim) continue;  // columns past the call's head dim are padding
      const sj_v4f sv_lo = *(const sj_v4f*)(v_scale + d0);
      const sj_v4f sv_hi = *(const sj_v4f*)(v_scale + d0 + 4);
      const float sv[8] = {sv_lo.x, sv_lo.y, sv_lo.z, sv_lo.w, sv_hi.x, sv_hi.y, sv_hi.z, sv_hi.w};
      sj_u16 vals[8];
#pragma unroll
#if SJ_KEY_MASK
      for (int v = 0; v < 8; ++v) vals[v] = sj_to_dtype(sj_masked_output(o[qb][cb][v], row_sum, sv[v]), SJ_DTYPE);
#else
      for (int v = 0; v < 8; ++v) vals[v] = sj_to_dtype(sj_output(o[qb][cb][v], row_sum, sv[v]), SJ_DTYPE);
#endif
      store_out8(out_row + d0, vals, aligned16);
    }
    if (kWriteLse && sj_g12_lane_half(lane) == 0) {
      const long long row = q_head * p.seq_q + query;  // lse_delta's (the workspace's [B, Hq, Nq])
      const float delta = p.lse_delta ? p.lse_delta[row] : 0.0f;
#if SJ_KEY_MASK
      p.lse[sj_lse_row(km.cu_seqlens_q, b, hq, p.heads_q, p.seq_q, km.total_q, query)] = sj_lse_fused(m[qb], row_sum, delta);
#else
      p.lse[row] = sj_lse_fused(m[qb], row_sum, delta);
#endif
    }
  }
}
