// Exact host conversions: every 16-bit and 8-bit code, every rounding midpoint, hand-checked values.
#include <doctest/doctest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "numerics/conversions.hpp"

using namespace sagejit::numerics;

namespace {

std::uint32_t bits_of(float x) { return std::bit_cast<std::uint32_t>(x); }

// Independent decoders written from the format definitions (std::ldexp, no bit tricks).
double e4m3_value(int code) {
  const int sign = code & 0x80 ? -1 : 1, exponent = (code >> 3) & 0xf, mantissa = code & 7;
  if (exponent == 15 && mantissa == 7) return std::numeric_limits<double>::quiet_NaN();
  if (exponent == 0) return sign * std::ldexp(mantissa, -9);
  return sign * std::ldexp(8 + mantissa, exponent - 7 - 3);
}
double fp16_value(int code) {
  const int sign = code & 0x8000 ? -1 : 1, exponent = (code >> 10) & 0x1f, mantissa = code & 0x3ff;
  if (exponent == 31) return mantissa ? std::numeric_limits<double>::quiet_NaN() : sign * INFINITY;
  if (exponent == 0) return sign * std::ldexp(mantissa, -24);
  return sign * std::ldexp(1024 + mantissa, exponent - 15 - 10);
}

// Nearest representable of a sorted list of non-negative (value, code) pairs, ties to the even code.
struct Nearest {
  std::vector<std::pair<double, int>> table;
  int operator()(double magnitude) const {
    auto upper = std::lower_bound(table.begin(), table.end(), std::make_pair(magnitude, -1));
    if (upper == table.end()) return table.back().second;
    if (upper->first == magnitude || upper == table.begin()) return upper->second;
    const auto lower = upper - 1;
    const double below = magnitude - lower->first, above = upper->first - magnitude;
    if (below < above) return lower->second;
    if (above < below) return upper->second;
    return (lower->second & 1) ? upper->second : lower->second;
  }
};

// Every code of a `bits`-wide format decodes to the value its definition gives (NaN codes to NaN,
// which encodes to a NaN again), with the code's sign bit, and encodes back to itself (-0
// included). `finite(code, value, expected)` adds the format's own checks for the non-NaN codes.
template <typename Code, typename Decode, typename Encode, typename Finite>
void check_every_code(int bits, double (*definition)(int), Decode decode, Encode encode, Finite finite) {
  const int sign_bit = 1 << (bits - 1);
  for (int code = 0; code < (1 << bits); ++code) {
    const float value = decode(static_cast<Code>(code));
    const double expected = definition(code);
    if (std::isnan(expected)) {
      REQUIRE(std::isnan(value));
      REQUIRE(std::isnan(decode(encode(value))));
      continue;
    }
    REQUIRE(static_cast<double>(value) == expected);
    REQUIRE(std::signbit(value) == bool(code & sign_bit));
    REQUIRE(encode(value) == code);
    finite(code, value, expected);
  }
}

}  // namespace

TEST_CASE("E4M3 decode matches the format definition for all 256 codes") {
  check_every_code<std::uint8_t>(8, e4m3_value, e4m3_to_float, float_to_e4m3, [](int, float, double) {});
}

TEST_CASE("E4M3 hand-checked values") {
  CHECK(float_to_e4m3(448.0f) == 0x7e);
  CHECK(float_to_e4m3(-448.0f) == 0xfe);
  CHECK(float_to_e4m3(240.0f) == 0x77);   // 1.875 * 2^7
  CHECK(float_to_e4m3(1.0f) == 0x38);
  CHECK(float_to_e4m3(0.015625f) == 0x08);      // 2^-6, smallest normal
  CHECK(float_to_e4m3(0.001953125f) == 0x01);   // 2^-9, smallest subnormal
  CHECK(float_to_e4m3(-0.001953125f) == 0x81);
  CHECK(e4m3_to_float(0x01) == 0.001953125f);
  CHECK(e4m3_to_float(0x7e) == 448.0f);
  CHECK(e4m3_to_float(0x77) == 240.0f);
  CHECK(std::isnan(e4m3_to_float(0x7f)));
  CHECK(std::isnan(e4m3_to_float(0xff)));
  // Saturation: everything past 448 (including the would-be 464 and infinity) is ±448.
  CHECK(float_to_e4m3(464.0f) == 0x7e);
  CHECK(float_to_e4m3(455.9f) == 0x7e);
  CHECK(float_to_e4m3(1e30f) == 0x7e);
  CHECK(float_to_e4m3(INFINITY) == 0x7e);
  CHECK(float_to_e4m3(-INFINITY) == 0xfe);
  CHECK(float_to_e4m3(std::numeric_limits<float>::quiet_NaN()) == 0x7f);
  // Ties to even.
  CHECK(float_to_e4m3(1.0625f) == 0x38);        // between 1 (0x38) and 1.125 (0x39)
  CHECK(float_to_e4m3(1.1875f) == 0x3a);        // between 1.125 (0x39) and 1.25 (0x3a)
  CHECK(float_to_e4m3(17.0f) == 0x58);          // between 16 (0x58) and 18 (0x59)
  CHECK(float_to_e4m3(0.0029296875f) == 0x02);  // 1.5 * 2^-9: between 0x01 and 0x02
  CHECK(float_to_e4m3(0.0009765625f) == 0x00);  // 2^-10: half the smallest subnormal, ties to 0
  CHECK(float_to_e4m3(0.0009766f) == 0x01);     // just above it
  CHECK(float_to_e4m3(0.0146484375f) == 0x08);  // 7.5 * 2^-9 rounds up into the smallest normal
  CHECK(float_to_e4m3(432.0f) == 0x7e);         // between 416 (0x7d) and 448 (0x7e): even is 0x7e
  CHECK(float_to_e4m3(-0.0f) == 0x80);
  CHECK(float_to_e4m3(1e-30f) == 0x00);
}

TEST_CASE("E4M3 encode is round-to-nearest-even on a dense sweep of fp32 values") {
  Nearest nearest;
  for (int code = 0; code < 0x7f; ++code) nearest.table.emplace_back(e4m3_value(code), code);
  // Every fp32 whose low 12 bits are zero up to 480 (bits < 0x43f00000), both signs: every E4M3
  // midpoint has at most 4 significant bits, so all midpoints and their neighbours are included.
  int checked = 0;
  for (std::uint32_t bits = 0; bits < 0x43f00000u; bits += 0x1000u) {
    const float x = std::bit_cast<float>(bits);
    const int expected = nearest(static_cast<double>(x));
    const int got = float_to_e4m3(x);
    const int got_negative = float_to_e4m3(-x);
    if (got != expected || got_negative != (expected | 0x80)) {
      FAIL_CHECK("x = " << x << " expected code " << expected << " got " << got << " / " << got_negative);
      break;
    }
    ++checked;
  }
  CHECK(checked > 250000);
}

TEST_CASE("bf16: all 65536 codes round-trip and every midpoint rounds to even") {
  for (std::uint32_t code = 0; code < 65536; ++code) {
    const float value = bf16_to_float(static_cast<std::uint16_t>(code));
    CHECK_EQ(bits_of(value), code << 16);
    if (std::isnan(value)) {
      CHECK(std::isnan(bf16_to_float(float_to_bf16(value))));
      continue;
    }
    REQUIRE(float_to_bf16(value) == code);
    const std::uint32_t magnitude = code & 0x7fff;
    if (magnitude >= 0x7f7f) continue;  // no finite next value above
    // Exact midpoint to the next code up: ties to the even code of the two.
    const std::uint32_t midpoint = (code << 16) | 0x8000u;
    const std::uint16_t even = (code & 1) ? static_cast<std::uint16_t>(code + 1) : static_cast<std::uint16_t>(code);
    REQUIRE(float_to_bf16(std::bit_cast<float>(midpoint)) == even);
    REQUIRE(float_to_bf16(std::bit_cast<float>(midpoint - 1)) == code);
    REQUIRE(float_to_bf16(std::bit_cast<float>(midpoint + 1)) == code + 1);
  }
  CHECK(float_to_bf16(3.3895314e38f) == 0x7f7f);  // largest finite bf16 stays finite
  CHECK(float_to_bf16(INFINITY) == 0x7f80);
}

TEST_CASE("fp16: all 65536 codes decode exactly, round-trip, and every midpoint rounds to even") {
  check_every_code<std::uint16_t>(16, fp16_value, fp16_to_float, float_to_fp16, [](int code, float value, double expected) {
    const int magnitude = code & 0x7fff;
    if (magnitude >= 0x7bff) return;  // 65504 -> inf: hand-checked below
    // Midpoint to the next magnitude (exact in fp32: at most 12 significant bits); the neighbours
    // one fp32 ulp away round down / up.
    const float next = fp16_to_float(static_cast<std::uint16_t>(code + 1));
    const float midpoint = static_cast<float>((static_cast<double>(value) + static_cast<double>(next)) / 2.0);
    REQUIRE(static_cast<double>(midpoint) == (expected + fp16_value(code + 1)) / 2.0);
    const int even = (code & 1) ? code + 1 : code;
    REQUIRE(float_to_fp16(midpoint) == even);
    const float toward = std::nextafter(midpoint, value), away = std::nextafter(midpoint, next);
    REQUIRE(float_to_fp16(toward) == code);
    REQUIRE(float_to_fp16(away) == code + 1);
  });
  CHECK(float_to_fp16(65504.0f) == 0x7bff);
  CHECK(float_to_fp16(65519.99f) == 0x7bff);
  CHECK(float_to_fp16(65520.0f) == 0x7c00);  // midpoint to 65536: ties to even (infinity)
  CHECK(float_to_fp16(-1e6f) == 0xfc00);
  CHECK(float_to_fp16(5.9604644775390625e-8f) == 0x0001);  // smallest subnormal
  CHECK(float_to_fp16(2.98023223876953125e-8f) == 0x0000); // half of it: ties to 0
}

TEST_CASE("dtype dispatch helpers agree with the typed conversions and reject other dtypes") {
  CHECK(half_bits_to_float(0x3f80, sagejit::DType::bf16) == 1.0f);
  CHECK(half_bits_to_float(0x3c00, sagejit::DType::fp16) == 1.0f);
  CHECK(float_to_half_bits(-2.0f, sagejit::DType::bf16) == 0xc000);
  CHECK(float_to_half_bits(-2.0f, sagejit::DType::fp16) == 0xc000);
  CHECK_THROWS_AS(require_16bit_float(sagejit::DType::fp32, "q"), sagejit::Error);
  CHECK_NOTHROW(require_16bit_float(sagejit::DType::fp16, "q"));
}
