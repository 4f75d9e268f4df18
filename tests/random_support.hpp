#pragma once
// The random source of the tests that draw sizes and data: one seed per test-binary run, fresh each
// run unless SAGEJIT_TEST_SEED gives it (to replay a failure). The seed is logged when it is drawn,
// and a failing test case repeats it with the command that replays it (the suite listener of
// tests/doctest_main.cpp).
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <random>
#include <string>

#include <unistd.h>

#include <doctest/doctest.h>

namespace sagejit::test {

inline constexpr const char* seed_variable = "SAGEJIT_TEST_SEED";

namespace detail {

// splitmix64: spreads clock and pid bits over the whole seed. (std::random_device would tie a test
// binary shipped to a GPU machine to a newer glibc through arc4random.)
inline std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

inline std::optional<std::uint64_t>& drawn_seed() {
  static std::optional<std::uint64_t> seed;
  return seed;
}

inline std::uint64_t seed_from_environment_or_fresh() {
  if (const char* text = std::getenv(seed_variable); text != nullptr && *text != '\0') {
    char* end = nullptr;
    const unsigned long long value = std::strtoull(text, &end, 10);
    if (*end != '\0' || text[0] == '-')
      FAIL(std::string(seed_variable) << "=" << std::string(text) << " is not a decimal unsigned 64-bit number");
    MESSAGE("random seed " << value << " (from " << std::string(seed_variable) << ")");
    return value;
  }
  const auto now = static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  const std::uint64_t seed = mix(now ^ (static_cast<std::uint64_t>(::getpid()) << 32));
  MESSAGE("random seed " << seed << " (replay: " << std::string(seed_variable) << "=" << seed << ")");
  return seed;
}

}  // namespace detail

// The seed of this run (drawn, or read from SAGEJIT_TEST_SEED, once per process).
inline std::uint64_t test_seed() {
  static const std::uint64_t seed = [] {
    const std::uint64_t value = detail::seed_from_environment_or_fresh();
    detail::drawn_seed() = value;
    return value;
  }();
  return seed;
}

// "SAGEJIT_TEST_SEED=123 ./test_x" when a seed was drawn in this run; empty otherwise.
inline std::string replay_hint() {
  if (!detail::drawn_seed()) return {};
  return std::string(seed_variable) + "=" + std::to_string(*detail::drawn_seed());
}

// The binary's main generator (single-threaded use).
inline std::mt19937& logged_rng() {
  static std::mt19937 generator(static_cast<std::mt19937::result_type>(detail::mix(test_seed())));
  return generator;
}

// Uniform in [lo, hi], both included.
inline std::int64_t random_in(std::int64_t lo, std::int64_t hi) {
  return std::uniform_int_distribution<std::int64_t>(lo, hi)(logged_rng());
}

// One generator per thread for tests that draw on several threads: derived from the run's seed and
// the order in which threads first draw (a replay of a multi-threaded test repeats each thread's
// stream when the threads start drawing in the same order).
inline std::mt19937_64& thread_rng() {
  static std::uint64_t next_stream = 0;
  static thread_local std::mt19937_64 generator = [] {
    static std::mutex mutex;
    std::lock_guard lock(mutex);
    return std::mt19937_64(detail::mix(test_seed() + 0x1000 * ++next_stream));
  }();
  return generator;
}

}  // namespace sagejit::test
