// Accuracy metrics and the fp64 reference on hand-computed cases.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <vector>

#include <fmt/format.h>

#include "core/error.hpp"
#include "dev/numerics/metrics.hpp"
#include "dev/numerics/reference.hpp"

using namespace sagejit::numerics;
using sagejit::DType;
using sagejit::Layout;

TEST_CASE("metrics on hand-computed vectors") {
  const std::vector<double> reference{1.0, 2.0, 4.0}, actual{1.0, 2.0, 3.0};
  const AccuracyMetrics m = measure_accuracy(std::span<const double>(actual), reference);
  CHECK(m.cosine == doctest::Approx(17.0 / std::sqrt(14.0 * 21.0)));
  CHECK(m.relative_l1 == doctest::Approx(1.0 / 7.0));
  CHECK(m.rmse == doctest::Approx(std::sqrt(1.0 / 3.0)));
  CHECK(m.max_abs_error == 1.0);
  CHECK(m.non_finite == 0);
  CHECK(m.count == 3);
  const std::string text = fmt::format("{}", m);
  CHECK(text == m.summary());
  CHECK(text.find("rel-L1 0.14286") != std::string::npos);

  const AccuracyMetrics same = measure_accuracy(std::span<const double>(reference), reference);
  CHECK(same.cosine == doctest::Approx(1.0));
  CHECK(same.relative_l1 == 0.0);
  CHECK(same.rmse == 0.0);

  // A NaN is counted and poisons the other figures (no threshold can pass).
  const std::vector<float> with_nan{1.0f, std::numeric_limits<float>::quiet_NaN(), 4.0f};
  const AccuracyMetrics bad = measure_accuracy(std::span<const float>(with_nan), reference);
  CHECK(bad.non_finite == 1);
  CHECK(std::isnan(bad.cosine));
  CHECK(std::isnan(bad.max_abs_error));
  CHECK_FALSE(bad.cosine >= 0.999);

  const std::vector<double> shorter{1.0};
  CHECK_THROWS_AS(measure_accuracy(std::span<const double>(shorter), reference), sagejit::Error);
}

TEST_CASE("fp64 reference on a hand-computed two-key problem, causal and GQA") {
  // One batch, 2 query heads sharing 1 kv head, 2 queries, 2 keys, D = 2, sm_scale 1.
  HostTensor q({1, 2, 2, 2}, DType::bf16, Layout::HND), k({1, 1, 2, 2}, DType::bf16, Layout::HND),
      v({1, 1, 2, 2}, DType::bf16, Layout::HND);
  for (int h = 0; h < 2; ++h) {
    const float scale = h == 0 ? 1.0f : 2.0f;
    q.set(0, h, 0, 0, scale); q.set(0, h, 0, 1, 0.0f);
    q.set(0, h, 1, 0, scale); q.set(0, h, 1, 1, 0.0f);
  }
  k.set(0, 0, 0, 0, 0.0f); k.set(0, 0, 0, 1, 0.0f);
  k.set(0, 0, 1, 0, 1.0f); k.set(0, 0, 1, 1, 0.0f);
  v.set(0, 0, 0, 0, 1.0f); v.set(0, 0, 0, 1, 0.0f);
  v.set(0, 0, 1, 0, 0.0f); v.set(0, 0, 1, 1, 2.0f);
  const double e = std::exp(1.0), e2 = std::exp(2.0);

  const ReferenceResult full = reference_attention(q.view(), k.view(), v.view(), Layout::HND, false, 1.0f);
  // head 0: scores (0, 1); head 1: scores (0, 2).
  CHECK(full.out[0] == doctest::Approx(1.0 / (1.0 + e)));
  CHECK(full.out[1] == doctest::Approx(2.0 * e / (1.0 + e)));
  CHECK(full.lse[0] == doctest::Approx(std::log(1.0 + e)));
  CHECK(full.out[4] == doctest::Approx(1.0 / (1.0 + e2)));  // head 1, query 0
  CHECK(full.lse[2] == doctest::Approx(std::log(1.0 + e2)));

  const ReferenceResult causal = reference_attention(q.view(), k.view(), v.view(), Layout::HND, true, 1.0f);
  CHECK(causal.out[0] == 1.0);  // query 0 sees key 0 only
  CHECK(causal.out[1] == 0.0);
  CHECK(causal.lse[0] == 0.0);
  CHECK(causal.out[2] == doctest::Approx(1.0 / (1.0 + e)));  // query 1 sees both
  CHECK(causal.lse[1] == doctest::Approx(std::log(1.0 + e)));

  // Default sm_scale is 1/sqrt(D).
  const ReferenceResult scaled = reference_attention(q.view(), k.view(), v.view(), Layout::HND, false);
  const double es = std::exp(1.0 / std::sqrt(2.0));
  CHECK(scaled.lse[0] == doctest::Approx(std::log(1.0 + es)).epsilon(1e-6));

  HostTensor three_heads({1, 3, 2, 2}, DType::bf16, Layout::HND);
  HostTensor two_kv({1, 2, 2, 2}, DType::bf16, Layout::HND);
  CHECK_THROWS_AS(reference_attention(three_heads.view(), two_kv.view(), two_kv.view(), Layout::HND, false),
                  sagejit::Error);
}
