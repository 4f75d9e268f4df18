// The warp-specialized form of kernel_src/attention_sm90.cu (SJ_WS 1; included by it, after the
// helpers it shares: the tile loads, QK^T / PV issue, the softmax and the epilogue). Same numerics
// as the one-warpgroup kernel, operation for operation: only the order in which the warpgroups issue
// them and how the stages are handed over differ.
//
// CTA = 1 producer warpgroup + SJ_WARPS / 4 = 2 consumer warpgroups (384 threads, one CTA per SM).
// The producer gives its registers back (setmaxnreg.dec to SJ_WS_PRODUCER_REGS) and one thread of it
// streams the key tiles with tensor copies through SJ_STAGES buffers: it waits on the stage's "empty"
// mbarrier (one arrival per consumer warp), then issues the two copies onto the stage's "full"
// mbarrier (its arrival plus the tile's bytes). The consumers take the registers (setmaxnreg.inc to
// SJ_WS_CONSUMER_REGS); warpgroup c owns query rows 64 c .. 64 c + 63 of the 128-row block. Inside a
// consumer the GEMMs of two tiles overlap the softmax: in step j it issues S(j) = Q K(j)^T and then
// PV(j-1) (P of the previous tile, from registers, into a fresh accumulator), waits for S(j) only,
// runs the softmax of tile j while PV(j-1) is still on the tensor pipe, then waits for PV(j-1),
// releases stage j-1 and adds it to O (O = O * alpha(j-1) + PV(j-1): the two-level accumulation of
// docs/NUMERICS.md, in the same order as the one-warpgroup kernel). So a stage is held for about two
// steps: three stages keep one tile in flight ahead (two stages make each step wait for its copy).
//
// Causal: key tiles past the block's diagonal are never loaded; a consumer warpgroup whose rows all
// precede a tile (possible only with 64-key tiles) still waits for it and releases it, so every
// stage's phases stay in order.
#define SJ_WS_THREADS (SJ_THREADS + 128)
// 24 + 2 x 240 = 504 registers per thread triple = the 3 x 168 ptxas gives a 384-thread CTA at one
// CTA per SM (65536 / 384, rounded down to a multiple of 8).
#define SJ_WS_PRODUCER_REGS 24
#ifndef SJ_WS_CONSUMER_REGS
#define SJ_WS_CONSUMER_REGS 240
#endif

#if !SJ_TMA || SJ_WARPS != 8 || (SJ_WS == 2 && SJ_BLOCK_N != 128)
#error "the warp-specialized sm_90 kernel loads with tensor copies (SJ_TMA 1) into two consumer warpgroups (SJ_WARPS 8); ping-pong (SJ_WS 2) needs SJ_BLOCK_N 128"
#endif

extern "C" __global__ void __launch_bounds__(SJ_WS_THREADS, 1)
    sj_attention_sm90(SjAttentionParams p, const __grid_constant__ SjSm90TensorMaps maps) {
  __shared__ __align__(8) unsigned long long sj_full[SJ_STAGES];
  __shared__ __align__(8) unsigned long long sj_empty[SJ_STAGES];
  extern __shared__ __align__(1024) unsigned char sj_smem[];
  const int thread = (int)sj_thread_x();
  const int lane = thread & 31, warp = thread >> 5;
  [[maybe_unused]] const auto [block, hq, b, hk, q0] = sj_query_block(p, SJ_BLOCK_M, SJ_CAUSAL);
  const sj_i64 q_head = (sj_i64)b * p.heads_q + hq;
  const sj_i64 kv_head = (sj_i64)b * p.heads_kv + hk;
  // wgmma's swizzle is a function of the absolute shared address: tiles aligned to 1024 bytes.
  const unsigned smem_base = (sj_smem_addr(sj_smem) + 1023u) & ~1023u;
  const unsigned q_smem = smem_base;
  const unsigned stages_smem = smem_base + SJ_Q_TILE_BYTES;
  const unsigned full_bar = sj_smem_addr(sj_full), empty_bar = sj_smem_addr(sj_empty);  // stage s: + 8 s

  const int keys = sj_keys_to_visit(q0, SJ_BLOCK_M, p.seq_kv, SJ_CAUSAL);
  const int tiles = (keys + SJ_BLOCK_N - 1) / SJ_BLOCK_N;

  if (thread == 0) {
    sj_tma_prefetch_map(maps.k);
    sj_tma_prefetch_map(maps.v);
#pragma unroll
    for (int s = 0; s < SJ_STAGES; ++s) {
      sj_mbarrier_init(full_bar + 8 * s, 1);
      sj_mbarrier_init(empty_bar + 8 * s, SJ_WARPS);
    }
    sj_fence_mbarrier_init();
  }
  sj_barrier();  // the barriers are initialised before any thread uses them (the last CTA-wide barrier)

  if (warp < 4) {
    // ---- producer warpgroup: one thread issues every copy; the other threads are done ----
    sj_setmaxnreg_dec<SJ_WS_PRODUCER_REGS>();
    if (thread == 0)
      for (int tile = 0; tile < tiles; ++tile) {
        const int stage = tile % SJ_STAGES;
        // The buffer's previous tile (tile - STAGES) is released in phase tile / STAGES - 1.
        if (tile >= SJ_STAGES) sj_mbarrier_wait(empty_bar + 8 * stage, (unsigned)(tile / SJ_STAGES - 1) & 1u);
        sj_sm90_load_tile(maps, stages_smem + stage * SJ_STAGE_BYTES, full_bar + 8 * stage, tile, (int)kv_head);
      }
    return;
  }

  // ---- consumer warpgroups ----
  sj_setmaxnreg_inc<SJ_WS_CONSUMER_REGS>();
  const int cwarp = warp - 4;  // 0..7
  const int wg = cwarp >> 2;
  const int g = lane >> 2;
  const int wg_q0 = q0 + 64 * wg;
  const int warp_q0 = q0 + 16 * cwarp;
  const unsigned wg_q_smem = q_smem + wg * 64 * SJ_D;
  // This warpgroup's 64 Q rows (Q rows past the padded length cannot occur: BLOCK_M divides SJ_SEQ_PAD),
  // landed and visible to wgmma before its first QK^T; barrier 1 + wg spans the warpgroup only.
  sj_copy_tile<128, 64, SJ_D / 16>(wg_q_smem, (const sj_u8*)(p.q8 + (q_head * p.seq_q_pad + wg_q0) * SJ_D), SJ_D,
                                   thread & 127);
  sj_cp_async_commit();
  sj_cp_async_wait<0>();
  sj_fence_async_shared();
  sj_named_barrier(1 + wg, 128);

  const float* k_scale = p.k_scale + kv_head * (p.seq_kv_pad / SJ_QUANT_BLOCK);
  const float q_scale = p.q_scale[q_head * (p.seq_q_pad / SJ_QUANT_BLOCK) + warp_q0 / SJ_QUANT_BLOCK];
  // Causal: this warpgroup's rows see keys < wg_q0 + 64 only (a warpgroup-uniform count).
  const int wg_keys = sj_keys_to_visit(wg_q0, 64, p.seq_kv, SJ_CAUSAL);
  const int wg_tiles = (wg_keys + SJ_BLOCK_N - 1) / SJ_BLOCK_N;

  float o[SJ_O_REGS];
#pragma unroll
  for (int i = 0; i < SJ_O_REGS; ++i) o[i] = 0.0f;
  float m[2] = {sj_neg_inf(), sj_neg_inf()}, l[2] = {0.0f, 0.0f};
  int s_acc[SJ_S_REGS];
  float pv[SJ_O_REGS];
  unsigned p_a[SJ_PV_STEPS][4], p_b[SJ_PV_STEPS][4];  // P of the previous tile (the A operand of its PV), alternating
  float alpha_prev[2] = {1.0f, 1.0f};

  // Softmax of tile `tile` from s_acc (complete) into p_out, alpha; the masked variant only on tiles
  // that cross the sequence end or the diagonal.
  // q_scale * k_scale of tile's 32-key groups: loaded before the tile's GEMMs are issued, so the
  // global loads' latency hides behind them instead of stalling the softmax.
  const auto load_scales = [&](int tile, float (&qk_scale)[SJ_BLOCK_N / SJ_QUANT_BLOCK]) {
#pragma unroll
    for (int kg = 0; kg < SJ_BLOCK_N / SJ_QUANT_BLOCK; ++kg)
      qk_scale[kg] = q_scale * k_scale[tile * (SJ_BLOCK_N / SJ_QUANT_BLOCK) + kg];
  };
  const auto softmax_of = [&](const int (&s_in)[SJ_S_REGS], int tile, const float (&qk_scale)[SJ_BLOCK_N / SJ_QUANT_BLOCK],
                              float (&alpha)[2], unsigned (&p_out)[SJ_PV_STEPS][4]) {
    const int first_key = tile * SJ_BLOCK_N;
    const bool needs_mask = first_key + SJ_BLOCK_N > p.seq_kv || (SJ_CAUSAL && first_key + SJ_BLOCK_N - 1 > warp_q0);
    if (needs_mask)
      sj_sm90_softmax<true>(s_in, qk_scale, warp_q0 + g, first_key, p.seq_kv, lane, m, l, alpha, p_out);
    else
      sj_sm90_softmax<false>(s_in, qk_scale, warp_q0 + g, first_key, p.seq_kv, lane, m, l, alpha, p_out);
  };
  const auto softmax = [&](int tile, const float (&qk_scale)[SJ_BLOCK_N / SJ_QUANT_BLOCK], float (&alpha)[2],
                           unsigned (&p_out)[SJ_PV_STEPS][4]) { softmax_of(s_acc, tile, qk_scale, alpha, p_out); };
  // One arrival per consumer warp on the stage of `tile`: its wgmma reads of K and V are complete.
  const auto release = [&](int tile) {
    if (lane == 0) sj_mbarrier_arrive(empty_bar + 8 * (tile % SJ_STAGES));
  };
  const auto wait_full = [&](int tile) {
    sj_mbarrier_wait(full_bar + 8 * (tile % SJ_STAGES), (unsigned)(tile / SJ_STAGES) & 1u);
  };
  const auto k_smem_of = [&](int tile) { return stages_smem + (tile % SJ_STAGES) * SJ_STAGE_BYTES; };

  // SJ_WS 2, ping-pong: the two consumer warpgroups take turns to issue their GEMMs (named barriers
  // 3 + wg, each completed by the other warpgroup's arrival), so one's GEMMs run while the other's
  // softmax does. Both issue wg_tiles + 1 times (equal counts: the descriptor allows ping-pong only
  // with 128-key tiles, where both warpgroups see the same tiles); warpgroup 1 hands the first turn
  // to warpgroup 0, and warpgroup 0 takes warpgroup 1's last hand-over at the end.
  const auto my_turn = [&] {
    if (SJ_WS == 2) sj_named_barrier(3 + wg, 256);
  };
  const auto your_turn = [&] {
    if (SJ_WS == 2) sj_named_barrier_arrive(3 + (wg ^ 1), 256);
  };
  if (wg == 1) your_turn();
  if (wg_tiles > 0) {
    float qk_scale[SJ_BLOCK_N / SJ_QUANT_BLOCK];
    load_scales(0, qk_scale);
    wait_full(0);
    my_turn();
    sj_sm90_issue_qk(s_acc, wg_q_smem, k_smem_of(0));
    your_turn();
    sj_wgmma_wait<0>();
    sj_wgmma_fence_operands(s_acc);
    softmax(0, qk_scale, alpha_prev, p_a);  // O is still 0: tile 0's alpha rescales nothing
  }
  // Step `tile` (>= 1): S(tile) and PV(tile - 1) with P(tile - 1) from p_in; the softmax of tile
  // writes p_out while that PV runs. P(tile - 1) stays live until its PV is complete (the fence after
  // the wait), so p_out is never allocated into the registers the in-flight wgmma still reads.
  const auto step = [&](int tile, unsigned (&p_in)[SJ_PV_STEPS][4], unsigned (&p_out)[SJ_PV_STEPS][4]) {
    float qk_scale[SJ_BLOCK_N / SJ_QUANT_BLOCK];
    load_scales(tile, qk_scale);
    wait_full(tile);
    my_turn();
    sj_sm90_issue_qk(s_acc, wg_q_smem, k_smem_of(tile));                  // group: S(tile)
    sj_sm90_issue_pv(pv, p_in, k_smem_of(tile - 1) + SJ_K_TILE_BYTES);  // group: PV(tile - 1)
    your_turn();
    sj_wgmma_wait<1>();  // groups complete in order: S(tile) is done, PV(tile - 1) may not be
    sj_wgmma_fence_operands(s_acc);
    float alpha[2];
    softmax(tile, qk_scale, alpha, p_out);
    sj_wgmma_wait<0>();
    sj_wgmma_fence_operands(pv);
#pragma unroll
    for (int kk = 0; kk < SJ_PV_STEPS; ++kk) sj_wgmma_fence_operands(p_in[kk]);
    release(tile - 1);
#pragma unroll
    for (int i = 0; i < SJ_O_REGS; ++i) o[i] = o[i] * alpha_prev[(i >> 1) & 1] + pv[i];
    alpha_prev[0] = alpha[0];
    alpha_prev[1] = alpha[1];
  };
  // The last tile's PV, with its P in p_last.
  const auto finish = [&](unsigned (&p_last)[SJ_PV_STEPS][4]) {
    my_turn();
    sj_sm90_issue_pv(pv, p_last, k_smem_of(wg_tiles - 1) + SJ_K_TILE_BYTES);
    your_turn();
    if (wg == 0) my_turn();  // warpgroup 1's last hand-over, so no barrier is left half-arrived
    sj_wgmma_wait<0>();
    sj_wgmma_fence_operands(pv);
    release(wg_tiles - 1);
#pragma unroll
    for (int i = 0; i < SJ_O_REGS; ++i) o[i] = o[i] * alpha_prev[(i >> 1) & 1] + pv[i];
  };
  // Unrolled by two so that P alternates between two register sets without copies.
  int tile = 1;
  for (; tile + 1 < wg_tiles; tile += 2) {
    step(tile, p_a, p_b);
    step(tile + 1, p_b, p_a);
  }
  if (tile < wg_tiles) {
    step(tile, p_a, p_b);
    finish(p_b);
  } else if (wg_tiles > 0) {
    finish(p_a);
  }
  // Tiles this warpgroup's rows never see: waited for (their phase has begun) and released in order.
  for (int tile = wg_tiles; tile < tiles; ++tile) {
    wait_full(tile);
    release(tile);
  }

  sj_sm90_store_rows(p, o, m, l, warp_q0, lane, b, hq, q_head, kv_head);
}
