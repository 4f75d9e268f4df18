// The tools' oracle (tools/support/oracle_check: selftest, autotune, the gfx12 emulation harness)
// passes the quantized algorithm's own answer and fails a wrong LSE. Its LSE bar against fp64 is the
// emulator's own distance plus max_lse_error: int8 scores of peaked inputs move the LSE by more than
// any fixed bar, and the oracle must not fail a kernel for what the algorithm does.
#include <doctest/doctest.h>

#include <cmath>
#include <random>

#include "random_support.hpp"
#include "skip_support.hpp"

#ifdef SAGEJIT_HAVE_TOOL_SUPPORT
#include "dev/numerics/random_fill.hpp"
#include "numerics/emulator.hpp"
#include "numerics/host_tensor.hpp"
#include "support/oracle_check.hpp"

namespace {

using namespace sagejit;
using numerics::HostTensor;

struct Case {
  HostTensor q, k, v;
  numerics::EmulatorOptions options;
};

// 1x2xNxN causal bf16 with LSE; `stddev` scales Q and K (peaked scores: larger int8 score error).
Case make_case(std::int64_t tokens, std::int64_t head_dim, double stddev) {
  std::mt19937_64 rng(test::logged_rng()());
  const numerics::Dims dims{1, 2, tokens, head_dim};
  Case c{HostTensor(dims, DType::bf16, Layout::HND), HostTensor(dims, DType::bf16, Layout::HND),
         HostTensor(dims, DType::bf16, Layout::HND), {}};
  numerics::fill_normal(c.q, rng, 0.0, stddev);
  numerics::fill_normal(c.k, rng, 0.0, stddev);
  numerics::fill_normal(c.v, rng);
  c.options.causal = true;
  c.options.return_lse = true;
  return c;
}

tools::OracleVerdict judge(const Case& c, std::vector<float> lse, const HostTensor* out = nullptr) {
  const numerics::EmulatorResult emulated = numerics::emulate(c.q.view(), c.k.view(), c.v.view(), Layout::HND, c.options);
  if (lse.empty()) lse = emulated.lse;
  return tools::judge_output({&c.q, &c.k, &c.v, Layout::HND, c.options}, out ? *out : emulated.out, lse);
}

}  // namespace

TEST_CASE("the emulator's own answer passes, also where its LSE is more than max_lse_error from fp64") {
  const std::int64_t tokens = test::random_in(200, 320), head_dim = test::random_in(0, 1) ? 64 : 128;
  const Case c = make_case(tokens, head_dim, 2.5);
  const tools::OracleVerdict verdict = judge(c, {});
  CAPTURE(tokens);
  CAPTURE(head_dim);
  INFO(verdict.failure);
  CHECK(verdict.passed);
  CHECK(verdict.lse_error_vs_emulator == 0.0);
  CHECK(verdict.lse_error_vs_reference == doctest::Approx(verdict.emulator_lse_error_vs_reference));
  // These inputs are what the fixed bar failed on: the algorithm's own LSE error exceeds it.
  CHECK(verdict.emulator_lse_error_vs_reference > tools::max_lse_error);
}

TEST_CASE("an LSE off by more than max_lse_error from the emulator's fails, naming it") {
  const Case c = make_case(test::random_in(64, 200), 64, 1.0);
  const numerics::EmulatorResult emulated = numerics::emulate(c.q.view(), c.k.view(), c.v.view(), Layout::HND, c.options);
  std::vector<float> lse = emulated.lse;
  const std::size_t at = static_cast<std::size_t>(test::random_in(0, static_cast<std::int64_t>(lse.size()) - 1));
  lse[at] += static_cast<float>(3 * tools::max_lse_error);
  const tools::OracleVerdict verdict = judge(c, lse);
  CAPTURE(at);
  CHECK_FALSE(verdict.passed);
  CHECK(verdict.failure.find("LSE max abs difference from the emulator") != std::string::npos);
  lse[at] = NAN;
  CHECK_FALSE(judge(c, lse).passed);
}

#else
TEST_CASE("the tools' oracle") { SAGEJIT_SKIP("built without the tools (SAGEJIT_BUILD_TOOLS=OFF)"); }
#endif
