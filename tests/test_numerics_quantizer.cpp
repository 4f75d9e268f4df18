// The prepare stage: scalar quantizer edge cases (kernel_src/common/quant.h) and the emulator's
// workspaces checked against an independent recomputation of docs/NUMERICS.md.
#include <doctest/doctest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <random>

#include "common/quant.h"
#include "numerics/conversions.hpp"
#include "numerics/emulator.hpp"
#include "dev/numerics/random_fill.hpp"
#include "dev/numerics/workspace_compare.hpp"

using namespace sagejit::numerics;
using sagejit::DType;
using sagejit::Layout;

TEST_CASE("int8 quantizer: half-away rounding, ±127 clamp, zero scale") {
  CHECK(sj_quantize_int8(2.5f, 1.0f) == 3);
  CHECK(sj_quantize_int8(-2.5f, 1.0f) == -3);
  CHECK(sj_quantize_int8(0.5f, 1.0f) == 1);
  CHECK(sj_quantize_int8(-0.5f, 1.0f) == -1);
  CHECK(sj_quantize_int8(0.49999997f, 1.0f) == 0);
  CHECK(sj_quantize_int8(1.4999999f, 1.0f) == 1);
  CHECK(sj_quantize_int8(126.5f, 1.0f) == 127);
  CHECK(sj_quantize_int8(-126.49999f, 1.0f) == -126);
  CHECK(sj_quantize_int8(127.4f, 1.0f) == 127);
  CHECK(sj_quantize_int8(300.0f, 1.0f) == 127);
  CHECK(sj_quantize_int8(-300.0f, 1.0f) == -127);
  CHECK(sj_quantize_int8(5.0f, 0.0f) == 0);  // all-zero block: scale 0, no NaN
  CHECK(sj_quantize_int8(0.0f, 0.0f) == 0);
  CHECK(sj_quantize_int8(std::numeric_limits<float>::quiet_NaN(), 1.0f) == 0);
  CHECK(sj_int8_scale(0.0f) == 0.0f);
  CHECK(sj_int8_scale(127.0f) == 1.0f);
  // The largest element of a block always lands on exactly ±127 (x / (amax / 127) may round a hair
  // above 127; the clamp catches it).
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<float> uniform(1e-3f, 1e3f);
  int above = 0;
  for (int trial = 0; trial < 100000; ++trial) {
    const float amax = uniform(rng), scale = sj_int8_scale(amax);
    REQUIRE(sj_quantize_int8(amax, scale) == 127);
    REQUIRE(sj_quantize_int8(-amax, scale) == -127);
    if (amax / scale > 127.0f) ++above;
  }
  MESSAGE("amax / scale exceeded 127 in " << above << " of 100000 trials (clamped)");
}

// The rounding step on its own: for a quotient r (scale 1), the result is round-half-away-from-zero
// (std::round) clamped to +-127, for every 61st float below 130 in magnitude (about 37 M values,
// every exponent and both signs; a full sweep was run once when the add-only rounding was written).
TEST_CASE("int8 rounding equals std::round of the quotient across the fp32 range") {
  const std::uint32_t limit = std::bit_cast<std::uint32_t>(130.0f);
  std::uint64_t mismatches = 0, checked = 0;
  for (std::uint32_t bits = 0; bits < limit; bits += 61)
    for (const float r : {std::bit_cast<float>(bits), -std::bit_cast<float>(bits)}) {
      const float expected = std::clamp(std::round(r), -127.0f, 127.0f);
      mismatches += sj_quantize_int8(r, 1.0f) != static_cast<int>(expected);
      ++checked;
    }
  CHECK(checked > 30000000);
  CHECK(mismatches == 0);
}

TEST_CASE("E4M3 V quantizer: zero scale, clamp before convert, RNE") {
  CHECK(sj_quantize_e4m3(3.0f, 0.0f) == 0x00);
  CHECK(sj_v_scale(448.0f) == 1.0f);
  CHECK(sj_quantize_e4m3(448.0f, 1.0f) == 0x7e);
  CHECK(sj_quantize_e4m3(470.0f, 1.0f) == 0x7e);  // clamp, never NaN
  CHECK(sj_quantize_e4m3(-470.0f, 1.0f) == 0xfe);
  CHECK(sj_quantize_e4m3(17.0f, 1.0f) == 0x58);
  const float amax = 3.1f, scale = sj_v_scale(amax);
  CHECK(sj_quantize_e4m3(amax, scale) == 0x7e);
  CHECK(sj_quantize_e4m3(-amax, scale) == 0xfe);
  CHECK(sj_v_to_fp16(1e6f) == 0x7bff);  // bf16 beyond the fp16 range stays finite
  CHECK(sj_v_to_fp16(-1e6f) == 0xfbff);
  CHECK(sj_v_to_fp16(1.0f) == 0x3c00);
}

// The packed code forms the prepare kernel stores (sj_int8_word, sj_e4m3x4, sj_with_sign_of) in their
// portable form, which AMD and host code run (NVIDIA device code has its own, checked exhaustively on
// the GPU by bench/h200_packed_codes_check.cu): the codes of the scalar quantizers, each byte in place,
// for every 61st fp32 pattern of either sign and a block scale with sj_divisor_fast.
TEST_CASE("packed prepare codes equal the scalar quantizers' codes") {
  const SjDivisor scale = sj_divisor(0.0123f);
  REQUIRE(sj_divisor_fast(scale.value));
  std::uint64_t int8_mismatches = 0, e4m3_mismatches = 0, checked = 0;
  for (std::uint64_t bits = 0; bits < 0x7f800000u; bits += 61) {
    const float x = std::bit_cast<float>(static_cast<std::uint32_t>(bits));
    for (const float v : {x, -x}) {
      if (std::fabs(v) <= scale.value * 127.0f)
        int8_mismatches +=
            (sj_int8_word(sj_div_rn_by(v, scale)) & 0xffu) != static_cast<sj_u8>(sj_quantize_int8_by(v, scale));
      if (std::fabs(v) <= scale.value * 448.0f) {
        const float magnitude = sj_div_rn_by(sj_abs(v), scale);
        const float quotients[4] = {sj_with_sign_of(magnitude, v), 0.0f, sj_with_sign_of(magnitude, -v), -0.0f};
        const std::uint32_t word = sj_e4m3x4(quotients);
        e4m3_mismatches += (word & 0xffu) != sj_quantize_e4m3_by(v, scale);
        e4m3_mismatches += ((word >> 16) & 0xffu) != sj_quantize_e4m3_by(-v, scale);
        e4m3_mismatches += (word & 0xff00ff00u) != 0x80000000u;
      }
      ++checked;
    }
  }
  CHECK(checked > 60000000);
  CHECK(int8_mismatches == 0);
  CHECK(e4m3_mismatches == 0);
  CHECK(sj_e4m3x4({-0.0f, 0.0f, 448.0f, -1000.0f}) == 0xfe7e0080u);  // -0 keeps its sign; saturation
}

namespace {

struct Inputs {
  HostTensor q, k, v;
};

Inputs make_inputs(std::mt19937_64& rng, std::int64_t B, std::int64_t Hq, std::int64_t Hk, std::int64_t Nq,
                   std::int64_t Nk, std::int64_t D, DType dtype, Layout layout = Layout::HND) {
  Inputs in{HostTensor({B, Hq, Nq, D}, dtype, layout), HostTensor({B, Hk, Nk, D}, dtype, layout),
            HostTensor({B, Hk, Nk, D}, dtype, layout)};
  fill_normal(in.q, rng);
  fill_channel_offsets(in.k, rng, 4.0);
  fill_normal(in.v, rng);
  return in;
}

// docs/NUMERICS.md written out with plain host operations (roundf, std::clamp), independent of
// quant.h, for one 32-row block of values already in x.
void expect_block(const std::vector<float>& x, int rows, int D, const std::int8_t* q8, float scale) {
  float amax = 0.0f;
  for (float value : x) amax = std::max(amax, std::fabs(value));
  const float expected_scale = amax / 127.0f;
  REQUIRE(std::bit_cast<std::uint32_t>(scale) == std::bit_cast<std::uint32_t>(expected_scale));
  for (int r = 0; r < 32; ++r)
    for (int d = 0; d < D; ++d) {
      int expected = 0;
      if (r < rows && expected_scale != 0.0f)
        expected = static_cast<int>(std::clamp(std::roundf(x[static_cast<std::size_t>(r * D + d)] / expected_scale), -127.0f, 127.0f));
      REQUIRE(q8[r * D + d] == expected);
    }
}

}  // namespace

TEST_CASE("prepare writes the documented workspaces (independent recomputation)") {
  std::mt19937_64 rng(1234);
  const std::int64_t B = 2, Hq = 4, Hk = 2, Nq = 45, Nk = 150, D = 64;
  for (DType dtype : {DType::bf16, DType::fp16}) {
    Inputs in = make_inputs(rng, B, Hq, Hk, Nq, Nk, D, dtype);
    EmulatorOptions options;
    options.return_lse = true;
    const PreparedTensors p = prepare(in.q.view(), in.k.view(), in.v.view(), Layout::HND, options);
    REQUIRE(p.seq_q_pad == 128);
    REQUIRE(p.seq_kv_pad == 256);
    REQUIRE(p.q_mul == static_cast<float>(0.125 * 1.4426950408889634));
    for (std::int64_t b = 0; b < B; ++b)
      for (std::int64_t h = 0; h < Hk; ++h) {
        // K mean: fixed-order fp64 chunks of 64 keys, each summing its every eighth key (keys 0, 8, ...),
        // over the ceil(Nk / 8) sampled keys.
        std::vector<float> mean(static_cast<std::size_t>(D));
        for (std::int64_t d = 0; d < D; ++d) {
          double total = 0.0;
          for (std::int64_t chunk = 0; chunk < Nk; chunk += 64) {
            double partial = 0.0;
            for (std::int64_t n = chunk; n < std::min(chunk + 64, Nk); n += 8) partial += in.k.get(b, h, n, d);
            total += partial;
          }
          mean[static_cast<std::size_t>(d)] = static_cast<float>(total / static_cast<double>((Nk + 7) / 8));
          REQUIRE(p.k_mean[static_cast<std::size_t>((b * Hk + h) * D + d)] == mean[static_cast<std::size_t>(d)]);
        }
        const std::int64_t head = b * Hk + h;
        for (std::int64_t first = 0; first < p.seq_kv_pad; first += 32) {
          const int rows = static_cast<int>(std::clamp<std::int64_t>(Nk - first, 0, 32));
          std::vector<float> x;
          for (int r = 0; r < rows; ++r)
            for (std::int64_t d = 0; d < D; ++d) x.push_back(in.k.get(b, h, first + r, d) - mean[static_cast<std::size_t>(d)]);
          expect_block(x, rows, static_cast<int>(D), &p.k8[static_cast<std::size_t>((head * p.seq_kv_pad + first) * D)],
                       p.k_scale[static_cast<std::size_t>(head * p.seq_kv_pad / 32 + first / 32)]);
        }
        // V: per channel, transposed [D, Nk_pad], padded keys 0.
        for (std::int64_t d = 0; d < D; ++d) {
          float amax = 0.0f;
          for (std::int64_t n = 0; n < Nk; ++n) amax = std::max(amax, std::fabs(in.v.get(b, h, n, d)));
          const float scale = amax / 448.0f;
          REQUIRE(p.v_scale[static_cast<std::size_t>(head * D + d)] == scale);
          for (std::int64_t n = 0; n < p.seq_kv_pad; ++n) {
            const std::uint8_t expected =
                n < Nk ? float_to_e4m3(std::clamp(in.v.get(b, h, n, d) / scale, -448.0f, 448.0f)) : 0;
            REQUIRE(p.v8[static_cast<std::size_t>((head * D + d) * p.seq_kv_pad + n)] == expected);
          }
        }
      }
    for (std::int64_t b = 0; b < B; ++b)
      for (std::int64_t h = 0; h < Hq; ++h) {
        const std::int64_t head = b * Hq + h;
        for (std::int64_t first = 0; first < p.seq_q_pad; first += 32) {
          const int rows = static_cast<int>(std::clamp<std::int64_t>(Nq - first, 0, 32));
          std::vector<float> x;
          for (int r = 0; r < rows; ++r)
            for (std::int64_t d = 0; d < D; ++d) x.push_back(in.q.get(b, h, first + r, d) * p.q_mul);
          expect_block(x, rows, static_cast<int>(D), &p.q8[static_cast<std::size_t>((head * p.seq_q_pad + first) * D)],
                       p.q_scale[static_cast<std::size_t>(head * p.seq_q_pad / 32 + first / 32)]);
        }
        // LSE delta uses the KV head of the query head (GQA).
        const std::int64_t n = Nq - 1;
        double delta = 0.0;
        for (std::int64_t d = 0; d < D; ++d)
          delta += double(in.q.get(b, h, n, d) * p.q_mul) * p.k_mean[static_cast<std::size_t>((b * Hk + h / 2) * D + d)];
        CHECK(p.lse_delta[static_cast<std::size_t>(head * Nq + n)] == doctest::Approx(delta).epsilon(1e-4));
      }
  }
}

TEST_CASE("prepare: all-zero blocks and channels give scale 0 and zeros; a huge value takes ±127") {
  std::mt19937_64 rng(77);
  const std::int64_t N = 96, D = 64;
  Inputs in = make_inputs(rng, 1, 1, 1, N, N, D, DType::bf16);
  for (std::int64_t n = 32; n < 64; ++n)
    for (std::int64_t d = 0; d < D; ++d) in.q.set(0, 0, n, d, 0.0f);  // Q block 1 all zero
  for (std::int64_t n = 0; n < N; ++n) in.v.set(0, 0, n, 5, 0.0f);     // V channel 5 all zero
  in.q.set(0, 0, 70, 9, -30000.0f);                                     // a huge value in Q block 2
  EmulatorOptions options;
  const PreparedTensors p = prepare(in.q.view(), in.k.view(), in.v.view(), Layout::HND, options);
  CHECK(p.q_scale[1] == 0.0f);
  CHECK(std::all_of(p.q8.begin() + 32 * D, p.q8.begin() + 64 * D, [](std::int8_t x) { return x == 0; }));
  CHECK(p.v_scale[5] == 0.0f);
  for (std::int64_t n = 0; n < p.seq_kv_pad; ++n) CHECK(p.v8[static_cast<std::size_t>(5 * p.seq_kv_pad + n)] == 0);
  CHECK(p.q8[static_cast<std::size_t>(70 * D + 9)] == -127);
  // Everything else in that block is crushed towards 0 by the huge scale.
  int small = 0;
  for (std::int64_t i = 64 * D; i < 96 * D; ++i) small += std::abs(p.q8[static_cast<std::size_t>(i)]) <= 1;
  CHECK(small == 32 * D - 1);
  // Padded rows and blocks are zero.
  CHECK(p.q_scale[3] == 0.0f);
  CHECK(std::all_of(p.q8.begin() + N * D, p.q8.end(), [](std::int8_t x) { return x == 0; }));
  // No NaN anywhere, and the attention output stays finite; channel 5 of the output is exactly 0.
  for (float s : p.q_scale) CHECK(std::isfinite(s));
  const EmulatorResult r = attention(p, options);
  for (std::int64_t n = 0; n < N; ++n) {
    CHECK(r.out.get(0, 0, n, 5) == 0.0f);
    CHECK(std::isfinite(r.out.get(0, 0, n, 0)));
  }
}

TEST_CASE("prepare: without smoothing the K mean is zero; fp16 PV stores fp16 V with scale 1") {
  std::mt19937_64 rng(5);
  Inputs in = make_inputs(rng, 1, 2, 1, 40, 70, 64, DType::bf16);
  in.v.set(0, 0, 3, 4, 1e6f);  // beyond the fp16 range: clamped to 65504
  EmulatorOptions options;
  options.smooth_k = false;
  options.pv_fp16 = true;
  const PreparedTensors p = prepare(in.q.view(), in.k.view(), in.v.view(), Layout::HND, options);
  CHECK(std::all_of(p.k_mean.begin(), p.k_mean.end(), [](float x) { return x == 0.0f; }));
  CHECK(std::all_of(p.v_scale.begin(), p.v_scale.end(), [](float x) { return x == 1.0f; }));
  CHECK(p.v8.empty());
  CHECK(p.lse_delta.empty());
  REQUIRE(p.v16.size() == static_cast<std::size_t>(64 * 128));
  CHECK(p.v16[static_cast<std::size_t>(4 * 128 + 3)] == 0x7bff);
  CHECK(p.v16[static_cast<std::size_t>(7 * 128 + 9)] == float_to_fp16(in.v.get(0, 0, 9, 7)));
  CHECK(p.v16[static_cast<std::size_t>(7 * 128 + 100)] == 0);  // padded key
}

TEST_CASE("compare_prepared finds the first differing element and honours a key permutation") {
  std::mt19937_64 rng(99);
  Inputs in = make_inputs(rng, 1, 2, 2, 33, 65, 64, DType::fp16);
  const PreparedTensors p = prepare(in.q.view(), in.k.view(), in.v.view(), Layout::HND, {});
  CHECK_FALSE(compare_prepared(p, p).has_value());

  PreparedTensors changed = p;
  changed.k8[1000] = static_cast<std::int8_t>(changed.k8[1000] + 1);
  changed.k8[2000] = static_cast<std::int8_t>(changed.k8[2000] + 1);
  auto mismatch = compare_prepared(p, changed);
  REQUIRE(mismatch.has_value());
  CHECK(mismatch->buffer == "k8");
  CHECK(mismatch->index == 1000);
  CHECK(mismatch->coordinates == "[b=0, h=0, n=15, d=40]");
  MESSAGE(mismatch->describe());

  changed = p;
  changed.q_scale[2] = -0.0f;  // bit patterns count: +0 vs -0 differ
  mismatch = compare_prepared(p, changed);
  REQUIRE(mismatch.has_value());
  CHECK(mismatch->buffer == "q_scale");

  // A backend storing keys reversed inside each group of 32 compares equal through its slot map.
  const auto reversed = [](int key) { return 31 - key; };
  PreparedTensors permuted = p;
  for (std::size_t row = 0; row < p.v8.size(); row += static_cast<std::size_t>(p.seq_kv_pad))
    for (std::int64_t key = 0; key < p.seq_kv_pad; ++key)
      permuted.v8[row + static_cast<std::size_t>(key / 32 * 32 + reversed(static_cast<int>(key % 32)))] =
          p.v8[row + static_cast<std::size_t>(key)];
  CHECK_FALSE(compare_prepared(p, permuted, reversed).has_value());
  CHECK(compare_prepared(p, permuted).has_value());
}

TEST_CASE("prepare rejects unsupported inputs with sagejit::Error") {
  std::mt19937_64 rng(3);
  Inputs in = make_inputs(rng, 1, 3, 2, 8, 8, 64, DType::bf16);
  CHECK_THROWS_AS(prepare(in.q.view(), in.k.view(), in.v.view(), Layout::HND, {}), sagejit::Error);  // 3 % 2
  Inputs ok = make_inputs(rng, 1, 2, 1, 8, 8, 64, DType::bf16);
  sagejit::TensorView wrong_dtype = ok.q.view();
  wrong_dtype.dtype = DType::fp32;
  CHECK_THROWS_AS(prepare(wrong_dtype, ok.k.view(), ok.v.view(), Layout::HND, {}), sagejit::Error);
  Inputs fp16 = make_inputs(rng, 1, 2, 1, 8, 8, 64, DType::fp16);
  CHECK_THROWS_AS(prepare(ok.q.view(), fp16.k.view(), fp16.v.view(), Layout::HND, {}), sagejit::Error);
  EmulatorOptions bad;
  bad.block_n = 0;
  CHECK_THROWS_AS(prepare(ok.q.view(), ok.k.view(), ok.v.view(), Layout::HND, bad), sagejit::Error);
  sagejit::TensorView null_data = ok.k.view();
  null_data.data = nullptr;
  CHECK_THROWS_AS(prepare(ok.q.view(), null_data, ok.v.view(), Layout::HND, {}), sagejit::Error);
}
