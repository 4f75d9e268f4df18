// The GPU prepare kernels (kernel_src/prepare.cu through plan/attention_runner) against the CPU
// emulator's prepare stage: every workspace bit for bit (V read back through the target's key
// order), padded rows and blocks included (the workspace is poisoned before the call). lse_delta is
// fp32 "any order" per docs/NUMERICS.md, so it is compared with a tolerance.
#include <doctest/doctest.h>

#include <cmath>

#include "arch/mma_sm80.h"
#include "gpu_attention_support.hpp"
#include "dev/numerics/workspace_compare.hpp"
#include "random_support.hpp"

using namespace sagejit;
using namespace sagejit::test;

namespace {

void check_prepare(const Gpu& gpu, const Case& c) {
  CAPTURE(c.describe());
  const CaseResult r = run_case(gpu, c);
  const numerics::PreparedTensors expected =
      numerics::prepare(r.q.view(), r.k.view(), r.v.view(), c.layout, emulator_options_for(r.plan, r.call));
  const numerics::PreparedTensors actual = prepared_from_workspace(std::as_bytes(std::span(r.workspace)), r.plan, r.call);
  const auto mismatch = numerics::compare_prepared(expected, actual, v_key_slots(r.plan));
  if (mismatch) FAIL(mismatch->describe());

  if (c.lse && c.smooth_k) {
    REQUIRE(actual.lse_delta.size() == expected.lse_delta.size());
    double worst = 0.0;
    for (std::size_t i = 0; i < expected.lse_delta.size(); ++i) {
      const double e = expected.lse_delta[i], a = actual.lse_delta[i];
      const double error = std::abs(a - e) / (1.0 + std::abs(e));
      worst = std::isfinite(a) ? std::max(worst, error) : 1e30;
    }
    MESSAGE("lse_delta worst relative error " << worst);
    CHECK(worst < 1e-4);  // fp32 dot of D terms in another order
  }
}

}  // namespace

TEST_CASE("GPU prepare matches the emulator bit for bit") {
  const auto gpu = gpu_or_skip();
  if (!gpu) return;
  const TileConfig fp8{{"warps", 4}, {"rows_per_warp", 16}, {"block_n", 64}, {"stages", 2}, {"pv_fp16", 0}};
  const TileConfig fp16{{"warps", 4}, {"rows_per_warp", 16}, {"block_n", 64}, {"stages", 2}, {"pv_fp16", 1}};

  // bf16, D128, HND, smoothing, fp8 V, lengths off the 32/64/128 grid
  Case c{.seq_q = 300, .seq_kv = 1000, .lse = true, .fill = Fill::channel_offsets, .attention = fp8};
  check_prepare(*gpu, c);

  c.attention = fp16;  // fp16 V, no permutation
  c.seed = 2;
  check_prepare(*gpu, c);

  // fp16 inputs, D64, NHD with padded strides, GQA, no smoothing, 128 threads
  Case n{.dtype = DType::fp16, .heads_q = 4, .heads_kv = 2, .seq_q = 33, .seq_kv = 4097, .head_dim = 64,
         .layout = Layout::NHD, .padding = {5, 3, 7}, .smooth_k = false, .attention = fp8,
         .prepare = {{"threads", 128}}, .seed = 3};
  check_prepare(*gpu, n);

  n.smooth_k = true;  // K mean over 65 chunks of 64 (the last one of a single token)
  n.lse = true;
  n.attention = fp16;
  n.seed = 4;
  check_prepare(*gpu, n);

  // D256 (prepare stages a V tile in two 128-channel passes), NHD with padded strides, both V formats
  // and both thread counts
  for (int threads : {128, 256}) {
    const Case wide{.seq_q = 100, .seq_kv = 700, .head_dim = 256, .layout = Layout::NHD, .padding = {2, 6, 4},
                    .lse = true, .fill = Fill::channel_offsets, .attention = threads == 128 ? fp8 : fp16,
                    .prepare = {{"threads", threads}}, .seed = static_cast<std::uint64_t>(6 + threads)};
    check_prepare(*gpu, wide);
  }

  // one token; equal rows (ties in the int8 rounding)
  const Case tiny{.seq_q = 1, .seq_kv = 1, .fill = Fill::equal_rows, .attention = fp8, .seed = 5};
  check_prepare(*gpu, tiny);
}

// The quantizers' fast path (quant.h: sj_div_rn_by with the reciprocal hoisted per block/channel,
// branch-free rounding) on the values where a wrong quotient would show: int8 ties (x / scale exactly
// k + 0.5, for scale 1 and 0.5), e4m3 midpoints (normal, subnormal, saturation), -0 and tiny values,
// next to random values of the same blocks. Positions of the special values are random (seed logged).
TEST_CASE("GPU prepare: int8 ties and e4m3 midpoints match the emulator bit for bit") {
  const auto gpu = gpu_or_skip();
  if (!gpu) return;
  const float k_values[] = {0.5f, -0.5f, 1.5f, -2.5f, 3.5f, 62.5f, -100.5f, 126.5f, -126.5f, 0.25f, 0.75f, -1.25f,
                            0.0f, -0.0f, 1e-30f, 7.0f};
  const float v_values[] = {1.0625f, -1.0625f, 1.1875f, 248.0f, -248.0f, 0.0029296875f, 0.0009765625f,
                            -0.0048828125f, 0.0f, -0.0f, 1e-30f, 0.01611328125f, 447.0f, 3.0f, -0.5f, 2.25f};
  const std::uint64_t seed = test::random_in(0, 1 << 30);
  CAPTURE(seed);
  for (int threads : {128, 256})
    for (std::int64_t head_dim : {64, 128, 256}) {
      Case c{.seq_q = 64, .seq_kv = 200, .head_dim = head_dim, .smooth_k = false,
             .attention = {{"warps", 4}, {"rows_per_warp", 16}, {"block_n", 64}, {"stages", 2}, {"pv_fp16", 0}},
             .prepare = {{"threads", threads}}, .seed = seed + static_cast<std::uint64_t>(threads + head_dim)};
      c.edit_inputs = [&, seed](numerics::HostTensor&, numerics::HostTensor& k, numerics::HostTensor& v) {
        std::mt19937_64 rng(seed);
        for (std::int64_t h = 0; h < 2; ++h)
          for (std::int64_t n = 0; n < c.seq_kv; ++n)
            for (std::int64_t d = 0; d < head_dim; ++d) {
              if (rng() % 2 == 0) k.set(0, h, n, d, k_values[rng() % std::size(k_values)]);
              if (rng() % 2 == 0) v.set(0, h, n, d, v_values[rng() % std::size(v_values)]);
            }
        for (std::int64_t h = 0; h < 2; ++h) {
          // Scale 1 for even 32-row K blocks (amax 127), 0.5 for odd ones (amax 63.5: the random
          // normal values stay below it); V scale 1 in every channel (amax 448).
          for (std::int64_t n = 0; n < c.seq_kv; n += 32) {
            for (std::int64_t r = n; r < std::min<std::int64_t>(n + 32, c.seq_kv); ++r)
              for (std::int64_t d = 0; d < head_dim; ++d)
                if ((n / 32) % 2 == 1 && std::abs(k.get(0, h, r, d)) > 63.5f) k.set(0, h, r, d, 1.25f);
            k.set(0, h, n, 0, (n / 32) % 2 == 0 ? 127.0f : 63.5f);
          }
          for (std::int64_t d = 0; d < head_dim; ++d) v.set(0, h, static_cast<std::int64_t>(rng() % 200), d, 448.0f);
        }
      };
      check_prepare(*gpu, c);
    }
}

// Zero-padded head dims: prepare reads only the call's D channels (the strides are padded by poisoned
// NaN elements where channels D.. would be read) and writes the kernel head dim's rows, the padded
// channels 0, as the emulator does with the plan's head_dim_pad. Flags random (logged seed).
TEST_CASE("GPU prepare of zero-padded head dims matches the emulator bit for bit") {
  const auto gpu = gpu_or_skip();
  if (!gpu) return;
  for (std::int64_t head_dim : {8, 32, 40, 80, 96, 120, 160, 248}) {
    Case c = random_padded_head_dim_case(head_dim, 400, 1200);
    c.smooth_k = test::random_in(0, 3) != 0;
    c.lse = test::random_in(0, 1) != 0;
    c.fill = test::random_in(0, 2) == 0 ? Fill::channel_offsets : Fill::normal;
    c.attention = {};  // the tuning tables' kernel and V format for this GPU
    if (gpu->target.rfind("sm_", 0) == 0)  // on NVIDIA also each mma.sync PV family's V format
      c.attention = {{"warps", 4}, {"rows_per_warp", 16}, {"block_n", 64}, {"stages", 2},
                     {"pv_fp16", static_cast<int>(test::random_in(0, 1))}};
    c.prepare = {{"threads", test::random_in(0, 1) != 0 ? 256 : 128}};
    c.seed = static_cast<std::uint64_t>(test::random_in(0, 1 << 30));
    check_prepare(*gpu, c);
  }
}
