// MMA atoms and fragment layouts of the sm80-ISA attention kernel (mma.sync; runs on sm_89/sm_90).
//
// Fragment index functions are SJ_HOST_DEVICE so that host tests (tests/test_sm80_layout.cpp) and the
// V-layout un-permutation in the prepare tests use exactly what the kernel uses. Layouts follow the
// PTX ISA "Matrix fragments for mma.m16n8k*" tables; g = lane >> 2, t = lane & 3.
#pragma once

#include "common/prelude.h"

// ---- Fragment ownership ------------------------------------------------------------------------
// C/D of m16n8 (fp32 or s32): element i (0..3) of lane -> (row, col).
SJ_HOST_DEVICE int sj_sm80_c_row(int lane, int i) { return (lane >> 2) + ((i >> 1) << 3); }
SJ_HOST_DEVICE int sj_sm80_c_col(int lane, int i) { return ((lane & 3) << 1) + (i & 1); }

// A of m16n8k32 with 8-bit elements (s8 or e4m3): byte i (0..15) of lane, i = 4 * register + byte.
SJ_HOST_DEVICE int sj_sm80_a8_row(int lane, int i) { return (lane >> 2) + (((i >> 2) & 1) << 3); }
SJ_HOST_DEVICE int sj_sm80_a8_col(int lane, int i) { return ((lane & 3) << 2) + (i & 3) + ((i >> 3) << 4); }
// B of m16n8k32 with 8-bit elements: byte i (0..7) of lane -> (k row, n col).
SJ_HOST_DEVICE int sj_sm80_b8_row(int lane, int i) { return ((lane & 3) << 2) + (i & 3) + ((i >> 2) << 4); }
SJ_HOST_DEVICE int sj_sm80_b8_col(int lane, int /*i*/) { return lane >> 2; }

// A of m16n8k16 with 16-bit elements: half i (0..7) of lane.
SJ_HOST_DEVICE int sj_sm80_a16_row(int lane, int i) { return (lane >> 2) + (((i >> 1) & 1) << 3); }
SJ_HOST_DEVICE int sj_sm80_a16_col(int lane, int i) { return ((lane & 3) << 1) + (i & 1) + ((i >> 2) << 3); }
// B of m16n8k16 with 16-bit elements: half i (0..3) of lane -> (k row, n col).
SJ_HOST_DEVICE int sj_sm80_b16_row(int lane, int i) { return ((lane & 3) << 1) + (i & 1) + ((i >> 1) << 3); }
SJ_HOST_DEVICE int sj_sm80_b16_col(int lane, int /*i*/) { return lane >> 2; }

// ---- V key order (fp8 PV) ------------------------------------------------------------------------
// The score accumulators of four n8 tiles (32 keys) hold, for lane (g, t), keys 8j + 2t + {0,1}
// (j = 0..3). The e4m3 A fragment of m16n8k32 wants columns 4t..4t+3 and 16+4t..16+4t+3. Storing the
// keys of every aligned group of 32 in this slot order lets the kernel pack its own scores into its
// own A fragment with no shuffles: slot 4t + i (i < 2) holds key 2t + i, slot 4t + 2 + i holds key
// 8 + 2t + i, and the same for the upper 16 keys. The fp16 family (m16n8k16) needs no permutation.
SJ_HOST_DEVICE int sj_sm80_v_key_of_slot(int slot) {
  const int half = slot & 16, within = slot & 15;
  const int t = within >> 2, i = within & 3;
  return half + (i < 2 ? 2 * t + i : 8 + 2 * t + (i - 2));
}
SJ_HOST_DEVICE int sj_sm80_v_slot_of_key(int key) {
  const int half = key & 16, within = key & 15;
  const int upper = within >> 3, j = within & 7;
  return half + ((j >> 1) << 2) + (j & 1) + (upper << 1);
}

// ---- Shared-memory swizzle -----------------------------------------------------------------------
// A tile of rows of `chunks_per_row` 16-byte chunks. ldmatrix reads the same logical chunk of 8
// consecutive rows; XOR-ing the chunk index with a function of the row puts those 8 reads in 8
// distinct bank groups (conflict-free) for 2, 4, 8 or 16 chunks per row. Returns the byte offset.
SJ_HOST_DEVICE int sj_sm80_swizzle(int row, int chunk, int chunks_per_row) {
  const int flip = chunks_per_row >= 8 ? (row & 7) : ((row / (8 / chunks_per_row)) & (chunks_per_row - 1));
  return (row * chunks_per_row + (chunk ^ flip)) << 4;
}

#if defined(SJ_NVIDIA)
// ---- Device atoms ----------------------------------------------------------------------------------
SJ_DEVICE unsigned sj_smem_addr(const void* pointer) {
  unsigned long long address;
  asm("cvta.to.shared.u64 %0, %1;\n" : "=l"(address) : "l"(pointer));
  return (unsigned)address;
}

// exp2 with the MUFU approximation (ex2.approx.ftz: relative error ~2^-22, results below 2^-126
// flushed to 0), which docs/NUMERICS.md allows in the attention stage. NVRTC compiles without
// --use_fast_math (prepare must be exact), so exp2f would add the slow-path range handling.
SJ_DEVICE float sj_sm80_exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

SJ_DEVICE void sj_cp_async16(unsigned smem, const void* global) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(smem), "l"(global));
}
SJ_DEVICE void sj_cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
SJ_DEVICE void sj_cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

// Copies `rows` rows of `chunks` 16-byte chunks from `global` (row stride `row_bytes`) into a
// swizzled shared tile. Thread x always copies chunk x % chunks of rows x / chunks + i * (threads /
// chunks): one base address per thread plus a constant stride, so the copy loop needs no per-chunk
// address registers (the swizzle of row r + 8k equals that of row r for the strides used here).
template <int threads, int rows, int chunks>
SJ_DEVICE void sj_copy_tile(unsigned smem, const sj_u8* global, sj_i64 row_bytes) {
  constexpr int rows_per_pass = threads / chunks;
  constexpr int passes = (rows + rows_per_pass - 1) / rows_per_pass;
  const int row0 = (int)sj_thread_x() / chunks, chunk = (int)sj_thread_x() % chunks;
  const sj_u8* source = global + row0 * row_bytes + chunk * 16;
#pragma unroll
  for (int i = 0; i < passes; ++i) {
    const int row = row0 + i * rows_per_pass;
    if (rows % rows_per_pass == 0 || row < rows)
      sj_cp_async16(smem + sj_sm80_swizzle(row, chunk, chunks), source + i * rows_per_pass * row_bytes);
  }
}

SJ_DEVICE void sj_ldmatrix_x4(unsigned (&r)[4], unsigned smem) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem));
}

// D = A(16x32 s8) * B(32x8 s8) + C, s32.
SJ_DEVICE void sj_mma_s8(int (&c)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+r"(c[0]), "+r"(c[1]), "+r"(c[2]), "+r"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// D = A(16x32 e4m3) * B(32x8 e4m3) + C, f32 (sm_89+).
SJ_DEVICE void sj_mma_e4m3(float (&c)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// D = A(16x16 f16) * B(16x8 f16) + C, f32.
SJ_DEVICE void sj_mma_f16(float (&c)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// Four fp32 -> four e4m3 (RNE, saturating to +-448) packed low to high: lo0, lo1, hi0, hi1.
SJ_DEVICE unsigned sj_pack_e4m3x4(float lo0, float lo1, float hi0, float hi1) {
  unsigned short lo, hi;
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;\n" : "=h"(lo) : "f"(lo1), "f"(lo0));
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;\n" : "=h"(hi) : "f"(hi1), "f"(hi0));
  return (unsigned)lo | ((unsigned)hi << 16);
}

// Two fp32 -> two fp16 (RNE) packed low, high.
SJ_DEVICE unsigned sj_pack_f16x2(float lo, float hi) {
  unsigned packed;
  asm("cvt.rn.f16x2.f32 %0, %1, %2;\n" : "=r"(packed) : "f"(hi), "f"(lo));
  return packed;
}

SJ_DEVICE float sj_shfl_xor(float value, int mask) { return __shfl_xor_sync(0xffffffffu, value, mask); }
#endif
