// Warpgroup MMA atoms of the sm_90a attention kernel (wgmma; SASS IGMMA/QGMMA, Hopper only).
//
// A warpgroup (4 consecutive warps, 128 threads) issues one wgmma.mma_async for a 64-row tile. The
// B operand (and A of QK^T) is read from shared memory through a 64-bit matrix descriptor; operands
// must be K-major (8-bit types allow nothing else), stored in the hardware's swizzled layout:
// 8-row groups of rows of 64 or 128 bytes, 16-byte chunk c of row r stored at chunk c ^ f(r) with
// f the sm80 swizzle of arch/mma_sm80.h (which equals the hardware's 64B/128B patterns), each
// group's base aligned to the pattern (the kernel aligns every tile to 1024 bytes).
//
// Register fragments: for warp w of the warpgroup and lane (g = lane >> 2, t = lane & 3), the
// accumulator of m64nNk32 holds, for every n8 block j, rows 16w + g (d[4j], d[4j+1]) and 16w + g + 8
// (d[4j+2], d[4j+3]) at columns 8j + 2t, 8j + 2t + 1: the mma.sync m16n8 C layout repeated along N.
// An 8-bit A fragment from registers is the mma.sync m16n8k32 A layout of the warp's 16 rows, so
// the sm80 V key order (sj_sm80_v_slot_of_key) turns scores into the PV A operand with no shuffles.
#pragma once

#include "arch/mma_sm80.h"
#include "common/online_softmax.h"
#include "common/prelude.h"

// Accumulator element i of lane in warp w (0..3) of a warpgroup -> (row, column) of the 64xN tile.
SJ_HOST_DEVICE int sj_sm90_acc_row(int warp, int lane, int i) { return 16 * warp + sj_sm80_c_row(lane, i & 3); }
// The column of element i past the lane's first one (2t, element 0's): the same in every lane, so
// a per-row bound on it is a per-element compare with a constant.
SJ_HOST_DEVICE int sj_sm90_acc_col_offset(int i) { return 8 * (i >> 2) + (i & 1); }
SJ_HOST_DEVICE int sj_sm90_acc_col(int lane, int i) { return sj_sm80_c_col(lane, 0) + sj_sm90_acc_col_offset(i); }

// Which of a lane's score elements its rows see (sj_key_visible), as one compare per element: element
// i of row h (query row + 8 h) is visible iff its column offset (a constant) is at most bound[h], the
// row's last visible key less the lane's first key of the tile (`first_key` + 2t).
struct SjSm90Visibility {
  int bound[2];
  SJ_HOST_DEVICE SjSm90Visibility(int row, int first_key, int seq_kv, int causal, int lane) {
    const int lane_key = first_key + sj_sm90_acc_col(lane, 0);
    bound[0] = sj_last_visible_key(row, seq_kv, causal) - lane_key;
    bound[1] = sj_last_visible_key(row + 8, seq_kv, causal) - lane_key;
  }
  SJ_HOST_DEVICE bool operator()(int i) const { return sj_sm90_acc_col_offset(i) <= bound[(i >> 1) & 1]; }
};

// Score accumulator element (of a 64 x BLOCK_N tile) that supplies byte `byte` (0..3) of register
// `r` (0..3) of the e4m3 A fragment of PV k-step `kk` (keys 32 kk .. 32 kk + 31): n8 blocks
// 4kk + 2 (r >> 1) + (byte >> 1), its row g (r even) or g + 8 (r odd), columns 2t, 2t + 1. With V in
// the sm80 slot order this is the A layout (checked on the host by tests/test_sm90_layout.cpp).
SJ_HOST_DEVICE int sj_sm90_p_source(int kk, int r, int byte) {
  return 16 * kk + 4 * (2 * (r >> 1) + (byte >> 1)) + 2 * (r & 1) + (byte & 1);
}

// The kernel's second argument when it loads K and V with the tensor copy engine (SJ_TMA): two
// CUtensorMap objects (128 bytes each, 64-byte aligned, opaque; encoded on the host by
// cuTensorMapEncodeTiled) passed by value as a __grid_constant__ parameter. k: int8 K as
// (D, Nk_pad, B * Hk) with boxes (D, BLOCK_N, 1); v: e4m3 V^T as (Nk_pad, D, B * Hk) with boxes
// (BLOCK_N, D, 1); both in the swizzle of their rows (D or BLOCK_N bytes: 128B or 64B), which is
// the layout the wgmma descriptors below read.
struct SjSm90TensorMaps {
  alignas(64) unsigned char k[128];
  alignas(64) unsigned char v[128];
};

// The swizzle of a tile whose rows are `row_bytes` (64 | 128) long: 128B or 64B, the row length (the
// tensor maps of SJ_TMA write tiles in the same swizzle).
SJ_HOST_DEVICE int sj_sm90_swizzle_bytes(int row_bytes) { return row_bytes == 128 ? 128 : 64; }

// Swizzle mode field of the descriptor for rows of `row_bytes` (64 -> 64B = 2, 128 -> 128B = 1).
SJ_HOST_DEVICE unsigned long long sj_sm90_desc(unsigned smem_address, int row_bytes) {
  const unsigned long long mode = sj_sm90_swizzle_bytes(row_bytes) == 128 ? 1ull : 2ull;
  const unsigned long long stride = (unsigned long long)(8 * row_bytes) >> 4;  // next 8-row group
  const unsigned long long leading = 1ull;  // unused by swizzled K-major layouts
  return ((unsigned long long)(smem_address >> 4) & 0x3FFFull) | (leading << 16) | (stride << 32) | (mode << 62);
}

// The descriptor of the tile `bytes` (a multiple of 16) further on: its start address field moves by
// bytes >> 4. Equal to sj_sm90_desc(smem_address + bytes, row_bytes) while the address stays below
// 256 KiB (the 14-bit field, 16-byte units, never carries: shared memory ends at 228 KiB), and one
// add of an immediate where the descriptor is built once.
SJ_HOST_DEVICE unsigned long long sj_sm90_desc_step(unsigned long long desc, unsigned bytes) { return desc + (bytes >> 4); }

#if defined(SJ_NVIDIA)
// Orders this thread's earlier generic-proxy shared-memory writes (st.shared, cp.async after its
// wait) before later async-proxy reads (wgmma operands); a barrier then publishes them to the CTA.
SJ_DEVICE void sj_fence_async_shared() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }
// Before the first wgmma that reads registers written by ordinary instructions (accumulators, A).
SJ_DEVICE void sj_wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
SJ_DEVICE void sj_wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N>
SJ_DEVICE void sj_wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
// Keeps the compiler from moving accumulator reads above the wait that completes them.
template <int N>
SJ_DEVICE void sj_wgmma_fence_operands(int (&d)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+r"(d[i])::"memory");
}
template <int N>
SJ_DEVICE void sj_wgmma_fence_operands(float (&d)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

// ---- Tensor copies completing on an mbarrier (SJ_TMA) --------------------------------------------
// An mbarrier expecting `arrivals` arrivals per phase; fence_mbarrier_init makes the initialisation
// visible to the copy engine before a barrier publishes it to the other threads.
SJ_DEVICE void sj_mbarrier_init(unsigned bar, unsigned arrivals) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(arrivals) : "memory");
}
// Adds `value` to the shared int at `addr` and returns the old value, with acquire-release order at
// CTA scope (a release of this thread's earlier accesses, an acquire of those released before it).
SJ_DEVICE int sj_shared_add_acq_rel(unsigned addr, int value) {
  int old;
  asm volatile("atom.acq_rel.cta.shared::cta.add.u32 %0, [%1], %2;\n" : "=r"(old) : "r"(addr), "r"(value) : "memory");
  return old;
}
SJ_DEVICE void sj_fence_mbarrier_init() { asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory"); }
// One arrival that also announces `bytes` of copies the phase must wait for.
SJ_DEVICE void sj_mbarrier_arrive_expect_tx(unsigned bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}
// Waits until the phase of parity `parity` has completed (its arrivals and its bytes).
SJ_DEVICE void sj_mbarrier_wait(unsigned bar, unsigned parity) {
  asm volatile(
      "{\n.reg .pred done;\nsj_wait:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra sj_wait;\n}\n" ::"r"(bar),
      "r"(parity)
      : "memory");
}
// Box (c0, c1, c2) of the 3D tensor map at generic address `map` (a __grid_constant__ parameter)
// into shared memory at `smem`, completing `bar`'s transaction bytes.
SJ_DEVICE void sj_tma_load_3d(unsigned smem, const void* map, int c0, int c1, int c2, unsigned bar) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], [%5];\n" ::"r"(smem),
      "l"(map), "r"(c0), "r"(c1), "r"(c2), "r"(bar)
      : "memory");
}
SJ_DEVICE void sj_tma_prefetch_map(const void* map) {
  asm volatile("prefetch.tensormap [%0];\n" ::"l"(map) : "memory");
}

// ---- Atoms (operand lists written out: inline asm needs literal strings) -------------------------
// S(+)= A(64x32 s8, smem) * B(32x64 s8, smem)^T-as-K-major; accumulate = 0 overwrites S.
SJ_DEVICE void sj_wgmma_s8_n64(int (&d)[32], unsigned long long desc_a, unsigned long long desc_b, int accumulate) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k32.s32.s8.s8 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "
      "%32, %33, p;\n}\n"
      : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3]), "+r"(d[4]), "+r"(d[5]), "+r"(d[6]), "+r"(d[7]), "+r"(d[8]), "+r"(d[9]), "+r"(d[10]), "+r"(d[11]), "+r"(d[12]), "+r"(d[13]), "+r"(d[14]), "+r"(d[15]), "+r"(d[16]), "+r"(d[17]), "+r"(d[18]), "+r"(d[19]), "+r"(d[20]), "+r"(d[21]), "+r"(d[22]), "+r"(d[23]), "+r"(d[24]), "+r"(d[25]), "+r"(d[26]), "+r"(d[27]), "+r"(d[28]), "+r"(d[29]), "+r"(d[30]), "+r"(d[31])
      : "l"(desc_a), "l"(desc_b), "r"(accumulate));
}

// O(+)= A(64x32 e4m3, registers) * B(32x64 e4m3, smem, K-major); accumulate = 0 overwrites O.
SJ_DEVICE void sj_wgmma_e4m3_n64(float (&d)[32], const unsigned (&a)[4], unsigned long long desc_b, int accumulate) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k32.f32.e4m3.e4m3 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "
      "{%32, %33, %34, %35}, %36, p, 1, 1;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(accumulate));
}

// S(+)= A(64x32 s8, smem) * B(32x128 s8, smem)^T-as-K-major; accumulate = 0 overwrites S.
SJ_DEVICE void sj_wgmma_s8_n128(int (&d)[64], unsigned long long desc_a, unsigned long long desc_b, int accumulate) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k32.s32.s8.s8 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, "
      "%64, %65, p;\n}\n"
      : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3]), "+r"(d[4]), "+r"(d[5]), "+r"(d[6]), "+r"(d[7]), "+r"(d[8]), "+r"(d[9]), "+r"(d[10]), "+r"(d[11]), "+r"(d[12]), "+r"(d[13]), "+r"(d[14]), "+r"(d[15]), "+r"(d[16]), "+r"(d[17]), "+r"(d[18]), "+r"(d[19]), "+r"(d[20]), "+r"(d[21]), "+r"(d[22]), "+r"(d[23]), "+r"(d[24]), "+r"(d[25]), "+r"(d[26]), "+r"(d[27]), "+r"(d[28]), "+r"(d[29]), "+r"(d[30]), "+r"(d[31]), "+r"(d[32]), "+r"(d[33]), "+r"(d[34]), "+r"(d[35]), "+r"(d[36]), "+r"(d[37]), "+r"(d[38]), "+r"(d[39]), "+r"(d[40]), "+r"(d[41]), "+r"(d[42]), "+r"(d[43]), "+r"(d[44]), "+r"(d[45]), "+r"(d[46]), "+r"(d[47]), "+r"(d[48]), "+r"(d[49]), "+r"(d[50]), "+r"(d[51]), "+r"(d[52]), "+r"(d[53]), "+r"(d[54]), "+r"(d[55]), "+r"(d[56]), "+r"(d[57]), "+r"(d[58]), "+r"(d[59]), "+r"(d[60]), "+r"(d[61]), "+r"(d[62]), "+r"(d[63])
      : "l"(desc_a), "l"(desc_b), "r"(accumulate));
}

// O(+)= A(64x32 e4m3, registers) * B(32x128 e4m3, smem, K-major); accumulate = 0 overwrites O.
SJ_DEVICE void sj_wgmma_e4m3_n128(float (&d)[64], const unsigned (&a)[4], unsigned long long desc_b, int accumulate) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, "
      "{%64, %65, %66, %67}, %68, p, 1, 1;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(accumulate));
}

#endif
