#pragma once
// The random source of the tests that draw sizes and data: one generator per test binary, seeded
// fresh each run and the seed logged (doctest MESSAGE) so a failing run can be replayed.
#include <cstdint>
#include <random>

#include <doctest/doctest.h>

namespace sagejit::test {

inline std::mt19937& logged_rng() {
  static std::mt19937 generator = [] {
    const unsigned seed = std::random_device{}();
    MESSAGE("random seed " << seed);
    return std::mt19937(seed);
  }();
  return generator;
}

// Uniform in [lo, hi], both included.
inline std::int64_t random_in(std::int64_t lo, std::int64_t hi) {
  return std::uniform_int_distribution<std::int64_t>(lo, hi)(logged_rng());
}

}  // namespace sagejit::test
