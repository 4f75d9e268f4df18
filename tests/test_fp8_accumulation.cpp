// The fp8 WMMA accumulator-precision probe's cases and analysis (dev/fp8_accumulation), against
// modelled accumulators of every width and both roundings: the analysis must report exactly the
// width and rounding of the model, never more (a single exact wide case after a failed narrow one
// does not count), and fp32 itself reads as 24 bits, nearest.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "arch/mma_gfx12.h"
#include "common/e4m3.h"
#include "dev/fp8_accumulation.hpp"
#include "random_support.hpp"

using namespace sagejit;

namespace {

// x rounded to `bits` significand bits, to nearest (ties to even) or toward zero.
double round_to_bits(double x, int bits, bool nearest) {
  if (x == 0) return 0;
  int exponent = 0;
  std::frexp(x, &exponent);
  const double unit = std::ldexp(1.0, exponent - bits);
  const double scaled = x / unit;
  return (nearest ? std::nearbyint(scaled) : std::trunc(scaled)) * unit;
}

// A WMMA output element that sums one case's products with `sum_bits`, adds C with `add_bits` and
// stores fp32 (the register).
float modelled(const Fp8AccumulationCase& one, int sum_bits, int add_bits, bool nearest) {
  double sum = 0;
  for (int k = 0; k < fp8_probe_key_slots; ++k)
    sum = round_to_bits(sum + double{sj_e4m3_decode(one.a[k])} * double{sj_e4m3_decode(one.b[k])}, sum_bits, nearest);
  return static_cast<float>(round_to_bits(double{one.c} + sum, add_bits, nearest));
}

}  // namespace

TEST_CASE("fp8 accumulation probe: the analysis reads back the modelled widths and rounding") {
  for (int iteration = 0; iteration < 20; ++iteration) {
    const int k0 = static_cast<int>(test::random_in(0, fp8_probe_key_slots - 1));
    int k1 = static_cast<int>(test::random_in(0, fp8_probe_key_slots - 2));
    if (k1 >= k0) ++k1;
    const std::vector<Fp8AccumulationCase> cases = fp8_accumulation_cases(k0, k1);
    for (int sum_bits = 17; sum_bits <= 24; ++sum_bits)
      for (int add_bits = 2; add_bits <= 24; ++add_bits)
        for (bool nearest : {true, false}) {
          CAPTURE(k0);
          CAPTURE(k1);
          CAPTURE(sum_bits);
          CAPTURE(add_bits);
          CAPTURE(nearest);
          std::vector<float> results;
          for (const Fp8AccumulationCase& one : cases) results.push_back(modelled(one, sum_bits, 24, nearest));
          // The product-sum cases have c = 0, so only sum_bits matters for them; C add is modelled separately.
          for (std::size_t i = 0; i < cases.size(); ++i)
            if (cases[i].kind != Fp8ProbeKind::product_sum) results[i] = modelled(cases[i], 24, add_bits, nearest);
          const Fp8AccumulationPrecision got = analyse_fp8_accumulation(cases, results);
          CHECK(got.product_sum_bits == sum_bits);
          CHECK(got.c_add_bits == add_bits);
          if (add_bits == 24) CHECK(got.rounding == (nearest ? "nearest" : "toward zero"));
          CHECK(got.full_fp32() == (sum_bits == 24 && add_bits == 24));
        }
  }
}

TEST_CASE("fp8 accumulation probe: fp32 arithmetic reads as 24 bits, nearest; a lucky wide case does not count") {
  const std::vector<Fp8AccumulationCase> cases = fp8_accumulation_cases(3, 17);
  std::vector<float> results;
  for (const Fp8AccumulationCase& one : cases) {
    float sum = 0;
    for (int k = 0; k < fp8_probe_key_slots; ++k) sum += sj_e4m3_decode(one.a[k]) * sj_e4m3_decode(one.b[k]);
    results.push_back(one.c + sum);
  }
  Fp8AccumulationPrecision got = analyse_fp8_accumulation(cases, results);
  CHECK(got.c_add_bits == 24);
  CHECK(got.product_sum_bits == 24);
  CHECK(got.rounding == "nearest");
  CHECK(got.full_fp32());
  CHECK(got.text() == "C add keeps 24 bits, product sum 24 bits (fp32: 24), rounding nearest");

  // The 10-bit C-add case wrong, every other exact: 9 bits, not 24.
  for (std::size_t i = 0; i < cases.size(); ++i)
    if (cases[i].kind == Fp8ProbeKind::c_add && cases[i].bits == 10) results[i] += 1.0f;
  got = analyse_fp8_accumulation(cases, results);
  CHECK(got.c_add_bits == 9);
  CHECK(got.product_sum_bits == 24);

  CHECK_THROWS(fp8_accumulation_cases(5, 5));
  CHECK_THROWS(fp8_accumulation_cases(0, 32));
  CHECK_THROWS(analyse_fp8_accumulation(cases, std::span<const float>(results.data(), 3)));
}

TEST_CASE("fp8 accumulation probe: the key slots are two keys both operands of output (0, 0) reach") {
  const auto [k0, k1] = fp8_probe_key_slots_summed();
  CHECK(k0 != k1);
  for (const int key : {k0, k1}) {
    CAPTURE(key);
    bool in_a = false, in_b = false;
    for (int lane = 0; lane < SJ_GFX12_WAVE; ++lane)
      for (int i = 0; i < 8; ++i) {
        in_a |= sj_g12_v_frag_channel(lane) == 0 && sj_g12_v_frag_key(0, lane, i) == key;
        in_b |= sj_g12_s_query(lane) == 0 && sj_g12_s_key(0, lane, i) == key;
      }
    CHECK(in_a);
    CHECK(in_b);
  }
}
