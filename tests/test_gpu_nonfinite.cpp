// Non-finite inputs on the GPU kernels (issue 18 item 9; docs/NUMERICS.md, "Non-finite inputs"):
// one NaN / +-inf in q, k or v, and every output that SDPA's semantics (the fp64 reference) make
// non-finite must be non-finite in the kernel's output; any other non-finite output must lie inside
// the poisoned input's quantization block (nonfinite_support.hpp). Also checks the emulator makes the
// same outputs non-finite where the reference does. Every attention kernel family of the device:
// sm80 fp8 PV and fp16 PV, and on sm_90 the wgmma kernel. Skips without a GPU.
#include <doctest/doctest.h>

#include <limits>

#include "dev/numerics/reference.hpp"
#include "gpu_attention_support.hpp"
#include "nonfinite_support.hpp"
#include "random_support.hpp"

using namespace sagejit;
using namespace sagejit::test;

TEST_CASE("GPU attention: NaN and inf inputs stay non-finite where SDPA's outputs are, within the documented spread") {
  const auto gpu = gpu_or_skip();
  if (!gpu) return;
  auto& rng = logged_rng();
  std::vector<std::pair<std::string, TileConfig>> configs{
      {"sm80 fp8 PV", {{"warps", 4}, {"rows_per_warp", 16}, {"block_n", 64}, {"stages", 2}, {"pv_fp16", 0}}},
      {"sm80 fp16 PV", {{"warps", 4}, {"rows_per_warp", 16}, {"block_n", 64}, {"stages", 2}, {"pv_fp16", 1}}}};
  if (gpu->target == "sm_90")
    configs.push_back({"sm90 wgmma", {{"warps", 4}, {"rows_per_warp", 16}, {"block_n", 128}, {"stages", 2},
                                      {"pv_fp16", 0}, {"wgmma", 1}}});
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  std::uint64_t seed = 500;
  for (const auto& [label, config] : configs)
    for (Poisoned where : {Poisoned::q, Poisoned::k, Poisoned::v})
      for (float value : {nan, inf, -inf})
        for (bool causal : {false, true})
          for (bool smooth_k : {false, true}) {
            Case c;
            c.heads_q = c.heads_kv = 2;
            c.seq_q = c.seq_kv = 256;
            c.head_dim = 128;
            c.causal = causal;
            c.smooth_k = smooth_k;
            c.attention = config;
            c.seed = seed++;
            NonFiniteInput input;
            input.where = where;
            input.value = value;
            input.head = std::uniform_int_distribution<std::int64_t>(0, 1)(rng);
            input.token = std::uniform_int_distribution<std::int64_t>(0, c.seq_q - 1)(rng);
            input.channel = std::uniform_int_distribution<std::int64_t>(0, c.head_dim - 1)(rng);
            input.causal = causal;
            input.smooth_k = smooth_k;
            c.edit_inputs = [&](numerics::HostTensor& q, numerics::HostTensor& k, numerics::HostTensor& v) {
              (where == Poisoned::q ? q : where == Poisoned::k ? k : v).set(0, input.head, input.token, input.channel, value);
            };
            const CaseResult r = run_case(*gpu, c);
            const numerics::ReferenceResult reference =
                numerics::reference_attention(r.q.view(), r.k.view(), r.v.view(), c.layout, causal);
            const NonFiniteCount gpu_count = count_non_finite(input, r.out.host_view(), reference, 1);
            const numerics::EmulatorResult emulated = numerics::emulate(r.q.view(), r.k.view(), r.v.view(), c.layout,
                                                                        emulator_options_for(r.plan, r.call));
            const NonFiniteCount emulator_count = count_non_finite(input, emulated.out.host_view(), reference, 1);
            MESSAGE(label << ", " << input.describe() << ": SDPA-like reference " << gpu_count.reference
                          << " non-finite, kernel " << gpu_count.output << ", emulator " << emulator_count.output);
            INFO(label, ", ", input.describe());
            CHECK(gpu_count.missed == 0);
            CHECK(gpu_count.too_far == 0);
            CHECK(emulator_count.missed == 0);
            CHECK(emulator_count.too_far == 0);
          }
}
