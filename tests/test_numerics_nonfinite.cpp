// Non-finite inputs are never turned into finite outputs (docs/NUMERICS.md, "Non-finite inputs"):
// for one NaN / +-inf element in q, k or v, every output that the SDPA-like fp64 reference makes
// non-finite must be non-finite in the emulator too, and the emulator's other non-finite outputs
// may lie only inside the poisoned input's quantization block (nonfinite_support.hpp). Both PV
// families and gfx12's numerics (one-level PV accumulation, fused scores, row sum of the quantized
// p); causal or not; with and without K smoothing.
#include <doctest/doctest.h>

#include <limits>
#include <random>

#include "numerics/emulator.hpp"
#include "dev/numerics/random_fill.hpp"
#include "nonfinite_support.hpp"
#include "random_support.hpp"

using namespace sagejit;
using namespace sagejit::numerics;
using namespace sagejit::test;

TEST_CASE("emulator: a NaN or inf input gives non-finite outputs wherever SDPA's are, spreading only within its quantization block") {
  auto& rng = logged_rng();
  constexpr std::int64_t B = 1, H = 2, N = 96, D = 64;
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  int cases = 0, reference_poisoned = 0;
  for (Poisoned where : {Poisoned::q, Poisoned::k, Poisoned::v})
    for (float value : {nan, inf, -inf})
      for (bool causal : {false, true})
        for (bool smooth_k : {false, true})
          for (int family = 0; family < 3; ++family) {
            HostTensor q({B, H, N, D}, DType::bf16, Layout::HND), k({B, H, N, D}, DType::bf16, Layout::HND),
                v({B, H, N, D}, DType::bf16, Layout::HND);
            std::mt19937_64 fill_rng(rng());
            fill_normal(q, fill_rng);
            fill_normal(k, fill_rng);
            fill_normal(v, fill_rng);
            NonFiniteInput input;
            input.where = where;
            input.value = value;
            input.head = std::uniform_int_distribution<std::int64_t>(0, H - 1)(rng);
            input.token = std::uniform_int_distribution<std::int64_t>(0, N - 1)(rng);
            input.channel = std::uniform_int_distribution<std::int64_t>(0, D - 1)(rng);
            input.causal = causal;
            input.smooth_k = smooth_k;
            (where == Poisoned::q ? q : where == Poisoned::k ? k : v).set(0, input.head, input.token, input.channel, value);

            EmulatorOptions options;
            options.causal = causal;
            options.smooth_k = smooth_k;
            options.block_n = 32;
            options.pv_fp16 = family == 1;
            options.pv_into_output = family == 2;  // family 2: gfx12's descriptor flags
            options.fused_scores = family == 2;
            options.sum_quantized_p = family == 2;
            const EmulatorResult emulated = emulate(q.view(), k.view(), v.view(), Layout::HND, options);
            const ReferenceResult reference = reference_attention(q.view(), k.view(), v.view(), Layout::HND, causal);
            const NonFiniteCount count = count_non_finite(input, emulated.out.host_view(), reference, 1);
            INFO(input.describe(), ", PV family ", family, ": reference ", count.reference, ", emulator ", count.output);
            reference_poisoned += count.reference > 0;  // an inf k late in a causal row may poison none
            CHECK(count.missed == 0);
            CHECK(count.too_far == 0);
            ++cases;
          }
  CHECK(cases == 108);
  CHECK(reference_poisoned >= cases / 2);  // the sweep does exercise non-finite SDPA outputs
}

TEST_CASE("emulator: a NaN in q spreads over exactly its 32-row block (the documented Q spread)") {
  constexpr std::int64_t N = 96, D = 64;
  HostTensor q({1, 1, N, D}, DType::bf16, Layout::HND), k({1, 1, N, D}, DType::bf16, Layout::HND),
      v({1, 1, N, D}, DType::bf16, Layout::HND);
  std::mt19937_64 fill_rng(logged_rng()());
  fill_normal(q, fill_rng);
  fill_normal(k, fill_rng);
  fill_normal(v, fill_rng);
  q.set(0, 0, 40, 3, std::numeric_limits<float>::quiet_NaN());
  const EmulatorResult emulated = emulate(q.view(), k.view(), v.view(), Layout::HND, EmulatorOptions{});
  for (std::int64_t i = 0; i < N; ++i)
    for (std::int64_t d = 0; d < D; ++d) {
      INFO("row ", i, " channel ", d);
      CHECK(std::isnan(emulated.out.get(0, 0, i, d)) == (i >= 32 && i < 64));
    }
}
