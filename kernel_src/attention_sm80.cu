// Attention stage of docs/NUMERICS.md for NVIDIA sm_89/sm_90 with mma.sync (the sm80 instruction set
// plus the sm_89 e4m3 mma): INT8 QK^T (m16n8k32 s8), online softmax in the log2 domain, PV either in
// e4m3 (m16n8k32, a fresh fp32 accumulator per key tile added to O: two-level accumulation) or in
// fp16 (m16n8k16, P and V fp16, accumulated straight into O).
//
// One CTA = SJ_WARPS warps; each warp owns SJ_ROWS_PER_WARP query rows (16 or 32: one or two m16
// tiles), its Q fragments live in registers for the whole kernel. K tiles [BLOCK_N, D] int8 and V
// tiles [D, BLOCK_N] (fp8 or fp16, keys contiguous) stream through SJ_STAGES shared-memory buffers
// with cp.async; ldmatrix feeds every B operand from XOR-swizzled rows (conflict-free).
// The score accumulator of a warp is repacked into the PV A operand in registers: for fp16 the
// layouts coincide; for fp8 prepare stores V's keys in the slot order of sj_sm80_v_slot_of_key.
//
// Grid: (ceil(Nq / BLOCK_M), Hq, B); causal grids run the heaviest query blocks first.
// Defines: SJ_HEAD_DIM, SJ_WARPS, SJ_ROWS_PER_WARP, SJ_BLOCK_N, SJ_STAGES, SJ_PV_FP16, SJ_DTYPE,
// SJ_CAUSAL, SJ_WRITE_LSE, SJ_MIN_BLOCKS (optional, default 1), SJ_KEY_MASK (optional, 1: a key mask,
// docs/NUMERICS.md "Key masks", SjKeyMask as the second kernel argument: the key bias prepare wrote
// is added to every score, a key tile without a valid key is not computed (its copies still run),
// and a row without any valid key writes 0). SJ_HEAD_DIM is the kernel head dim;
// out gets the call's p.head_dim columns (fewer when the call's head dim is zero-padded).
#include "arch/mma_sm80.h"
#include "common/constants.h"
#include "common/online_softmax.h"
#include "common/output_store.h"
#include "common/prelude.h"
#include "common/query_block.h"
#ifndef SJ_KEY_MASK
#define SJ_KEY_MASK 0
#endif
#if SJ_KEY_MASK
#include "common/key_mask.h"

// Whether key tile `first_key` holds a valid key: the warp reads the tile's biases and votes, so the
// answer is uniform (the mask row is per batch item, or item and head; every warp of the CTA gets the same one).
SJ_DEVICE bool sj_tile_has_valid_key(const float* key_bias, int first_key, int lane) {
  bool valid = false;
#pragma unroll
  for (int i = 0; i < SJ_BLOCK_N / 32; ++i) valid = valid || sj_key_bias_valid(key_bias[first_key + 32 * i + lane]);
  return __any_sync(0xffffffffu, valid);
}
#endif

#define SJ_D SJ_HEAD_DIM
#define SJ_BLOCK_M (SJ_WARPS * SJ_ROWS_PER_WARP)
#define SJ_M_TILES (SJ_ROWS_PER_WARP / 16)
#define SJ_V_BYTES (SJ_PV_FP16 ? 2 : 1)
#define SJ_K_CHUNKS (SJ_D / 16)                          // 16-byte chunks per K row
#define SJ_V_CHUNKS (SJ_BLOCK_N * SJ_V_BYTES / 16)       // 16-byte chunks per V row (one channel)
#define SJ_K_TILE_BYTES (SJ_BLOCK_N * SJ_D)
#define SJ_V_TILE_BYTES (SJ_D * SJ_BLOCK_N * SJ_V_BYTES)
#define SJ_STAGE_BYTES (SJ_K_TILE_BYTES + SJ_V_TILE_BYTES)
#define SJ_QK_STEPS (SJ_D / 32)                          // k32 steps of QK^T
#define SJ_N_TILES (SJ_BLOCK_N / 8)                      // n8 score tiles per key tile
#define SJ_PV_STEPS (SJ_BLOCK_N * SJ_V_BYTES / 32)       // PV k-steps (32 keys fp8, 16 keys fp16)
#define SJ_D_TILES (SJ_D / 8)
#define SJ_THREADS (SJ_WARPS * 32)
// With 32 rows per warp, or at D = 256 (128 output registers per thread), the Q fragments (32
// registers) would push the kernel past 255 registers, so they are staged once in shared memory (after
// the K/V stages) and re-read with ldmatrix per tile. The descriptor's shared-memory size follows the
// same rule (attention_sm80_desc.cpp, q_in_shared_memory).
#define SJ_Q_IN_SMEM (SJ_ROWS_PER_WARP == 32 || SJ_D > 128)

// Issue the cp.async copies of key tile `tile` into stage buffer `stage` (all threads take part).
SJ_DEVICE void sj_load_tile(const SjAttentionParams& p, unsigned smem_base, int stage, int tile, const sj_i8* k_head,
                            const sj_u8* v_head) {
  const unsigned k_smem = smem_base + stage * SJ_STAGE_BYTES;
  const unsigned v_smem = k_smem + SJ_K_TILE_BYTES;
  const sj_i64 first_key = (sj_i64)tile * SJ_BLOCK_N;
  sj_copy_tile<SJ_THREADS, SJ_BLOCK_N, SJ_K_CHUNKS>(k_smem, (const sj_u8*)k_head + first_key * SJ_D, SJ_D);
  sj_copy_tile<SJ_THREADS, SJ_D, SJ_V_CHUNKS>(v_smem, v_head + first_key * SJ_V_BYTES, (sj_i64)p.seq_kv_pad * SJ_V_BYTES);
}

#ifndef SJ_MIN_BLOCKS
#define SJ_MIN_BLOCKS 1
#endif
// SJ_MIN_BLOCKS > 1 caps the registers so that many CTAs fit on an SM (more warps to hide latency).
#if SJ_KEY_MASK
extern "C" __global__ void __launch_bounds__(SJ_THREADS, SJ_MIN_BLOCKS) sj_attention_sm80(SjAttentionParams p, SjKeyMask km) {
  // The mask row of this CTA's batch item (and KV head, with a per-head mask).
  const float* key_bias =
      km.key_bias + sj_key_mask_row(km.heads, (int)sj_block_z(), (int)sj_block_y() / p.gqa_ratio) * p.seq_kv_pad;
#else
extern "C" __global__ void __launch_bounds__(SJ_THREADS, SJ_MIN_BLOCKS) sj_attention_sm80(SjAttentionParams p) {
#endif
  extern __shared__ __align__(128) unsigned char sj_smem[];
  const int lane = (int)sj_thread_x() & 31, warp = (int)sj_thread_x() >> 5;
  const int g = lane >> 2, t = lane & 3;
  [[maybe_unused]] const auto [block, hq, b, hk, q0] = sj_query_block(p, SJ_BLOCK_M, SJ_CAUSAL);
  const int warp_q0 = q0 + warp * SJ_ROWS_PER_WARP;
#if SJ_KEY_MASK
  // A varlen call's batch item: its own query rows, at its own offset in the packed out (o_stride_b is 0).
  const int seq_q = sj_seq_length(km.cu_seqlens_q, b, p.seq_q, km.total_q);
  const sj_i64 out_row0 = sj_seq_start(km.cu_seqlens_q, b, km.total_q);
  if (q0 >= seq_q) return;  // the CTA's rows are past its sequence (uniform)
#else
  const int seq_q = p.seq_q;
  const sj_i64 out_row0 = 0;
#endif

  const sj_i64 q_head = (sj_i64)b * p.heads_q + hq;
  const sj_i64 kv_head = (sj_i64)b * p.heads_kv + hk;
  const sj_i8* k_head = p.k8 + kv_head * p.seq_kv_pad * SJ_D;
  const sj_u8* v_head = (const sj_u8*)p.v_quant + kv_head * SJ_D * p.seq_kv_pad * SJ_V_BYTES;
  const float* k_scale = p.k_scale + kv_head * (p.seq_kv_pad / SJ_QUANT_BLOCK);
  const unsigned smem_base = sj_smem_addr(sj_smem);

  const int keys = sj_keys_to_visit(q0, SJ_BLOCK_M, p.seq_kv, SJ_CAUSAL);
  const int tiles = (keys + SJ_BLOCK_N - 1) / SJ_BLOCK_N;

  // Start the K/V pipeline before touching Q so the first copies overlap the Q loads.
#pragma unroll
  for (int s = 0; s < SJ_STAGES - 1; ++s) {
    if (s < tiles) sj_load_tile(p, smem_base, s, s, k_head, v_head);
    sj_cp_async_commit();
  }

  float q_scale[SJ_M_TILES];
#pragma unroll
  for (int mt = 0; mt < SJ_M_TILES; ++mt) {
    const int row0 = warp_q0 + mt * 16;
    q_scale[mt] = row0 < p.seq_q_pad ? p.q_scale[q_head * (p.seq_q_pad / SJ_QUANT_BLOCK) + row0 / SJ_QUANT_BLOCK] : 0.0f;
  }
#if SJ_Q_IN_SMEM
  // Q tile [BLOCK_M, D] int8 into swizzled shared memory (rows past the padded length as 0); the
  // barrier at the top of the first key tile orders these stores before any ldmatrix.
  const unsigned q_smem = smem_base + SJ_STAGES * SJ_STAGE_BYTES;
  for (int c = (int)sj_thread_x(); c < SJ_BLOCK_M * SJ_K_CHUNKS; c += SJ_THREADS) {
    const int row = c / SJ_K_CHUNKS, chunk = c % SJ_K_CHUNKS;
    uint4 value = make_uint4(0u, 0u, 0u, 0u);
    if (q0 + row < p.seq_q_pad) value = *(const uint4*)(p.q8 + (q_head * p.seq_q_pad + q0 + row) * SJ_D + chunk * 16);
    *(uint4*)(sj_smem + SJ_STAGES * SJ_STAGE_BYTES + sj_sm80_swizzle(row, chunk, SJ_K_CHUNKS)) = value;
  }
#else
  // Q fragments (A of m16n8k32 s8) straight from global memory: rows past the padded length read 0.
  unsigned q_frag[SJ_M_TILES][SJ_QK_STEPS][4];
#pragma unroll
  for (int mt = 0; mt < SJ_M_TILES; ++mt) {
    const int row0 = warp_q0 + mt * 16;
#pragma unroll
    for (int ks = 0; ks < SJ_QK_STEPS; ++ks)
#pragma unroll
      for (int r = 0; r < 4; ++r) {
        const int row = row0 + g + ((r & 1) << 3);
        const int col = ks * 32 + (t << 2) + ((r >> 1) << 4);
        q_frag[mt][ks][r] =
            row < p.seq_q_pad ? *(const unsigned*)(p.q8 + (q_head * p.seq_q_pad + row) * SJ_D + col) : 0u;
      }
  }
#endif

  float o[SJ_M_TILES][SJ_D_TILES][4];
  float m[SJ_M_TILES][2], l[SJ_M_TILES][2];
#pragma unroll
  for (int mt = 0; mt < SJ_M_TILES; ++mt) {
#pragma unroll
    for (int dt = 0; dt < SJ_D_TILES; ++dt)
#pragma unroll
      for (int i = 0; i < 4; ++i) o[mt][dt][i] = 0.0f;
    m[mt][0] = m[mt][1] = sj_neg_inf();
    l[mt][0] = l[mt][1] = 0.0f;
  }

  for (int tile = 0; tile < tiles; ++tile) {
    const int stage = tile % SJ_STAGES;
    const int first_key = tile * SJ_BLOCK_N;
    // q_scale * k_scale of each 32-key group of this tile, read before the wait so the global loads
    // overlap it (one product per score group instead of one per n8 tile).
    float qk_scale[SJ_M_TILES][SJ_BLOCK_N / SJ_QUANT_BLOCK];
#pragma unroll
    for (int kg = 0; kg < SJ_BLOCK_N / SJ_QUANT_BLOCK; ++kg) {
      const float sk = k_scale[first_key / SJ_QUANT_BLOCK + kg];
#pragma unroll
      for (int mt = 0; mt < SJ_M_TILES; ++mt) qk_scale[mt][kg] = q_scale[mt] * sk;
    }
#if SJ_STAGES > 1
    // One barrier per tile: after it every warp has finished tile - 1, so its buffer
    // ((tile + STAGES - 1) % STAGES) is refilled while this tile is computed.
    sj_cp_async_wait<SJ_STAGES - 2>();
    sj_barrier();
    {
      const int next = tile + SJ_STAGES - 1;
      if (next < tiles) sj_load_tile(p, smem_base, next % SJ_STAGES, next, k_head, v_head);
      sj_cp_async_commit();
    }
#else
    sj_load_tile(p, smem_base, 0, tile, k_head, v_head);
    sj_cp_async_commit();
    sj_cp_async_wait<0>();
    sj_barrier();
#endif
    // A warp whose rows all precede this tile's first key (causal) has nothing to add.
#if SJ_KEY_MASK
    const bool warp_active = (!SJ_CAUSAL || first_key <= warp_q0 + SJ_ROWS_PER_WARP - 1) &&
                             sj_tile_has_valid_key(key_bias, first_key, lane);
#else
    const bool warp_active = !SJ_CAUSAL || first_key <= warp_q0 + SJ_ROWS_PER_WARP - 1;
#endif
    if (warp_active) {
      const unsigned k_smem = smem_base + stage * SJ_STAGE_BYTES;
      const unsigned v_smem = k_smem + SJ_K_TILE_BYTES;

      // ---- S = Q K^T (int32) ----
      int s_acc[SJ_M_TILES][SJ_N_TILES][4];
#pragma unroll
      for (int mt = 0; mt < SJ_M_TILES; ++mt)
#pragma unroll
        for (int nt = 0; nt < SJ_N_TILES; ++nt)
#pragma unroll
          for (int i = 0; i < 4; ++i) s_acc[mt][nt][i] = 0;
#pragma unroll
      for (int nt = 0; nt < SJ_N_TILES; nt += 2)
#pragma unroll
        for (int ks = 0; ks < SJ_QK_STEPS; ++ks) {
          // matrices: (keys nt, d 0-15), (keys nt, d 16-31), (keys nt+1, d 0-15), (keys nt+1, d 16-31)
          const int mat = lane >> 3;
          const int row = (nt + (mat >> 1)) * 8 + (lane & 7);
          unsigned bk[4];
          sj_ldmatrix_x4(bk, k_smem + sj_sm80_swizzle(row, ks * 2 + (mat & 1), SJ_K_CHUNKS));
#pragma unroll
          for (int mt = 0; mt < SJ_M_TILES; ++mt) {
#if SJ_Q_IN_SMEM
            // matrices: (rows 0-7, bytes 0-15), (rows 8-15, 0-15), (rows 0-7, 16-31), (rows 8-15, 16-31):
            // exactly the m16n8k32 s8 A registers a0..a3.
            unsigned qa[4];
            const int q_row = warp * SJ_ROWS_PER_WARP + mt * 16 + ((mat & 1) << 3) + (lane & 7);
            sj_ldmatrix_x4(qa, q_smem + sj_sm80_swizzle(q_row, ks * 2 + (mat >> 1), SJ_K_CHUNKS));
#else
            const unsigned(&qa)[4] = q_frag[mt][ks];
#endif
            sj_mma_s8(s_acc[mt][nt], qa, bk[0], bk[1]);
            sj_mma_s8(s_acc[mt][nt + 1], qa, bk[2], bk[3]);
          }
        }

      // ---- online softmax (log2 domain) ----
      const bool needs_mask = first_key + SJ_BLOCK_N > p.seq_kv || (SJ_CAUSAL && first_key + SJ_BLOCK_N - 1 > warp_q0);
      float score[SJ_M_TILES][SJ_N_TILES][4];
      float alpha[SJ_M_TILES][2];
#pragma unroll
      for (int mt = 0; mt < SJ_M_TILES; ++mt) {
        float tile_max[2] = {sj_neg_inf(), sj_neg_inf()};
#pragma unroll
        for (int nt = 0; nt < SJ_N_TILES; ++nt) {
#pragma unroll
          for (int i = 0; i < 4; ++i) {
            // sj_score: float(dot) * (sq * sk), the scale product hoisted. float(dot) is exact through
            // the 1.5 * 2^23 magic-number trick (|dot| <= 127^2 * 128 < 2^22), which costs an integer
            // add and an FADD instead of a quarter-rate I2F per score.
            const float dot = sj_bit_cast<float>(s_acc[mt][nt][i] + 0x4B400000) - 12582912.0f;
            float s = dot * qk_scale[mt][nt * 8 / SJ_QUANT_BLOCK];
#if SJ_KEY_MASK
            s = sj_masked_score(s, key_bias[first_key + nt * 8 + 2 * t + (i & 1)]);
#endif
            if (needs_mask) {
              const int row = warp_q0 + mt * 16 + g + ((i >> 1) << 3);
              const int key = first_key + nt * 8 + 2 * t + (i & 1);
              if (!sj_key_visible(row, key, p.seq_kv, SJ_CAUSAL)) s = sj_neg_inf();
            }
            score[mt][nt][i] = s;
            tile_max[i >> 1] = fmaxf(tile_max[i >> 1], s);
          }
        }
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          tile_max[h] = fmaxf(tile_max[h], sj_shfl_xor(tile_max[h], 1));
          tile_max[h] = fmaxf(tile_max[h], sj_shfl_xor(tile_max[h], 2));
          const float m_new = fmaxf(m[mt][h], tile_max[h]);
          alpha[mt][h] = sj_rescale(m[mt][h], m_new);
          m[mt][h] = m_new;
        }
        // p = exp2(s - m + offset), evaluated as exp2(s - (m - offset)): one FADD per score (the
        // rounding differs from the emulator's by an ulp of the exponent: accumulation noise). A row
        // with nothing visible yet keeps m = -inf and p = 0.
        const float m_use[2] = {m[mt][0] == sj_neg_inf() ? 0.0f : m[mt][0] - SJ_P_OFFSET,
                                m[mt][1] == sj_neg_inf() ? 0.0f : m[mt][1] - SJ_P_OFFSET};
        float row_sum[2] = {0.0f, 0.0f};
#pragma unroll
        for (int nt = 0; nt < SJ_N_TILES; ++nt)
#pragma unroll
          for (int i = 0; i < 4; ++i) {
            const float prob = sj_sm80_exp2(score[mt][nt][i] - m_use[i >> 1]);  // sj_prob
            score[mt][nt][i] = prob;
            row_sum[i >> 1] += prob;
          }
        l[mt][0] = l[mt][0] * alpha[mt][0] + row_sum[0];
        l[mt][1] = l[mt][1] * alpha[mt][1] + row_sum[1];
      }

      // ---- P as the A operand of PV ----
      unsigned p_frag[SJ_M_TILES][SJ_PV_STEPS][4];
#pragma unroll
      for (int mt = 0; mt < SJ_M_TILES; ++mt)
#pragma unroll
        for (int ks = 0; ks < SJ_PV_STEPS; ++ks) {
#if SJ_PV_FP16
          // k16 step = score tiles 2ks (keys 0-7) and 2ks+1 (keys 8-15): the m16n8k16 A layout.
          const float* lo = score[mt][2 * ks];
          const float* hi = score[mt][2 * ks + 1];
          p_frag[mt][ks][0] = sj_pack_f16x2(lo[0], lo[1]);
          p_frag[mt][ks][1] = sj_pack_f16x2(lo[2], lo[3]);
          p_frag[mt][ks][2] = sj_pack_f16x2(hi[0], hi[1]);
          p_frag[mt][ks][3] = sj_pack_f16x2(hi[2], hi[3]);
#else
          // k32 step = score tiles 4ks..4ks+3; slot 4t+i order of sj_sm80_v_slot_of_key.
          const float* s0 = score[mt][4 * ks];
          const float* s1 = score[mt][4 * ks + 1];
          const float* s2 = score[mt][4 * ks + 2];
          const float* s3 = score[mt][4 * ks + 3];
          p_frag[mt][ks][0] = sj_pack_e4m3x4(s0[0], s0[1], s1[0], s1[1]);
          p_frag[mt][ks][1] = sj_pack_e4m3x4(s0[2], s0[3], s1[2], s1[3]);
          p_frag[mt][ks][2] = sj_pack_e4m3x4(s2[0], s2[1], s3[0], s3[1]);
          p_frag[mt][ks][3] = sj_pack_e4m3x4(s2[2], s2[3], s3[2], s3[3]);
#endif
        }

      // ---- O = O * alpha + P V ----
      // Once the row maxima settle, alpha is 1 for every row of the warp: skip the rescale then.
      bool rescale = false;
#pragma unroll
      for (int mt = 0; mt < SJ_M_TILES; ++mt) rescale = rescale || alpha[mt][0] != 1.0f || alpha[mt][1] != 1.0f;
      rescale = __any_sync(0xffffffffu, rescale);
#pragma unroll
      for (int dt = 0; dt < SJ_D_TILES; dt += 2) {
        float acc[SJ_M_TILES][2][4];
#pragma unroll
        for (int mt = 0; mt < SJ_M_TILES; ++mt)
#pragma unroll
          for (int j = 0; j < 2; ++j)
#pragma unroll
            for (int i = 0; i < 4; ++i)
              acc[mt][j][i] = SJ_PV_FP16 ? (rescale ? o[mt][dt + j][i] * alpha[mt][i >> 1] : o[mt][dt + j][i]) : 0.0f;
#pragma unroll
        for (int ks = 0; ks < SJ_PV_STEPS; ++ks) {
          // matrices: (d dt, bytes 0-15), (d dt, bytes 16-31), (d dt+1, 0-15), (d dt+1, 16-31) of step ks
          const int mat = lane >> 3;
          const int row = (dt + (mat >> 1)) * 8 + (lane & 7);
          unsigned bv[4];
          sj_ldmatrix_x4(bv, v_smem + sj_sm80_swizzle(row, ks * 2 + (mat & 1), SJ_V_CHUNKS));
#pragma unroll
          for (int mt = 0; mt < SJ_M_TILES; ++mt) {
#if SJ_PV_FP16
            sj_mma_f16(acc[mt][0], p_frag[mt][ks], bv[0], bv[1]);
            sj_mma_f16(acc[mt][1], p_frag[mt][ks], bv[2], bv[3]);
#else
            sj_mma_e4m3(acc[mt][0], p_frag[mt][ks], bv[0], bv[1]);
            sj_mma_e4m3(acc[mt][1], p_frag[mt][ks], bv[2], bv[3]);
#endif
          }
        }
#pragma unroll
        for (int mt = 0; mt < SJ_M_TILES; ++mt)
#pragma unroll
          for (int j = 0; j < 2; ++j)
#pragma unroll
            for (int i = 0; i < 4; ++i)
              o[mt][dt + j][i] = SJ_PV_FP16 ? acc[mt][j][i]
                                 : (rescale ? o[mt][dt + j][i] * alpha[mt][i >> 1] : o[mt][dt + j][i]) + acc[mt][j][i];
      }
    }
#if SJ_STAGES == 1
    sj_barrier();  // every warp is done with the single buffer before it is refilled
#endif
  }
  sj_cp_async_wait<0>();

  // ---- epilogue: O / l * sv in the input dtype; LSE ----
  // V's channel scales of this thread's columns (v_scale holds SJ_D per KV head), all loaded before
  // the first store: the compiler does not move a load above the stores of out (they might alias),
  // so inside the loop each load would wait its own latency (attention_sm90 measured it).
  const float* v_scale = p.v_scale + kv_head * SJ_D;
  float2 sv_of[SJ_D_TILES];
#pragma unroll
  for (int dt = 0; dt < SJ_D_TILES; ++dt) sv_of[dt] = *(const float2*)(v_scale + dt * 8 + 2 * t);
  const bool aligned = sj_output_pairs_aligned(p.out, p.o_stride_b, p.o_stride_h, p.o_stride_n);
#pragma unroll
  for (int mt = 0; mt < SJ_M_TILES; ++mt)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      float row_l = l[mt][h];
      row_l += sj_shfl_xor(row_l, 1);
      row_l += sj_shfl_xor(row_l, 2);
      const int row = warp_q0 + mt * 16 + g + h * 8;
      if (row >= seq_q) continue;
      sj_u16* out = (sj_u16*)p.out + b * p.o_stride_b + hq * p.o_stride_h + (out_row0 + row) * p.o_stride_n;
      sj_store_output_row<SJ_KEY_MASK != 0>(row_l, [&](auto output) {
#pragma unroll
        for (int dt = 0; dt < SJ_D_TILES; ++dt) {
          if (dt * 8 >= p.head_dim) break;  // columns past the call's head dim are padding
          sj_store_output_pair(out + dt * 8 + 2 * t, aligned, output(o[mt][dt][2 * h], sv_of[dt].x),
                               output(o[mt][dt][2 * h + 1], sv_of[dt].y), SJ_DTYPE);
        }
      });
#if SJ_WRITE_LSE
      if (t == 0) {
        const sj_i64 index = q_head * p.seq_q + row;  // lse_delta's (the workspace's [B, Hq, Nq])
        const float delta = p.lse_delta != nullptr ? p.lse_delta[index] : 0.0f;
#if SJ_KEY_MASK
        p.lse[sj_lse_row(km.cu_seqlens_q, b, hq, p.heads_q, p.seq_q, km.total_q, row)] = sj_lse(m[mt][h], row_l, delta);
#else
        p.lse[index] = sj_lse(m[mt][h], row_l, delta);
#endif
      }
#endif
    }
}
