// Host checks of the sm80 attention kernel's fragment bookkeeping (kernel_src/arch/mma_sm80.h): the
// V key permutation really turns each lane's score accumulators into its own e4m3 A fragment, the
// fp16 family needs no permutation, and the shared-memory swizzle is a conflict-free bijection.
#include <doctest/doctest.h>

#include <cstddef>
#include <set>

#include "arch/mma_sm80.h"

TEST_CASE("sm80 V slot order is a permutation inside each group of 32 keys") {
  std::set<int> slots;
  for (int key = 0; key < 32; ++key) {
    const int slot = sj_sm80_v_slot_of_key(key);
    CHECK(slot >= 0);
    CHECK(slot < 32);
    CHECK(sj_sm80_v_key_of_slot(slot) == key);
    slots.insert(slot);
  }
  CHECK(slots.size() == 32);
  CHECK(sj_sm80_v_slot_of_key(2) != 2);  // a real permutation, not the identity
}

TEST_CASE("fp8 PV: each lane's score accumulators are exactly its e4m3 A fragment after the V permutation") {
  // Scores of one 32-key step come from four n8 accumulator tiles; element i of tile j of lane L holds
  // (row c_row(L, i), key 8j + c_col(L, i)). The kernel packs A register r, byte b from tile
  // 2*(r >> 1) + (b >> 1), element 2*(r & 1) + (b & 1) (attention_sm80.cu). The A fragment expects
  // (row a8_row, column a8_col) there, and column c of A multiplies V slot c, which must hold that key.
  for (int lane = 0; lane < 32; ++lane)
    for (int r = 0; r < 4; ++r)
      for (int byte = 0; byte < 4; ++byte) {
        const int tile = 2 * (r >> 1) + (byte >> 1);
        const int element = 2 * (r & 1) + (byte & 1);
        const int score_row = sj_sm80_c_row(lane, element);
        const int score_key = 8 * tile + sj_sm80_c_col(lane, element);
        const int a_index = 4 * r + byte;
        CHECK(sj_sm80_a8_row(lane, a_index) == score_row);
        CHECK(sj_sm80_v_key_of_slot(sj_sm80_a8_col(lane, a_index)) == score_key);
      }
}

TEST_CASE("fp16 PV: score accumulators are the m16n8k16 A fragment in natural key order") {
  for (int lane = 0; lane < 32; ++lane)
    for (int r = 0; r < 4; ++r)
      for (int half = 0; half < 2; ++half) {
        const int tile = r >> 1;  // registers 0,1 from tile 0 (keys 0-7), 2,3 from tile 1 (keys 8-15)
        const int element = 2 * (r & 1) + half;
        const int a_index = 2 * r + half;
        CHECK(sj_sm80_a16_row(lane, a_index) == sj_sm80_c_row(lane, element));
        CHECK(sj_sm80_a16_col(lane, a_index) == 8 * tile + sj_sm80_c_col(lane, element));
      }
}

TEST_CASE("ldmatrix rows land where the mma B fragments expect them") {
  // ldmatrix (b16, non-transposed) gives lane L word (L & 3) of row (L >> 2) of each 8x16-byte matrix.
  // For K [key][d] int8: word t of row g holds d = 4t..4t+3 of key g, the s8 B fragment bytes 0..3.
  for (int lane = 0; lane < 32; ++lane)
    for (int i = 0; i < 4; ++i) {
      CHECK(sj_sm80_b8_col(lane, i) == lane >> 2);
      CHECK(sj_sm80_b8_row(lane, i) == 4 * (lane & 3) + i);
      CHECK(sj_sm80_b8_row(lane, i + 4) == 16 + 4 * (lane & 3) + i);  // second matrix: bytes 16..31
    }
  // For V^T [d][key] fp16: word t of row g holds keys 2t, 2t+1 of channel g, the f16 B fragment.
  for (int lane = 0; lane < 32; ++lane)
    for (int i = 0; i < 2; ++i) {
      CHECK(sj_sm80_b16_row(lane, i) == 2 * (lane & 3) + i);
      CHECK(sj_sm80_b16_row(lane, i + 2) == 8 + 2 * (lane & 3) + i);
    }
}

TEST_CASE("shared-memory swizzle: bijective per row and conflict-free for 8-row ldmatrix reads") {
  for (int chunks : {2, 4, 8, 16}) {
    CAPTURE(chunks);
    const int rows = 64;
    std::set<int> offsets;
    for (int row = 0; row < rows; ++row)
      for (int chunk = 0; chunk < chunks; ++chunk) {
        const int offset = sj_sm80_swizzle(row, chunk, chunks);
        CHECK(offset / 16 / chunks == row);  // stays inside its own row
        offsets.insert(offset);
      }
    CHECK(offsets.size() == static_cast<std::size_t>(rows * chunks));
    for (int first = 0; first < rows; first += 8)
      for (int chunk = 0; chunk < chunks; ++chunk) {
        std::set<int> bank_groups;  // 16-byte unit modulo 8 = which 4 banks
        for (int row = first; row < first + 8; ++row) bank_groups.insert((sj_sm80_swizzle(row, chunk, chunks) / 16) % 8);
        CHECK(bank_groups.size() == 8);
      }
  }
}
