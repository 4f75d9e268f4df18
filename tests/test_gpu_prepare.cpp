// The GPU prepare kernels (kernel_src/prepare.cu through kernels/attention_runner) against the CPU
// emulator's prepare stage: every workspace bit for bit (V read back through the target's key
// order), padded rows and blocks included (the workspace is poisoned before the call). lse_delta is
// fp32 "any order" per docs/NUMERICS.md, so it is compared with a tolerance.
#include <doctest/doctest.h>

#include <cmath>

#include "arch/mma_sm80.h"
#include "gpu_attention_support.hpp"
#include "dev/numerics/workspace_compare.hpp"

using namespace sagejit;
using namespace sagejit::test;

namespace {

template <typename T>
std::vector<T> read_section(const CaseResult& r, std::size_t offset, std::size_t count) {
  std::vector<T> values(count);
  std::memcpy(values.data(), r.workspace.data() + offset, count * sizeof(T));
  return values;
}

// The GPU workspace in the emulator's PreparedTensors form (same layouts by contract).
numerics::PreparedTensors gpu_prepared(const CaseResult& r, const numerics::PreparedTensors& expected) {
  numerics::PreparedTensors actual = expected;  // sizes and metadata; every buffer is replaced below
  const auto count = [](const auto& v) { return v.size(); };
  actual.q8 = read_section<std::int8_t>(r, r.layout.q8, count(expected.q8));
  actual.q_scale = read_section<float>(r, r.layout.q_scale, count(expected.q_scale));
  actual.k8 = read_section<std::int8_t>(r, r.layout.k8, count(expected.k8));
  actual.k_scale = read_section<float>(r, r.layout.k_scale, count(expected.k_scale));
  actual.k_mean = read_section<float>(r, r.layout.k_mean, count(expected.k_mean));
  if (expected.pv_fp16)
    actual.v16 = read_section<std::uint16_t>(r, r.layout.v_quant, count(expected.v16));
  else
    actual.v8 = read_section<std::uint8_t>(r, r.layout.v_quant, count(expected.v8));
  actual.v_scale = read_section<float>(r, r.layout.v_scale, count(expected.v_scale));
  actual.lse_delta = read_section<float>(r, r.layout.lse_delta, count(expected.lse_delta));
  return actual;
}

void check_prepare(const Gpu& gpu, const Case& c) {
  CAPTURE(c.describe());
  const CaseResult r = run_case(gpu, c);
  const numerics::PreparedTensors expected =
      numerics::prepare(r.q.view(), r.k.view(), r.v.view(), c.layout, c.emulator_options(r.plan));
  const numerics::PreparedTensors actual = gpu_prepared(r, expected);
  // The V key order the plan's attention kernel reads (its descriptor's VInput).
  numerics::KeySlotMap slot_map;
  if (r.plan.spec.v.order == VOrder::sm80_fp8_permuted) slot_map = [](int key) { return sj_sm80_v_slot_of_key(key); };
  const auto mismatch = numerics::compare_prepared(expected, actual, slot_map);
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

  Case c;  // bf16, D128, HND, smoothing, fp8 V, lengths off the 32/64/128 grid
  c.seq_q = 300;
  c.seq_kv = 1000;
  c.fill = Fill::channel_offsets;
  c.lse = true;
  c.attention = fp8;
  check_prepare(*gpu, c);

  c.attention = fp16;  // fp16 V, no permutation
  c.seed = 2;
  check_prepare(*gpu, c);

  Case n;  // fp16 inputs, D64, NHD with padded strides, GQA, no smoothing, 128 threads
  n.dtype = DType::fp16;
  n.head_dim = 64;
  n.layout = Layout::NHD;
  n.padding = {5, 3, 7};
  n.heads_q = 4;
  n.heads_kv = 2;
  n.seq_q = 33;
  n.seq_kv = 4097;
  n.smooth_k = false;
  n.attention = fp8;
  n.prepare = {{"threads", 128}};
  n.seed = 3;
  check_prepare(*gpu, n);

  n.smooth_k = true;  // K mean over 65 chunks of 64 (the last one of a single token)
  n.lse = true;
  n.attention = fp16;
  n.seed = 4;
  check_prepare(*gpu, n);

  Case tiny;  // one token; equal rows (ties in the int8 rounding)
  tiny.seq_q = 1;
  tiny.seq_kv = 1;
  tiny.fill = Fill::equal_rows;
  tiny.attention = fp8;
  tiny.seed = 5;
  check_prepare(*gpu, tiny);
}
