#include "dev/fp8_accumulation.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "arch/mma_gfx12.h"
#include "common/e4m3.h"
#include "core/error.hpp"

namespace sagejit {
namespace {

constexpr int fp32_bits = 24;

// Powers of two from 2^-9 (E4M3's smallest subnormal) to 2^8 are exact E4M3 values.
std::uint8_t e4m3_power_of_two(int exponent) { return sj_e4m3_encode(std::ldexp(1.0f, exponent)); }

}  // namespace

std::vector<Fp8AccumulationCase> fp8_accumulation_cases(int k0, int k1) {
  if (k0 < 0 || k1 < 0 || k0 >= fp8_probe_key_slots || k1 >= fp8_probe_key_slots || k0 == k1)
    fail(ErrorCode::invalid_argument, "fp8 accumulation probe: key slots {} and {} must be distinct and in [0, {})", k0,
         k1, fp8_probe_key_slots);
  std::vector<Fp8AccumulationCase> cases;
  // C add: 2^m + 1*1 needs m + 1 bits. Up to 2 bits more than fp32 has, so fp32 reads as 24.
  for (int m = 1; m <= fp32_bits + 1; ++m) {
    Fp8AccumulationCase one;
    one.kind = Fp8ProbeKind::c_add;
    one.bits = m + 1;
    one.c = std::ldexp(1.0f, m);
    one.a[k0] = one.b[k0] = e4m3_power_of_two(0);
    one.exact = std::ldexp(1.0, m) + 1.0;
    cases.push_back(one);
  }
  // Product sum: 2^8*2^8 + 2^-j needs 17 + j bits; 2^-j = 2^-ceil(j/2) * 2^-floor(j/2), both >= 2^-9.
  for (int j = 0; j <= 18 && 17 + j <= fp32_bits + 1; ++j) {
    Fp8AccumulationCase one;
    one.kind = Fp8ProbeKind::product_sum;
    one.bits = 17 + j;
    one.a[k0] = one.b[k0] = e4m3_power_of_two(8);
    one.a[k1] = e4m3_power_of_two(-((j + 1) / 2));
    one.b[k1] = e4m3_power_of_two(-(j / 2));
    one.exact = std::ldexp(1.0, 16) + std::ldexp(1.0, -j);
    cases.push_back(one);
  }
  // Rounding of the C add: 2^24 + 1.5*2 = 2^24 + 3, halfway between 2^24 + 2 and 2^24 + 4.
  Fp8AccumulationCase rounding;
  rounding.kind = Fp8ProbeKind::rounding;
  rounding.c = std::ldexp(1.0f, 24);
  rounding.a[k0] = sj_e4m3_encode(1.5f);
  rounding.b[k0] = e4m3_power_of_two(1);
  rounding.exact = std::ldexp(1.0, 24) + 3.0;
  cases.push_back(rounding);
  return cases;
}

std::pair<int, int> fp8_probe_key_slots_summed() {
  std::vector<int> a_keys, both;
  for (int lane = 0; lane < SJ_GFX12_WAVE; ++lane)
    if (sj_g12_v_frag_channel(lane) == 0)
      for (int byte = 0; byte < 8; ++byte) a_keys.push_back(sj_g12_v_frag_key(0, lane, byte));
  for (int lane = 0; lane < SJ_GFX12_WAVE; ++lane)
    if (sj_g12_s_query(lane) == 0)
      for (int vgpr = 0; vgpr < 8; ++vgpr) {
        const int key = sj_g12_s_key(0, lane, vgpr);
        if (std::find(a_keys.begin(), a_keys.end(), key) != a_keys.end() &&
            std::find(both.begin(), both.end(), key) == both.end())
          both.push_back(key);
      }
  if (both.size() < 2 || both[0] >= fp8_probe_key_slots || both[1] >= fp8_probe_key_slots)
    fail(ErrorCode::internal, "fp8 accumulation probe: the gfx12 index functions give {} keys summed by one output element",
         both.size());
  return {both[0], both[1]};
}

std::string Fp8AccumulationPrecision::text() const {
  return fmt::format("C add keeps {} bits, product sum {} bits (fp32: 24), rounding {}", c_add_bits, product_sum_bits,
                     rounding);
}

Fp8AccumulationPrecision analyse_fp8_accumulation(std::span<const Fp8AccumulationCase> cases,
                                                  std::span<const float> results) {
  if (cases.size() != results.size())
    fail(ErrorCode::invalid_argument, "fp8 accumulation probe: {} results for {} cases", results.size(), cases.size());
  Fp8AccumulationPrecision precision;
  // Cases come narrowest first per kind; a width counts only while every narrower case was exact.
  bool c_add_intact = true, sum_intact = true;
  precision.c_add_bits = precision.product_sum_bits = 1;
  precision.rounding = "not measured";
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const Fp8AccumulationCase& one = cases[i];
    const bool exact = static_cast<double>(results[i]) == one.exact;
    switch (one.kind) {
      case Fp8ProbeKind::c_add:
        c_add_intact = c_add_intact && exact;
        if (c_add_intact) precision.c_add_bits = one.bits;
        break;
      case Fp8ProbeKind::product_sum:
        sum_intact = sum_intact && exact;
        if (sum_intact) precision.product_sum_bits = one.bits;
        break;
      case Fp8ProbeKind::rounding: {
        const double got = results[i], base = std::ldexp(1.0, 24);
        precision.rounding = got == base + 4 ? "nearest" : got == base + 2 ? "toward zero"
                                                                           : fmt::format("other (2^24 + 3 -> 2^24 + {})", got - base);
        break;
      }
    }
  }
  return precision;
}

}  // namespace sagejit
