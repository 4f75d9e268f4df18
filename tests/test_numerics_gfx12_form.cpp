// The gfx12 numerics of docs/NUMERICS.md ("Fused scores": the descriptor flags fused_scores and
// sum_quantized_p) in the emulator: as accurate as the default form against fp64, the row sum of the
// quantized p making the output an exact weighted mean of V, and accurate at any score magnitude. The kernel side of the same functions is
// tests/test_gfx12_layout.cpp; the NVIDIA path (the flags off) is what test_numerics_emulator checks.
#include <doctest/doctest.h>

#include <cmath>
#include <random>

#include "dev/numerics/metrics.hpp"
#include "dev/numerics/random_fill.hpp"
#include "dev/numerics/reference.hpp"
#include "numerics/emulator.hpp"
#include "random_support.hpp"

using namespace sagejit;
using namespace sagejit::numerics;
using namespace sagejit::test;

namespace {

EmulatorOptions gfx12_options(bool causal, int block_n) {
  EmulatorOptions options;
  options.causal = causal;
  options.block_n = block_n;
  options.return_lse = true;
  options.pv_into_output = true;  // what attention_gfx12's descriptor sets
  options.fused_scores = true;
  options.sum_quantized_p = true;
  return options;
}

struct Tensors {
  HostTensor q, k, v;
};

Tensors random_tensors(std::int64_t n_q, std::int64_t n_kv, std::int64_t head_dim, std::mt19937_64& rng,
                       double stddev = 1.0) {
  Tensors t{HostTensor({1, 2, n_q, head_dim}, DType::bf16, Layout::HND),
            HostTensor({1, 2, n_kv, head_dim}, DType::bf16, Layout::HND),
            HostTensor({1, 2, n_kv, head_dim}, DType::bf16, Layout::HND)};
  fill_normal(t.q, rng, 0.0, stddev);
  fill_normal(t.k, rng, 0.0, stddev);
  fill_normal(t.v, rng);
  return t;
}

}  // namespace

TEST_CASE("gfx12 form: as accurate as the default form against fp64 (D 64/128, causal, block_n 32/64, tails)") {
  std::mt19937_64 rng(logged_rng()());
  for (std::int64_t head_dim : {64, 128})
    for (std::int64_t n : {33, 300})
      for (bool causal : {false, true})
        for (int block_n : {32, 64}) {
          const Tensors t = random_tensors(n, n, head_dim, rng);
          const ReferenceResult ref = reference_attention(t.q.view(), t.k.view(), t.v.view(), Layout::HND, causal);
          const EmulatorOptions gfx12 = gfx12_options(causal, block_n);
          EmulatorOptions plain = gfx12;
          plain.fused_scores = plain.sum_quantized_p = false;
          const EmulatorResult a = emulate(t.q.view(), t.k.view(), t.v.view(), Layout::HND, gfx12);
          const EmulatorResult b = emulate(t.q.view(), t.k.view(), t.v.view(), Layout::HND, plain);
          const AccuracyMetrics ma = measure_accuracy(a.out.host_view(), ref.out);
          const AccuracyMetrics mb = measure_accuracy(b.out.host_view(), ref.out);
          const AccuracyMetrics la = measure_accuracy(std::span<const float>(a.lse), ref.lse);
          INFO("D=", head_dim, " N=", n, " causal=", causal, " block_n=", block_n, ": gfx12 ", ma.summary(), " | default ",
               mb.summary(), " | gfx12 lse max-abs ", la.max_abs_error);
          CHECK(ma.non_finite == 0);
          CHECK(ma.cosine >= 0.999);
          CHECK(ma.relative_l1 <= 0.05);
          CHECK(ma.relative_l1 <= mb.relative_l1 * 1.05);  // no worse than the default form (5% slack)
          CHECK(la.max_abs_error <= 0.05);
        }
}

TEST_CASE("gfx12 form: with the row sum of the quantized p, a V that is constant over the keys comes out exactly") {
  // out = sum(pq * v) / sum(pq) * sv is v itself when every key has the same v (up to fp32
  // rounding); with l over the fp32 p it is off by the p's quantization error (about 1% for a few keys).
  // (64 query rows: a row whose error stays inside half a bf16 ulp in every channel shows none.)
  std::mt19937_64 rng(logged_rng()());
  constexpr std::int64_t Nq = 64, N = 5, D = 64;
  HostTensor q({1, 1, Nq, D}, DType::bf16, Layout::HND), k({1, 1, N, D}, DType::bf16, Layout::HND),
      v({1, 1, N, D}, DType::bf16, Layout::HND);
  fill_normal(q, rng, 0.0, 2.0);
  fill_normal(k, rng, 0.0, 2.0);
  std::normal_distribution<float> value(0.0f, 1.0f);
  for (std::int64_t d = 0; d < D; ++d) {
    const float x = value(rng);
    for (std::int64_t n = 0; n < N; ++n) v.set(0, 0, n, d, x);
  }
  EmulatorOptions quantized = gfx12_options(false, 32), fp32_sum = quantized;
  fp32_sum.sum_quantized_p = false;
  const EmulatorResult a = emulate(q.view(), k.view(), v.view(), Layout::HND, quantized);
  const EmulatorResult b = emulate(q.view(), k.view(), v.view(), Layout::HND, fp32_sum);
  double worst_a = 0, worst_b = 0;
  for (std::int64_t i = 0; i < Nq; ++i)
    for (std::int64_t d = 0; d < D; ++d) {
      const double want = v.get(0, 0, 0, d);
      const double tolerance = std::fabs(want) * 1e-5 + 1e-6;
      worst_a = std::max(worst_a, std::fabs(a.out.get(0, 0, i, d) - want) / tolerance);
      worst_b = std::max(worst_b, std::fabs(b.out.get(0, 0, i, d) - want) / tolerance);
    }
  INFO("worst error in units of 1e-5 relative: quantized row sum ", worst_a, ", fp32 row sum ", worst_b);
  CHECK(worst_a <= 1.0);
  CHECK(worst_b > 1.0);  // the check tells the two row sums apart
}

TEST_CASE("gfx12 form: finite at any score magnitude, and as accurate as the default form there") {
  // Inputs of magnitude ~1000 give log2-domain scores ~1e7, where an fp32 ulp of the maximum is ~1
  // and the rounding up of the shifted maximum moves it by that much. (That this keeps every p
  // below the convert's overflow is tests/test_gfx12_layout.cpp's, with the device convert's model.)
  // Such peaked rows lose accuracy to the int8 quantization of q and k in either form (cos ~0.96 at
  // stddev 100), so the bar is the default form's accuracy on the same inputs.
  std::mt19937_64 rng(logged_rng()());
  for (double stddev : {1.0, 100.0, 1000.0, 3000.0}) {
    const Tensors t = random_tensors(64, 96, 128, rng, stddev);
    const EmulatorOptions gfx12 = gfx12_options(true, 64);
    EmulatorOptions plain = gfx12;
    plain.fused_scores = plain.sum_quantized_p = false;
    const ReferenceResult ref = reference_attention(t.q.view(), t.k.view(), t.v.view(), Layout::HND, true);
    const AccuracyMetrics a =
        measure_accuracy(emulate(t.q.view(), t.k.view(), t.v.view(), Layout::HND, gfx12).out.host_view(), ref.out);
    const AccuracyMetrics b =
        measure_accuracy(emulate(t.q.view(), t.k.view(), t.v.view(), Layout::HND, plain).out.host_view(), ref.out);
    INFO("input stddev ", stddev, ": gfx12 ", a.summary(), " | default ", b.summary());
    CHECK(a.non_finite == 0);
    CHECK(a.cosine >= b.cosine - 0.01);
  }
}
