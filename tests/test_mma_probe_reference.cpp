// The host half of the selftest's layout probes (dev/mma_probe_reference.hpp) on every layout, GPU or
// not: the buffers the probes allocate hold every element the probe kernels and the reference read
// (the gfx12 probe once allocated 16 K rows while key block 0 reaches key 23), and the reference runs
// (under `make sanitize` with AddressSanitizer) without touching memory outside them.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <random>

#include "arch/mma_gfx12.h"
#include "arch/mma_sm80.h"
#include "dev/mma_probe_reference.hpp"
#include "random_support.hpp"

namespace {

using namespace sagejit;

TEST_CASE("gfx12 probe buffers hold every element the probe kernel reads") {
  std::mt19937 rng(static_cast<unsigned>(test::test_seed()));
  const Gfx12ProbeData d = gfx12_probe_data(rng);
  CHECK(d.k8.size() == static_cast<std::size_t>(gfx12_probe_keys * gfx12_probe_channels));
  CHECK(d.q8.size() == static_cast<std::size_t>(gfx12_probe_queries * gfx12_probe_channels));
  CHECK(d.v8.size() == static_cast<std::size_t>(gfx12_probe_keys * gfx12_probe_v_channels));
  CHECK(d.p8.size() == static_cast<std::size_t>(gfx12_probe_queries * gfx12_probe_keys));
  int max_k_row = 0, max_v_key = 0, max_p_key = 0;
  for (int lane = 0; lane < SJ_GFX12_WAVE; ++lane) {
    // probe_gfx12.hip, S^T = K*Q^T: k8[key * 32 + channel], q8[query * 32 + channel].
    for (int byte = 0; byte < 8; ++byte) {
      const int channel = sj_g12_qk_channel(0, lane, byte);
      CHECK(channel >= 0);
      CHECK(channel < gfx12_probe_channels);
      max_k_row = std::max(max_k_row, sj_g12_k_frag_key(0, lane));
      CHECK(sj_g12_q_frag_query(lane) < gfx12_probe_queries);
      // O^T = V^T*P^T: v8[v_key * 16 + channel], p8[query * 32 + p_key].
      max_v_key = std::max(max_v_key, sj_g12_v_frag_key(0, lane, byte));
      CHECK(sj_g12_v_frag_channel(lane) < gfx12_probe_v_channels);
    }
    for (int vgpr = 0; vgpr < 8; ++vgpr) {
      max_p_key = std::max(max_p_key, sj_g12_s_key(0, lane, vgpr));
      CHECK(sj_g12_s_query(lane) < gfx12_probe_queries);
    }
  }
  CHECK(max_k_row == 23);  // key_slot: rows 8-15 of block 0 are keys 16-23
  CHECK(max_k_row < gfx12_probe_keys);
  CHECK(max_v_key < gfx12_probe_keys);
  CHECK(max_p_key < gfx12_probe_keys);
}

TEST_CASE("probe references run on every layout and give exact small-integer sums") {
  for (int round = 0; round < 20; ++round) {
    std::mt19937 rng(static_cast<unsigned>(test::test_seed() + round));
    const Gfx12ProbeData g = gfx12_probe_data(rng);
    REQUIRE(g.s_expected.size() == 32 * 8);
    REQUIRE(g.o_expected.size() == 32 * 8);
    // Step 0 sums 16 channels of int8 products; key block 0 sums 16 products of multiples of 0.25.
    for (int s : g.s_expected) CHECK(std::abs(s) <= 16 * 127 * 127);
    for (float o : g.o_expected) CHECK(o * 4 == static_cast<float>(static_cast<int>(o * 4)));
    const Sm80ProbeData n = sm80_probe_data(rng);
    REQUIRE(n.s8_expected.size() == 32 * 4);
    REQUIRE(n.e4m3_expected.size() == 32 * 4);
    REQUIRE(n.f16_expected.size() == 32 * 4);
  }
}

}  // namespace
