// Host checks of the wgmma fragment bookkeeping of kernel_src/arch/wgmma_sm90.h: the accumulator
// layout covers a 64 x N tile once, the P packing turns each lane's score accumulators into its e4m3
// A fragment under the sm80 V key order, the shared-memory swizzle is the hardware's 128B/64B
// pattern, and matrix descriptors carry the documented fields.
#include <doctest/doctest.h>

#include <set>
#include <utility>

#include "arch/wgmma_sm90.h"

TEST_CASE("the m64nN accumulator layout covers the tile exactly once") {
  for (const int n : {64, 128}) {
    std::set<std::pair<int, int>> seen;
    for (int warp = 0; warp < 4; ++warp)
      for (int lane = 0; lane < 32; ++lane)
        for (int i = 0; i < n / 2; ++i) {
          const int row = sj_sm90_acc_row(warp, lane, i), col = sj_sm90_acc_col(lane, i);
          CHECK(row >= 16 * warp);
          CHECK(row < 16 * warp + 16);
          CHECK(col >= 0);
          CHECK(col < n);
          seen.insert({row, col});
        }
    CHECK(seen.size() == static_cast<std::size_t>(64 * n));
  }
}

TEST_CASE("P packing: each lane's scores are its e4m3 A fragment of every PV k-step") {
  // Byte b of A register r of k-step kk is A element (a8_row, 32 kk + a8_col); column c of A
  // multiplies V slot c of the step's 32 keys, which holds key v_key_of_slot(c).
  for (int warp = 0; warp < 4; ++warp)
    for (int lane = 0; lane < 32; ++lane)
      for (int kk = 0; kk < 4; ++kk) {
        std::set<int> sources;
        for (int r = 0; r < 4; ++r)
          for (int byte = 0; byte < 4; ++byte) {
            const int element = sj_sm90_p_source(kk, r, byte);
            sources.insert(element);
            const int a_index = 4 * r + byte;
            CHECK(sj_sm90_acc_row(warp, lane, element) == 16 * warp + sj_sm80_a8_row(lane, a_index));
            CHECK(sj_sm90_acc_col(lane, element) == 32 * kk + sj_sm80_v_key_of_slot(sj_sm80_a8_col(lane, a_index)));
          }
        CHECK(sources.size() == 16);  // every score of the step used once
      }
}

TEST_CASE("the sm80 swizzle equals the hardware 128B and 64B patterns on 1 KiB-aligned tiles") {
  // Hardware: 16-byte chunk bits [4, 7) of the address XOR bits [7, 10) (128B) or [4, 6) XOR [7, 9) (64B).
  for (int row = 0; row < 64; ++row) {
    for (int chunk = 0; chunk < 8; ++chunk) {
      const unsigned address = static_cast<unsigned>(row * 128 + chunk * 16);
      CHECK(static_cast<unsigned>(sj_sm80_swizzle(row, chunk, 8)) == (address ^ (((address >> 7) & 7u) << 4)));
    }
    for (int chunk = 0; chunk < 4; ++chunk) {
      const unsigned address = static_cast<unsigned>(row * 64 + chunk * 16);
      CHECK(static_cast<unsigned>(sj_sm80_swizzle(row, chunk, 4)) == (address ^ (((address >> 7) & 3u) << 4)));
    }
  }
}

TEST_CASE("matrix descriptors: start address, stride of 8-row groups and swizzle mode") {
  const unsigned address = 0x12340u;
  const unsigned long long d128 = sj_sm90_desc(address, 128);
  CHECK((d128 & 0x3FFFull) == ((address >> 4) & 0x3FFFu));
  CHECK(((d128 >> 32) & 0x3FFFull) == 1024 / 16);
  CHECK((d128 >> 62) == 1ull);  // 128B swizzle
  const unsigned long long d64 = sj_sm90_desc(address + 32, 64);
  CHECK((d64 & 0x3FFFull) == (((address + 32) >> 4) & 0x3FFFu));
  CHECK(((d64 >> 32) & 0x3FFFull) == 512 / 16);
  CHECK((d64 >> 62) == 2ull);  // 64B swizzle
}

TEST_CASE("a descriptor moved by sj_sm90_desc_step equals the one built at the moved address") {
  // Every 16-byte-aligned tile base and offset the kernel can form (shared memory ends at 228 KiB):
  // the kernel builds its descriptors once and moves them per stage and k-step.
  constexpr unsigned shared_end = 228u * 1024u;
  for (unsigned base = 0; base < shared_end; base += 1024u)
    for (unsigned bytes = 0; base + bytes < shared_end; bytes += 16u * 37u)
      for (int row_bytes : {64, 128}) {
        const unsigned long long moved = sj_sm90_desc_step(sj_sm90_desc(base, row_bytes), bytes);
        REQUIRE(moved == sj_sm90_desc(base + bytes, row_bytes));
      }
}

TEST_CASE("visibility as a per-row bound: every element, lane, row, tile, length and causal flag") {
  // sj_key_visible is the rule (docs/NUMERICS.md step 2); SjSm90Visibility is how attention_sm90
  // applies it, one compare per element against a bound per row. Tiles before, across and past the
  // sequence end and the diagonal, lengths that are and are not multiples of the tile.
  for (int causal : {0, 1})
    for (int seq_kv : {1, 2, 63, 64, 127, 128, 129, 200, 256, 383})
      for (int first_key = 0; first_key < 384; first_key += 128)
        for (int row = 0; row < 400; row += 7)
          for (int lane = 0; lane < 32; ++lane) {
            const SjSm90Visibility visible(row, first_key, seq_kv, causal, lane);
            for (int i = 0; i < 64; ++i) {
              const int query = row + 8 * ((i >> 1) & 1), key = first_key + sj_sm90_acc_col(lane, i);
              const bool spec = key < seq_kv && (!causal || key <= query);
              REQUIRE(sj_key_visible(query, key, seq_kv, causal) == spec);
              REQUIRE(visible(i) == spec);
            }
          }
}
