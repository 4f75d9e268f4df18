// Attention stage of docs/NUMERICS.md for NVIDIA Hopper (sm_90a) with warpgroup MMA: INT8 QK^T
// (wgmma m64nNk32 s8, Q and K from shared memory), online softmax in the log2 domain, PV in native
// e4m3 (wgmma m64nDk32, P from registers, V from shared memory) into a fresh fp32 accumulator per
// key tile that is added to O (two-level accumulation: Hopper's fp8 MMA keeps ~22 bits).
//
// One CTA = SJ_WARPGROUPS warpgroups of 128 threads; warpgroup wg owns query rows 64 wg .. 64 wg + 63
// of the CTA's block (warp w of the CTA: rows 16 w .. 16 w + 15, as in the accumulator layout of
// arch/wgmma_sm90.h). The int8 Q tile is loaded once; K tiles [BLOCK_N, D] int8 and V tiles
// [D, BLOCK_N] e4m3 (keys contiguous, in the sm80 slot order written by prepare) stream through
// SJ_STAGES shared-memory buffers, stored in the swizzled K-major layout wgmma reads: with cp.async
// by every thread (SJ_TMA 0), or (SJ_TMA 1) as two tensor copies per tile issued by thread 0 that
// complete on the stage's mbarrier (the tensor maps arrive as the second kernel argument).
// Latency is hidden across warpgroups rather than inside one: the best H200 configs run three
// warpgroups per SM (three 128-thread CTAs with min_blocks=3, or one CTA of three warpgroups: 168
// registers each), whose softmax and wgmma phases interleave. (Measured and dropped: S(j+1) or
// PV(j-1) overlapped with the softmax of j, split PV, fp16 PV, TMA with full/empty mbarrier pairs;
// each needs registers that cost the third warpgroup — docs/NVIDIA.md. With one or two warpgroups
// SJ_TMA keeps the CTA barrier as the buffer release; three release a stage by counting, below.)
//
// Grid: (ceil(Nq / BLOCK_M), Hq, B); causal grids run the heaviest query blocks first.
// Defines: SJ_HEAD_DIM (64|128; 256 runs attention_sm80), SJ_WARPS (4|8|12: one to three warpgroups), SJ_BLOCK_N (64|128), SJ_STAGES (2|3), SJ_DTYPE,
// SJ_CAUSAL, SJ_WRITE_LSE, SJ_MIN_BLOCKS, SJ_TMA (0|1), SJ_KEY_MASK (optional, 1: a key mask,
// docs/NUMERICS.md "Key masks", SjKeyMask as the last kernel argument: the key bias prepare wrote is
// added to every score, a key tile without a valid key is not computed (it is still copied, so
// every stage's phases stay in step), and a row without any valid key writes 0). SJ_HEAD_DIM is the kernel head dim; out gets the call's
// p.head_dim columns (fewer when the call's head dim is zero-padded).
#include "arch/mma_sm80.h"
#include "arch/wgmma_sm90.h"
#include "common/online_softmax.h"
#include "common/output_store.h"
#include "common/prelude.h"
#include "common/query_block.h"

#define SJ_D SJ_HEAD_DIM
#define SJ_WARPGROUPS (SJ_WARPS / 4)
#define SJ_THREADS (SJ_WARPGROUPS * 128)
#define SJ_BLOCK_M (SJ_WARPGROUPS * 64)
#define SJ_Q_TILE_BYTES (SJ_BLOCK_M * SJ_D)
#define SJ_K_TILE_BYTES (SJ_BLOCK_N * SJ_D)
#define SJ_V_TILE_BYTES (SJ_D * SJ_BLOCK_N)
#define SJ_STAGE_BYTES (SJ_K_TILE_BYTES + SJ_V_TILE_BYTES)
#define SJ_S_REGS (SJ_BLOCK_N / 2)  // score accumulator registers per thread (64 x BLOCK_N / 128)
#define SJ_O_REGS (SJ_D / 2)        // output accumulator registers per thread
#define SJ_QK_STEPS (SJ_D / 32)
#define SJ_PV_STEPS (SJ_BLOCK_N / 32)

#if SJ_BLOCK_N == 128
#define sj_wgmma_qk sj_wgmma_s8_n128
#else
#define sj_wgmma_qk sj_wgmma_s8_n64
#endif
#if SJ_D == 128
#define sj_wgmma_pv sj_wgmma_e4m3_n128
#else
#define sj_wgmma_pv sj_wgmma_e4m3_n64
#endif

#ifndef SJ_MIN_BLOCKS
#define SJ_MIN_BLOCKS 1
#endif
#ifndef SJ_TMA
#define SJ_TMA 0
#endif
#ifndef SJ_KEY_MASK
#define SJ_KEY_MASK 0
#endif
// Three warpgroups (192 query rows) share each K/V tile: a third of the L2 traffic per FLOP of three
// one-warpgroup CTAs. A per-tile CTA barrier would put their phases in step (all three on the tensor
// pipe, then all three in the softmax), so with tensor copies a stage is released by counting: each
// warp that has finished with a tile adds one to its stage's counter, and the last one refills the
// stage with the tile STAGES ahead. The warpgroups then drift apart by up to STAGES - 1 tiles. This
// rests on every warpgroup reading a prefix of the key tiles (0 .. its wg_tiles - 1: causal
// warpgroups stop early, none starts late), so that whoever reads tile t + STAGES also read tile t and
// the refill is never missed; a key range with a lower bound per warpgroup would need another scheme.
#define SJ_RELEASE_COUNT (SJ_TMA && SJ_WARPGROUPS == 3)

// The row sums of a tile's probabilities as four partial sums per row (slot: accumulator column pair
// parity and element parity), so that a row's 32 adds are four chains of eight rather than one of 32
// (the order of a tile's sum is free: docs/NUMERICS.md). Element i < 8 starts its slot.
struct SjSm90RowSums {
  float part[2][4];
  SJ_DEVICE void add(int i, float prob) {
    float& slot = part[(i >> 1) & 1][(i & 1) | ((i >> 1) & 2)];
    slot = i < 8 ? prob : slot + prob;
  }
  SJ_DEVICE float row(int h) const { return (part[h][0] + part[h][1]) + (part[h][2] + part[h][3]); }
};

// The end of both softmax forms: the row sums into l (rescaled by alpha), and the probabilities
// `value` packed as e4m3 into the PV wgmma's register A fragments.
SJ_DEVICE void sj_sm90_finish_softmax(const float (&value)[SJ_S_REGS], const SjSm90RowSums& row_sum,
                                      const float (&alpha)[2], float (&l)[2], unsigned (&p_frag)[SJ_PV_STEPS][4]) {
  l[0] = l[0] * alpha[0] + row_sum.row(0);
  l[1] = l[1] * alpha[1] + row_sum.row(1);
#pragma unroll
  for (int kk = 0; kk < SJ_PV_STEPS; ++kk)
#pragma unroll
    for (int r = 0; r < 4; ++r)
      p_frag[kk][r] = sj_pack_e4m3x4(value[sj_sm90_p_source(kk, r, 0)], value[sj_sm90_p_source(kk, r, 1)],
                                     value[sj_sm90_p_source(kk, r, 2)], value[sj_sm90_p_source(kk, r, 3)]);
}

#if SJ_KEY_MASK
#include "common/key_mask.h"

// Whether key tile `first_key` holds a valid key: the warp reads the tile's biases and votes (the
// same answer in every warp: the mask row is per batch item, or item and head, so a warpgroup skips the tile as one).
SJ_DEVICE bool sj_sm90_tile_has_valid_key(const float* key_bias, int first_key, int lane) {
  bool valid = false;
#pragma unroll
  for (int i = 0; i < SJ_BLOCK_N / 32; ++i) valid = valid || sj_key_bias_valid(key_bias[first_key + 32 * i + lane]);
  return __any_sync(0xffffffffu, valid);
}

// sj_sm90_softmax with the key mask: scores are sj_masked_score(dot * scale, bias) (the bias of the
// score's key), then the visibility mask (the sequence end, causal), the tile max on the biased
// scores, p = exp2(s - (m - offset)) (m = -inf: nothing valid yet, p = 0).
SJ_DEVICE void sj_sm90_softmax_masked(const int (&s_acc)[SJ_S_REGS],
                                      const float (&qk_scale)[SJ_BLOCK_N / SJ_QUANT_BLOCK], const float* key_bias,
                                      int row, int first_key, int seq_kv, int lane, bool visibility, float (&m)[2],
                                      float (&l)[2], float (&alpha)[2], unsigned (&p_frag)[SJ_PV_STEPS][4]) {
  float value[SJ_S_REGS];
  float tile_max[2] = {sj_neg_inf(), sj_neg_inf()};
  const SjSm90Visibility visible(row, first_key, seq_kv, SJ_CAUSAL, lane);
#pragma unroll
  for (int i = 0; i < SJ_S_REGS; ++i) {
    const int h = (i >> 1) & 1;
    const int key = first_key + sj_sm90_acc_col(lane, i);
    float score = sj_masked_score((float)s_acc[i] * qk_scale[i >> 4], key_bias[key]);
    if (visibility && !visible(i)) score = sj_neg_inf();
    value[i] = score;
    tile_max[h] = fmaxf(tile_max[h], score);
  }
  float m_use[2];
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    tile_max[h] = fmaxf(tile_max[h], sj_shfl_xor(tile_max[h], 1));
    tile_max[h] = fmaxf(tile_max[h], sj_shfl_xor(tile_max[h], 2));
    const float m_new = fmaxf(m[h], tile_max[h]);
    alpha[h] = sj_rescale(m[h], m_new);
    m[h] = m_new;
    m_use[h] = m_new == sj_neg_inf() ? 0.0f : m_new - SJ_P_OFFSET;
  }
  SjSm90RowSums row_sum;
#pragma unroll
  for (int i = 0; i < SJ_S_REGS; ++i) {
    const int h = (i >> 1) & 1;
    const float prob = sj_sm80_exp2(value[i] - m_use[h]);  // sj_prob
    value[i] = prob;
    row_sum.add(i, prob);
  }
  sj_sm90_finish_softmax(value, row_sum, alpha, l, p_frag);
}
#define SJ_KEY_MASK_ARGUMENT , SjKeyMask km
#else
#define SJ_KEY_MASK_ARGUMENT
#endif

#if SJ_TMA
// Thread 0 only: the two tensor copies of key tile `tile` into the stage buffer at `stage_smem`,
// announced to (and completing) that stage's mbarrier `bar`.
SJ_DEVICE void sj_sm90_load_tile(const SjSm90TensorMaps& maps, unsigned stage_smem, unsigned bar, int tile,
                                 int kv_head) {
  sj_mbarrier_arrive_expect_tx(bar, SJ_STAGE_BYTES);
  sj_tma_load_3d(stage_smem, maps.k, 0, tile * SJ_BLOCK_N, kv_head, bar);
  sj_tma_load_3d(stage_smem + SJ_K_TILE_BYTES, maps.v, tile * SJ_BLOCK_N, 0, kv_head, bar);
}
#else
// Issue the cp.async copies of key tile `tile` into stage buffer `stage` (all threads take part).
SJ_DEVICE void sj_sm90_load_tile(const SjAttentionParams& p, unsigned stage_smem, int tile, const sj_i8* k_head,
                                 const sj_u8* v_head) {
  const sj_i64 first_key = (sj_i64)tile * SJ_BLOCK_N;
  sj_copy_tile<SJ_THREADS, SJ_BLOCK_N, SJ_D / 16>(stage_smem, (const sj_u8*)k_head + first_key * SJ_D, SJ_D);
  sj_copy_tile<SJ_THREADS, SJ_D, SJ_BLOCK_N / 16>(stage_smem + SJ_K_TILE_BYTES, v_head + first_key,
                                                  (sj_i64)p.seq_kv_pad);
}
#endif

// S = Q K^T of one key tile for this warpgroup, issued asynchronously (committed as one group).
// q_desc and k_desc describe the tiles' first 32-byte k-step (sj_sm90_desc_step moves them on).
SJ_DEVICE void sj_sm90_issue_qk(int (&s)[SJ_S_REGS], unsigned long long q_desc, unsigned long long k_desc) {
  sj_wgmma_fence();
#pragma unroll
  for (int ks = 0; ks < SJ_QK_STEPS; ++ks)
    sj_wgmma_qk(s, sj_sm90_desc_step(q_desc, 32 * ks), sj_sm90_desc_step(k_desc, 32 * ks), ks > 0);
  sj_wgmma_commit();
}

// Online softmax of one score tile for rows `row` and `row + 8` (log2 domain, docs/NUMERICS.md steps
// 1-6), leaving P in e4m3 as the register A operand of the PV wgmma (k32 step kk = n8 blocks
// 4kk..4kk+3, in the sm80 slot order of V). Per score: an exact int -> float (one I2FP.F32.S32,
// an ALU-pipe instruction on sm_90, where the 1.5 * 2^23 magic number took an IADD and an FADD:
// |dot| < 2^22), a share of the max, one FFMA dot * scale - (m - offset), ex2 and the row sum. The
// tile max is taken on the unscaled dots of each 32-key scale group and scaled once per group (scales
// are positive and rounding is monotone, so it equals the max of the rounded scores); on unmasked
// tiles on the int32 dots themselves, three per instruction.
template <bool kMask>
SJ_DEVICE void sj_sm90_softmax(const int (&s_acc)[SJ_S_REGS], const float (&qk_scale)[SJ_BLOCK_N / SJ_QUANT_BLOCK],
                               int row, int first_key, int seq_kv, int lane, float (&m)[2], float (&l)[2],
                               float (&alpha)[2], unsigned (&p_frag)[SJ_PV_STEPS][4]) {
  constexpr int groups = SJ_BLOCK_N / SJ_QUANT_BLOCK;  // 16 accumulator registers per group
  float value[SJ_S_REGS];
  float group_max[2][groups];
  [[maybe_unused]] const SjSm90Visibility visible(row, first_key, seq_kv, SJ_CAUSAL, lane);
  if constexpr (kMask) {
#pragma unroll
    for (int h = 0; h < 2; ++h)
#pragma unroll
      for (int k = 0; k < groups; ++k) group_max[h][k] = sj_neg_inf();
#pragma unroll
    for (int i = 0; i < SJ_S_REGS; ++i) {
      const int h = (i >> 1) & 1;
      float dot = (float)s_acc[i];
      if (!visible(i)) dot = sj_neg_inf();  // times a zero scale gives NaN, which fmaxf below ignores
      value[i] = dot;
      group_max[h][i >> 4] = fmaxf(group_max[h][i >> 4], dot);
    }
  } else {
    // Every key visible: the group maxima are taken on the int32 dots, three at a time (VIMNMX3),
    // and converted once: the conversion is exact (|dot| < 2^22) and monotone, so this equals the
    // max of the converted dots with half the instructions.
#pragma unroll
    for (int i = 0; i < SJ_S_REGS; ++i) value[i] = (float)s_acc[i];
#pragma unroll
    for (int h = 0; h < 2; ++h)
#pragma unroll
      for (int k = 0; k < groups; ++k) {
        // The group's 8 elements of row h: i = 16 k + 4 j + 2 h + e (j < 4, e < 2).
        const int* d = s_acc + 16 * k + 2 * h;
        const int a = __vimax3_s32(d[0], d[1], d[4]);
        const int b = __vimax3_s32(d[5], d[8], d[9]);
        group_max[h][k] = (float)__vimax3_s32(a, b, max(d[12], d[13]));
      }
  }
  float m_use[2];
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    float tile_max = sj_neg_inf();
#pragma unroll
    for (int k = 0; k < groups; ++k) tile_max = fmaxf(tile_max, group_max[h][k] * qk_scale[k]);
    tile_max = fmaxf(tile_max, sj_shfl_xor(tile_max, 1));
    tile_max = fmaxf(tile_max, sj_shfl_xor(tile_max, 2));
    const float m_new = fmaxf(m[h], tile_max);
    alpha[h] = sj_rescale(m[h], m_new);
    m[h] = m_new;
    // p = exp2(s - (m - offset)); a row with nothing visible yet keeps m = -inf and p = 0.
    m_use[h] = m_new == sj_neg_inf() ? 0.0f : m_new - SJ_P_OFFSET;
  }
  SjSm90RowSums row_sum;
#pragma unroll
  for (int i = 0; i < SJ_S_REGS; ++i) {
    const int h = (i >> 1) & 1;
    float arg = fmaf(value[i], qk_scale[i >> 4], -m_use[h]);  // sj_prob(sj_score(...))
    // Masked again after the FFMA (-inf times a zero or NaN scale is NaN), by the value itself: a
    // visible dot is never -inf, so this is the visibility test without holding 64 predicates across
    // the max. A visible NaN argument (a NaN scale: a non-finite input) stays NaN, as
    // docs/NUMERICS.md "Non-finite inputs" requires.
    if (kMask && value[i] == sj_neg_inf()) arg = sj_neg_inf();
    const float prob = sj_sm80_exp2(arg);
    value[i] = prob;
    row_sum.add(i, prob);
  }
  sj_sm90_finish_softmax(value, row_sum, alpha, l, p_frag);
}

#if SJ_TMA
extern "C" __global__ void __launch_bounds__(SJ_THREADS, SJ_MIN_BLOCKS)
    sj_attention_sm90(SjAttentionParams p, const __grid_constant__ SjSm90TensorMaps maps SJ_KEY_MASK_ARGUMENT) {
  // One "full" mbarrier per stage: thread 0's arrival plus the tile's bytes complete a phase.
  __shared__ __align__(8) unsigned long long sj_full[SJ_STAGES];
#if SJ_RELEASE_COUNT
  __shared__ int sj_released[SJ_STAGES];  // warps done with the stage's current tile
#endif
#else
extern "C" __global__ void __launch_bounds__(SJ_THREADS, SJ_MIN_BLOCKS) sj_attention_sm90(SjAttentionParams p SJ_KEY_MASK_ARGUMENT) {
#endif
#if SJ_KEY_MASK
  // The mask row of this CTA's batch item (and KV head, with a per-head mask).
  const float* key_bias =
      km.key_bias + sj_key_mask_row(km.heads, (int)sj_block_z(), (int)sj_block_y() / p.gqa_ratio) * p.seq_kv_pad;
#endif
  extern __shared__ __align__(1024) unsigned char sj_smem[];
  const int lane = (int)sj_thread_x() & 31, warp = (int)sj_thread_x() >> 5;
  // (With one warpgroup a constant 0: its Q descriptor is then uniform, not a per-thread value.)
  const int wg = SJ_WARPGROUPS == 1 ? 0 : warp >> 2;
  const int g = lane >> 2, t = lane & 3;
  [[maybe_unused]] const auto [block, hq, b, hk, q0] = sj_query_block(p, SJ_BLOCK_M, SJ_CAUSAL);
  const int wg_q0 = q0 + 64 * wg;
  // 192 rows (three warpgroups) do not divide SJ_SEQ_PAD: a warpgroup whose 64 rows start past the
  // padded length is idle (its rows are not read, its tiles not counted).
  const bool wg_active = SJ_WARPGROUPS != 3 || wg_q0 < p.seq_q_pad;
  const int warp_q0 = q0 + 16 * warp;
#if SJ_KEY_MASK
  // A varlen call's batch item: its own query rows, at its own offset in the packed out (o_stride_b is 0).
  const int seq_q = sj_seq_length(km.cu_seqlens_q, b, p.seq_q, km.total_q);
  const sj_i64 out_row0 = sj_seq_start(km.cu_seqlens_q, b, km.total_q);
  if (q0 >= seq_q) return;  // the CTA's rows are past its sequence (uniform, before any barrier)
#else
  const int seq_q = p.seq_q;
  const sj_i64 out_row0 = 0;
#endif

  const sj_i64 q_head = (sj_i64)b * p.heads_q + hq;
  const sj_i64 kv_head = (sj_i64)b * p.heads_kv + hk;
  [[maybe_unused]] const sj_i8* k_head = p.k8 + kv_head * p.seq_kv_pad * SJ_D;
  [[maybe_unused]] const sj_u8* v_head = (const sj_u8*)p.v_quant + kv_head * SJ_D * p.seq_kv_pad;
  const float* k_scale = p.k_scale + kv_head * (p.seq_kv_pad / SJ_QUANT_BLOCK);
  // wgmma's swizzle is a function of the absolute shared address: align the tiles to 1024 bytes
  // (the descriptor asks for 1 KiB more than the tiles).
  const unsigned smem_base = (sj_smem_addr(sj_smem) + 1023u) & ~1023u;
  const unsigned q_smem = smem_base;
  const unsigned stages_smem = smem_base + SJ_Q_TILE_BYTES;

  // The rows that read keys end at the padded length (an idle third warpgroup's rows do not count):
  // every tile loaded is then waited for by some warpgroup, so no copy is in flight when the CTA exits.
  const int keys = sj_keys_to_visit(q0, min(SJ_BLOCK_M, p.seq_q_pad - q0), p.seq_kv, SJ_CAUSAL);
  const int tiles = (keys + SJ_BLOCK_N - 1) / SJ_BLOCK_N;
  // Causal: this warpgroup's rows see keys < wg_q0 + 64 only; its later tiles are skipped (a
  // warpgroup-uniform decision, as wgmma needs all four warps).
  const int wg_keys = sj_keys_to_visit(wg_q0, 64, p.seq_kv, SJ_CAUSAL);
  const int wg_tiles = wg_active ? (wg_keys + SJ_BLOCK_N - 1) / SJ_BLOCK_N : 0;

  // Q (in the first commit group, with tile 0), then the first STAGES - 1 key tiles (all STAGES when
  // stages are released by counting). Key tiles past the padded length cannot occur, nor can Q rows
  // with one or two warpgroups (their BLOCK_M divides SJ_SEQ_PAD).
#if SJ_WARPGROUPS == 3
  // Three: only the rows inside the padded length are loaded (an idle warpgroup's Q is never read).
#pragma unroll
  for (int w = 0; w < 3; ++w)
    if (q0 + 64 * w < p.seq_q_pad)
      sj_copy_tile<SJ_THREADS, 64, SJ_D / 16>(q_smem + w * 64 * SJ_D,
                                              (const sj_u8*)(p.q8 + (q_head * p.seq_q_pad + q0 + 64 * w) * SJ_D), SJ_D);
#else
  sj_copy_tile<SJ_THREADS, SJ_BLOCK_M, SJ_D / 16>(q_smem, (const sj_u8*)(p.q8 + (q_head * p.seq_q_pad + q0) * SJ_D),
                                                  SJ_D);
#endif
#if SJ_TMA
  const unsigned full_bar = sj_smem_addr(sj_full);  // stage s: full_bar + 8 s
  sj_cp_async_commit();
  if (sj_thread_x() == 0) {
    sj_tma_prefetch_map(maps.k);
    sj_tma_prefetch_map(maps.v);
#pragma unroll
    for (int s = 0; s < SJ_STAGES; ++s) sj_mbarrier_init(full_bar + 8 * s, 1);
#if SJ_RELEASE_COUNT
#pragma unroll
    for (int s = 0; s < SJ_STAGES; ++s) sj_released[s] = 0;
#endif
    sj_fence_mbarrier_init();
#pragma unroll
    for (int s = 0; s < SJ_STAGES - (SJ_RELEASE_COUNT ? 0 : 1); ++s)  // released by counting: every stage at once
      if (s < tiles) sj_sm90_load_tile(maps, stages_smem + s * SJ_STAGE_BYTES, full_bar + 8 * s, s, (int)kv_head);
  }
  // Q has landed and is visible to wgmma, and the barriers are initialised, before any thread goes on.
  sj_cp_async_wait<0>();
  sj_fence_async_shared();
  sj_barrier();
#else
#pragma unroll
  for (int s = 0; s < SJ_STAGES - 1; ++s) {
    if (s < tiles) sj_sm90_load_tile(p, stages_smem + s * SJ_STAGE_BYTES, s, k_head, v_head);
    sj_cp_async_commit();
  }
#endif

  const float q_scale = wg_active ? p.q_scale[q_head * (p.seq_q_pad / SJ_QUANT_BLOCK) + warp_q0 / SJ_QUANT_BLOCK] : 0.0f;
#if SJ_RELEASE_COUNT
  // Warps that read tile t: four per warpgroup that visits it (causal warpgroups stop early, idle ones visit none).
  int wg_tiles_of[3];
#pragma unroll
  for (int w = 0; w < 3; ++w)
    wg_tiles_of[w] = q0 + 64 * w < p.seq_q_pad
                         ? (sj_keys_to_visit(q0 + 64 * w, 64, p.seq_kv, SJ_CAUSAL) + SJ_BLOCK_N - 1) / SJ_BLOCK_N
                         : 0;
#endif
  // The wgmma descriptors are built once: a tile's are stage 0's moved by its stage offset, each
  // k-step's by its 32 bytes (sj_sm90_desc_step), an immediate add instead of a descriptor per wgmma.
  const unsigned long long q_desc = sj_sm90_desc(q_smem + wg * 64 * SJ_D, SJ_D);
  const unsigned long long k_desc0 = sj_sm90_desc(stages_smem, SJ_D);
  const unsigned long long v_desc0 = sj_sm90_desc(stages_smem + SJ_K_TILE_BYTES, SJ_BLOCK_N);

  float o[SJ_O_REGS];
#pragma unroll
  for (int i = 0; i < SJ_O_REGS; ++i) o[i] = 0.0f;
  float m[2] = {sj_neg_inf(), sj_neg_inf()}, l[2] = {0.0f, 0.0f};
  int s_acc[SJ_S_REGS];

  for (int tile = 0; tile < tiles; ++tile) {
    const int stage = tile % SJ_STAGES;
    const int first_key = tile * SJ_BLOCK_N;

#if SJ_RELEASE_COUNT
    if (tile >= wg_tiles) break;  // this warpgroup reads no later tile (nor counts one)
    sj_mbarrier_wait(full_bar + 8 * stage, (unsigned)(tile / SJ_STAGES) & 1u);
    bool tile_visible = true;
#if SJ_KEY_MASK
    tile_visible = sj_sm90_tile_has_valid_key(key_bias, first_key, lane);
#endif
    if (tile_visible) {
#elif SJ_TMA
    // After this barrier every warpgroup has finished tile - 1 (its wgmma reads are complete), so
    // thread 0 refills that buffer; then each thread waits for this tile's copies (the stage's
    // mbarrier, in its (tile / STAGES)-th phase).
    sj_barrier();
    {
      const int next = tile + SJ_STAGES - 1;
      if (sj_thread_x() == 0 && next < tiles)
        sj_sm90_load_tile(maps, stages_smem + (next % SJ_STAGES) * SJ_STAGE_BYTES, full_bar + 8 * (next % SJ_STAGES), next,
                          (int)kv_head);
    }
    if (tile >= wg_tiles) continue;  // (the last warpgroup visits every tile: each phase is waited for)
    sj_mbarrier_wait(full_bar + 8 * stage, (unsigned)(tile / SJ_STAGES) & 1u);
#if SJ_KEY_MASK
    if (!sj_sm90_tile_has_valid_key(key_bias, first_key, lane)) continue;  // after the wait: the phase is consumed
#endif
#else
    // After this barrier every thread's copies of this tile have landed (and are visible to the
    // async proxy) and every warpgroup has finished tile - 1, whose buffer is refilled now.
    sj_cp_async_wait<SJ_STAGES - 2>();
    sj_fence_async_shared();
    sj_barrier();
    {
      const int next = tile + SJ_STAGES - 1;
      if (next < tiles) sj_sm90_load_tile(p, stages_smem + (next % SJ_STAGES) * SJ_STAGE_BYTES, next, k_head, v_head);
      sj_cp_async_commit();
    }
    if (tile >= wg_tiles) continue;
#if SJ_KEY_MASK
    if (!sj_sm90_tile_has_valid_key(key_bias, first_key, lane)) continue;
#endif
#endif
    sj_sm90_issue_qk(s_acc, q_desc, sj_sm90_desc_step(k_desc0, stage * SJ_STAGE_BYTES));
    // The tile's K scales are loaded while its QK^T is on the tensor pipe (the wgmma's memory clobber
    // keeps the loads below it; above, their latency stalled every tile).
    float qk_scale[SJ_BLOCK_N / SJ_QUANT_BLOCK];
#pragma unroll
    for (int kg = 0; kg < SJ_BLOCK_N / SJ_QUANT_BLOCK; ++kg) qk_scale[kg] = q_scale * k_scale[first_key / SJ_QUANT_BLOCK + kg];
    sj_wgmma_wait<0>();
    sj_wgmma_fence_operands(s_acc);

    // ---- online softmax; the masked variant only on tiles that cross the sequence end or diagonal ----
    const bool needs_mask = first_key + SJ_BLOCK_N > p.seq_kv || (SJ_CAUSAL && first_key + SJ_BLOCK_N - 1 > warp_q0);
    float alpha[2];
    unsigned p_frag[SJ_PV_STEPS][4];
#if SJ_KEY_MASK
    sj_sm90_softmax_masked(s_acc, qk_scale, key_bias, warp_q0 + g, first_key, p.seq_kv, lane, needs_mask, m, l, alpha,
                           p_frag);
#else
    if (needs_mask)
      sj_sm90_softmax<true>(s_acc, qk_scale, warp_q0 + g, first_key, p.seq_kv, lane, m, l, alpha, p_frag);
    else
      sj_sm90_softmax<false>(s_acc, qk_scale, warp_q0 + g, first_key, p.seq_kv, lane, m, l, alpha, p_frag);
#endif

    // ---- O = O * alpha + P V (fresh fp32 accumulator per tile) ----
    float pv[SJ_O_REGS];
    sj_wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < SJ_PV_STEPS; ++kk)
      sj_wgmma_pv(pv, p_frag[kk], sj_sm90_desc_step(v_desc0, stage * SJ_STAGE_BYTES + 32 * kk), kk > 0);
    sj_wgmma_commit();
    sj_wgmma_wait<0>();
    sj_wgmma_fence_operands(pv);
#pragma unroll
    for (int i = 0; i < SJ_O_REGS; ++i) o[i] = o[i] * alpha[(i >> 1) & 1] + pv[i];
#if SJ_RELEASE_COUNT
    }  // tile_visible
    // This warp's wgmma reads of the stage are complete (the waits above): count it; the last of the
    // tile's readers refills the stage.
    if (lane == 0) {
      const int readers = 4 * ((tile < wg_tiles_of[0]) + (tile < wg_tiles_of[1]) + (tile < wg_tiles_of[2]));
      // Release: this warp's reads of the stage before its count; acquire: every earlier reader's
      // count (and reads) before the refill below.
      if (sj_shared_add_acq_rel(sj_smem_addr(&sj_released[stage]), 1) == readers - 1) {
        sj_released[stage] = 0;  // before the refill's arrival, which publishes it with the tile
        const int next = tile + SJ_STAGES;
        if (next < tiles) {
          sj_fence_async_shared();
          sj_sm90_load_tile(maps, stages_smem + stage * SJ_STAGE_BYTES, full_bar + 8 * stage, next, (int)kv_head);
        }
      }
    }
#endif
  }
#if !SJ_TMA
  sj_cp_async_wait<0>();
#endif

  // ---- epilogue: O / l * sv in the input dtype; LSE ----
  // V's channel scales of this thread's columns (v_scale holds SJ_D per KV head), all loaded before
  // the first store: the compiler does not move a load above the stores of out (they might alias),
  // so inside the loop each load waited its own latency (a quarter of all warp samples of the
  // attention kernel at 2x24x1024, docs/NVIDIA.md).
  const float* v_scale = p.v_scale + kv_head * SJ_D;
  float2 sv[SJ_D / 8];
#pragma unroll
  for (int j = 0; j < SJ_D / 8; ++j) sv[j] = *(const float2*)(v_scale + 8 * j + 2 * t);
  const bool aligned = sj_output_pairs_aligned(p.out, p.o_stride_b, p.o_stride_h, p.o_stride_n);
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    float row_l = l[h];
    row_l += sj_shfl_xor(row_l, 1);
    row_l += sj_shfl_xor(row_l, 2);
    const int row = warp_q0 + g + 8 * h;
    if (row >= seq_q) continue;
    sj_u16* out = (sj_u16*)p.out + b * p.o_stride_b + hq * p.o_stride_h + (out_row0 + row) * p.o_stride_n;
    sj_store_output_row<SJ_KEY_MASK != 0>(row_l, [&](auto output) {
#pragma unroll
      for (int j = 0; j < SJ_D / 8; ++j) {
        if (8 * j >= p.head_dim) break;  // columns past the call's head dim are padding
        sj_store_output_pair(out + 8 * j + 2 * t, aligned, output(o[4 * j + 2 * h], sv[j].x),
                             output(o[4 * j + 2 * h + 1], sv[j].y), SJ_DTYPE);
      }
    });
#if SJ_WRITE_LSE
    if (t == 0) {
      const sj_i64 index = q_head * p.seq_q + row;  // lse_delta's (the workspace's [B, Hq, Nq])
      const float delta = p.lse_delta != nullptr ? p.lse_delta[index] : 0.0f;
#if SJ_KEY_MASK
      p.lse[sj_lse_row(km.cu_seqlens_q, b, hq, p.heads_q, p.seq_q, km.total_q, row)] = sj_lse(m[h], row_l, delta);
#else
      p.lse[index] = sj_lse(m[h], row_l, delta);
#endif
    }
#endif
  }
}
