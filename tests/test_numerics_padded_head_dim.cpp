// Head dims that run zero-padded to the next kernel head dim (plan/attention_plan.hpp
// kernel_head_dim_for), on the CPU emulator as the plan runs them (EmulatorOptions::head_dim_pad):
//  - quality vs the fp64 reference for D = 8, 32, 40, 80, 96, 120 (SD 1.5's 40/80, Lumina 2's 96),
//    with the softmax scale of the true head dim, within the anchors' bar (test_numerics_emulator.cpp);
//  - the padded workspaces are the unpadded ones plus zero channels (k_mean 0, v_scale 0 for fp8 PV
//    and 1 for fp16 PV, codes 0, no NaN), and the output and LSE are bit-identical to the unpadded
//    emulator's: zero channels change no score, no scale and no accumulated value;
//  - the output's columns past D are never written.
// Shapes, flags and data are random from a logged seed (random_support.hpp); replay with the seed.
#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <random>
#include <type_traits>

#include <fmt/format.h>

#include "core/error.hpp"
#include "numerics/emulator.hpp"
#include "dev/numerics/metrics.hpp"
#include "dev/numerics/random_fill.hpp"
#include "dev/numerics/reference.hpp"
#include "plan/attention_plan.hpp"
#include "random_support.hpp"

using namespace sagejit;
using namespace sagejit::numerics;
using sagejit::test::random_in;

namespace {

constexpr std::int64_t kPaddedDims[] = {8, 32, 40, 80, 96, 120};

struct Problem {
  std::int64_t batch = 1, heads_q = 1, heads_kv = 1, seq_q = 1, seq_kv = 1, head_dim = 40;
  DType dtype = DType::bf16;
  Layout layout = Layout::HND;
  bool channel_offsets = false;  // K with large per-channel offsets (smoothing matters)
  EmulatorOptions options;       // head_dim_pad: the plan's kernel head dim

  std::string describe() const {
    return fmt::format("B={} Hq={} Hk={} Nq={} Nk={} D={} (run at {}) {} {} causal={} smooth={} block_n={} pv={} {}",
                       batch, heads_q, heads_kv, seq_q, seq_kv, head_dim, options.head_dim_pad, to_string(dtype),
                       to_string(layout), options.causal, options.smooth_k, options.block_n,
                       options.pv_fp16 ? "fp16" : "fp8", channel_offsets ? "K offsets" : "K normal");
  }
};

struct Inputs {
  HostTensor q, k, v;
};

// A random problem of `head_dim`. For a quality measurement (`measured`) the output has at least
// 4096 elements and every row at least 64 keys, so that the cosine and relative L1 measure the
// algorithm (expected cos 0.9993 for fp8 PV at every D) rather than a few e4m3-rounded values: with
// D = 8 and 2 query rows, 2% of runs fell below 0.999 on 48 elements.
Problem random_problem(std::int64_t head_dim, bool measured) {
  Problem s;
  s.head_dim = head_dim;
  s.batch = random_in(1, 2);
  s.heads_kv = random_in(1, 2);
  s.heads_q = s.heads_kv * random_in(1, 3);
  const std::int64_t min_rows = measured ? (4096 + s.batch * s.heads_q * head_dim - 1) / (s.batch * s.heads_q * head_dim) : 1;
  s.seq_q = random_in(min_rows, min_rows + 300);
  s.seq_kv = random_in(measured ? 64 : 1, 600);
  s.dtype = random_in(0, 1) != 0 ? DType::fp16 : DType::bf16;
  s.layout = random_in(0, 1) != 0 ? Layout::NHD : Layout::HND;
  s.channel_offsets = random_in(0, 3) == 0;
  s.options.causal = random_in(0, 1) != 0 && (!measured || s.seq_q >= 256);  // causal rows 0..63 see < 64 keys
  s.options.smooth_k = s.channel_offsets || random_in(0, 1) != 0;
  s.options.return_lse = true;
  s.options.block_n = random_in(0, 1) != 0 ? 64 : 32;
  s.options.pv_fp16 = random_in(0, 1) != 0;
  s.options.head_dim_pad = kernel_head_dim_for(head_dim);
  return s;
}

Inputs make_inputs(const Problem& s) {
  std::mt19937_64 rng(static_cast<std::uint64_t>(random_in(0, INT64_MAX)));
  Inputs in{HostTensor({s.batch, s.heads_q, s.seq_q, s.head_dim}, s.dtype, s.layout),
            HostTensor({s.batch, s.heads_kv, s.seq_kv, s.head_dim}, s.dtype, s.layout),
            HostTensor({s.batch, s.heads_kv, s.seq_kv, s.head_dim}, s.dtype, s.layout)};
  fill_normal(in.q, rng);
  if (s.channel_offsets)
    fill_channel_offsets(in.k, rng, 8.0);
  else
    fill_normal(in.k, rng);
  fill_normal(in.v, rng);
  return in;
}

std::uint32_t bits(float value) { return std::bit_cast<std::uint32_t>(value); }

// `padded` holds `plain`'s channels followed by zero channels: rows of `row` elements in both, the
// first `channels` of each padded row equal to plain's, the rest equal to `fill`.
template <typename T>
bool padded_rows_match(const std::vector<T>& plain, const std::vector<T>& padded, std::int64_t channels,
                       std::int64_t padded_channels, T fill) {
  if (plain.size() % static_cast<std::size_t>(channels) != 0 ||
      padded.size() != plain.size() / static_cast<std::size_t>(channels) * static_cast<std::size_t>(padded_channels))
    return false;
  const std::size_t rows = plain.size() / static_cast<std::size_t>(channels);
  for (std::size_t r = 0; r < rows; ++r)
    for (std::int64_t d = 0; d < padded_channels; ++d) {
      const T expected = d < channels ? plain[r * static_cast<std::size_t>(channels) + static_cast<std::size_t>(d)] : fill;
      const T got = padded[r * static_cast<std::size_t>(padded_channels) + static_cast<std::size_t>(d)];
      if constexpr (std::is_same_v<T, float>) {
        if (bits(expected) != bits(got)) return false;
      } else if (expected != got) {
        return false;
      }
    }
  return true;
}

// V is stored transposed [B, Hk, D, Nk_pad]: channel rows of Nk_pad keys; padded channel rows are 0.
template <typename T>
bool padded_channel_rows_match(const std::vector<T>& plain, const std::vector<T>& padded, std::int64_t heads,
                               std::int64_t channels, std::int64_t padded_channels, std::int64_t keys) {
  if (padded.size() != static_cast<std::size_t>(heads * padded_channels * keys)) return false;
  for (std::int64_t h = 0; h < heads; ++h)
    for (std::int64_t d = 0; d < padded_channels; ++d)
      for (std::int64_t n = 0; n < keys; ++n) {
        const T got = padded[static_cast<std::size_t>((h * padded_channels + d) * keys + n)];
        const T expected = d < channels ? plain[static_cast<std::size_t>((h * channels + d) * keys + n)] : T{0};
        if (got != expected) return false;
      }
  return true;
}

}  // namespace

TEST_CASE("padded head dims: the emulator as the plan runs them matches fp64 attention") {
  for (int round = 0; round < 2; ++round)
    for (std::int64_t head_dim : kPaddedDims) {
      const Problem s = random_problem(head_dim, true);
      CAPTURE(s.describe());
      REQUIRE(s.options.head_dim_pad > head_dim);
      const Inputs in = make_inputs(s);
      const EmulatorResult r = emulate(in.q.view(), in.k.view(), in.v.view(), s.layout, s.options);
      // The fp64 reference with its own default scale: 1/sqrt(D) of the true head dim.
      const ReferenceResult ref = reference_attention(in.q.view(), in.k.view(), in.v.view(), s.layout, s.options.causal);
      const AccuracyMetrics out = measure_accuracy(r.out.host_view(), ref.out);
      const AccuracyMetrics lse = measure_accuracy(std::span<const float>(r.lse), ref.lse);
      MESSAGE(s.describe() << ": out " << out.summary() << " | lse max-abs " << lse.max_abs_error);
      CHECK(out.non_finite == 0);
      CHECK(out.cosine >= 0.999);
      CHECK(out.relative_l1 <= 0.05);
      CHECK(lse.max_abs_error <= 0.05);
    }
}

TEST_CASE("padded head dims: zero channels change nothing; workspaces are the unpadded ones plus zeros") {
  for (std::int64_t head_dim : kPaddedDims) {
    const Problem s = random_problem(head_dim, false);
    CAPTURE(s.describe());
    const Inputs in = make_inputs(s);
    EmulatorOptions plain_options = s.options;
    plain_options.head_dim_pad = 0;  // no padding: rows of head_dim channels
    const PreparedTensors plain = prepare(in.q.view(), in.k.view(), in.v.view(), s.layout, plain_options);
    const PreparedTensors padded = prepare(in.q.view(), in.k.view(), in.v.view(), s.layout, s.options);
    const std::int64_t D = head_dim, P = s.options.head_dim_pad;
    REQUIRE(plain.head_dim_pad == D);
    REQUIRE(padded.head_dim == D);
    REQUIRE(padded.head_dim_pad == P);

    CHECK(padded.q_scale == plain.q_scale);
    CHECK(padded.k_scale == plain.k_scale);
    CHECK(padded.lse_delta == plain.lse_delta);
    CHECK(padded_rows_match(plain.q8, padded.q8, D, P, std::int8_t{0}));
    CHECK(padded_rows_match(plain.k8, padded.k8, D, P, std::int8_t{0}));
    CHECK(padded_rows_match(plain.k_mean, padded.k_mean, D, P, 0.0f));  // +0.0, the mean of no token
    // A zero channel's V scale: amax 0 / 448 = 0 (fp8; every code 0 without a division), 1 for fp16 PV.
    CHECK(padded_rows_match(plain.v_scale, padded.v_scale, D, P, s.options.pv_fp16 ? 1.0f : 0.0f));
    const std::int64_t kv_heads = s.batch * s.heads_kv;
    if (s.options.pv_fp16)
      CHECK(padded_channel_rows_match(plain.v16, padded.v16, kv_heads, D, P, padded.seq_kv_pad));
    else
      CHECK(padded_channel_rows_match(plain.v8, padded.v8, kv_heads, D, P, padded.seq_kv_pad));

    // Attention at the padded dim gives the unpadded result bit for bit, written into an output whose
    // rows are followed by P - D poisoned elements (where a padded column would land).
    const EmulatorResult expected = attention(plain, plain_options);
    HostTensor out({s.batch, s.heads_q, s.seq_q, D}, s.dtype, Layout::HND, StridePadding{0, 0, P - D});
    std::vector<float> lse(expected.lse.size());
    attention_into(padded, s.options, out.view(), Layout::HND, lse.data());
    CHECK(lse == expected.lse);
    bool identical = true;
    for (std::int64_t b = 0; b < s.batch; ++b)
      for (std::int64_t h = 0; h < s.heads_q; ++h)
        for (std::int64_t n = 0; n < s.seq_q; ++n)
          for (std::int64_t d = 0; d < D; ++d) identical = identical && out.bits(b, h, n, d) == expected.out.bits(b, h, n, d);
    CHECK(identical);
    std::size_t written_padding = 0;
    for (std::size_t i = 0; i < out.storage().size(); ++i)
      written_padding += out.is_padding(i) && out.storage()[i] != HostTensor::poison_bits(s.dtype);
    CHECK(written_padding == 0);
  }
}

TEST_CASE("the emulator refuses a workspace narrower than the head dim") {
  const Problem s = random_problem(40, false);
  const Inputs in = make_inputs(s);
  EmulatorOptions options = s.options;
  options.head_dim_pad = 32;
  CHECK_THROWS_AS(prepare(in.q.view(), in.k.view(), in.v.view(), s.layout, options), Error);
  options.head_dim_pad = -1;
  CHECK_THROWS_AS(prepare(in.q.view(), in.k.view(), in.v.view(), s.layout, options), Error);
}
