// Key masks in the emulator (docs/NUMERICS.md "Key masks"): against the fp64 reference on random
// problems (bool and additive masks, broadcast views, padded tails, masked tiles, all-masked rows,
// odd lengths, causal + mask, GQA, padded head dims), bit for bit unchanged by the values of masked
// keys, and bit for bit the unmasked result when nothing is masked; a third of the draws have a mask
// per head (LTX's [B, H, 1, Nk], heads of q and k equal). Seeds are logged
// (tests/random_support.hpp); SAGEJIT_KEY_MASK_TRIALS sets the number of random problems (default 24).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <random>
#include <vector>

#include <fmt/format.h>

#include "common/key_mask.h"
#include "dev/numerics/key_mask_fill.hpp"
#include "dev/numerics/metrics.hpp"
#include "dev/numerics/random_fill.hpp"
#include "dev/numerics/reference.hpp"
#include "lse_bounds.hpp"
#include "numerics/emulator.hpp"
#include "random_support.hpp"

using namespace sagejit::numerics;
using sagejit::test::kFewKeys;
using sagejit::test::lse_error_bound;
using sagejit::DType;
using sagejit::Layout;

namespace {

int trials() {
  const char* text = std::getenv("SAGEJIT_KEY_MASK_TRIALS");
  return text != nullptr && *text != '\0' ? std::atoi(text) : 24;
}

struct Case {
  std::int64_t batch, heads_q, heads_kv, seq_q, seq_kv, head_dim, head_dim_pad;
  DType dtype;
  Layout layout;
  EmulatorOptions options;
  int kind;
  MaskPattern pattern;
  bool ltx_style;
  std::int64_t mask_heads;  // 1, or heads_q (= heads_kv): a mask per head
  std::int64_t stride_batch, stride_head, stride_key;
};

Case draw_case(std::mt19937_64& rng) {
  const auto pick = [&](std::int64_t lo, std::int64_t hi) { return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng); };
  Case c{};
  c.batch = pick(1, 3);
  c.heads_kv = pick(1, 2);
  c.heads_q = c.heads_kv * pick(1, 3);  // GQA
  if (pick(0, 2) == 0) c.heads_q = c.heads_kv = pick(2, 3);  // a mask per head (no GQA)
  c.mask_heads = c.heads_q == c.heads_kv && c.heads_q > 1 ? c.heads_q : 1;
  c.seq_q = pick(1, 200);
  c.seq_kv = pick(1, 330);  // odd lengths, several tiles
  const std::int64_t dims[] = {40, 64, 96, 128};
  c.head_dim = dims[pick(0, 3)];
  c.head_dim_pad = c.head_dim <= 64 ? 64 : 128;
  c.dtype = pick(0, 1) == 0 ? DType::bf16 : DType::fp16;
  c.layout = pick(0, 1) == 0 ? Layout::HND : Layout::NHD;
  c.options.causal = pick(0, 2) == 0;
  c.options.smooth_k = pick(0, 3) != 0;
  c.options.return_lse = pick(0, 1) == 1;
  c.options.block_n = pick(0, 1) == 0 ? 32 : 64;
  c.options.pv_fp16 = pick(0, 3) == 0;
  c.options.pv_into_output = !c.options.pv_fp16 && pick(0, 1) == 1;
  // gfx12's form (docs/NUMERICS.md "Key masks", the fused form) in a third of the draws.
  c.options.fused_scores = pick(0, 2) == 0;
  c.options.sum_quantized_p = c.options.fused_scores && !c.options.pv_fp16 && pick(0, 1) == 1;
  c.options.head_dim_pad = c.head_dim_pad;
  c.kind = static_cast<int>(pick(SJ_KEY_MASK_BOOL, SJ_KEY_MASK_F16));
  c.pattern = static_cast<MaskPattern>(pick(0, 3));
  c.ltx_style = c.kind != SJ_KEY_MASK_BOOL && pick(0, 3) == 0;
  c.stride_key = pick(1, 2);  // 2: a view of every other element
  // [B, (H,) Nk] dense, a broadcast row for every batch item (stride 0), or a padded batch stride; per
  // head, the heads' rows dense or padded.
  c.stride_head = c.mask_heads > 1 ? c.seq_kv * c.stride_key + pick(0, 1) * 5 : 0;
  const std::int64_t row = c.mask_heads > 1 ? c.mask_heads * c.stride_head : c.seq_kv * c.stride_key;
  const std::int64_t batch_choice = pick(0, 2);
  c.stride_batch = batch_choice == 0 ? row : batch_choice == 1 ? 0 : row + 3;
  return c;
}

KeyMaskBuffer make_mask(const Case& c, MaskPattern pattern, bool ltx_style, std::mt19937_64& rng, int kind = 0) {
  return make_key_mask(kind != 0 ? kind : c.kind, pattern, c.batch, c.mask_heads, c.seq_kv, c.stride_batch,
                       c.stride_head, c.stride_key, ltx_style, rng);
}

std::string describe(const Case& c, const KeyMaskBuffer& mask) {
  return fmt::format("B={} Hq={} Hk={} Nq={} Nk={} D={} (pad {}) {} {} causal={} smooth={} lse={} block_n={} pv={}{}{}{} | {}",
                     c.batch, c.heads_q, c.heads_kv, c.seq_q, c.seq_kv, c.head_dim, c.head_dim_pad,
                     sagejit::to_string(c.dtype), sagejit::to_string(c.layout), c.options.causal, c.options.smooth_k,
                     c.options.return_lse, c.options.block_n, c.options.pv_fp16 ? "fp16" : "fp8",
                     c.options.pv_into_output ? " (into o)" : "", c.options.fused_scores ? " fused" : "",
                     c.options.sum_quantized_p ? " sum-pq" : "", mask.description);
}

struct Inputs {
  HostTensor q, k, v;
};

Inputs make_inputs(const Case& c, std::mt19937_64& rng) {
  Inputs in{HostTensor({c.batch, c.heads_q, c.seq_q, c.head_dim}, c.dtype, c.layout),
            HostTensor({c.batch, c.heads_kv, c.seq_kv, c.head_dim}, c.dtype, c.layout),
            HostTensor({c.batch, c.heads_kv, c.seq_kv, c.head_dim}, c.dtype, c.layout)};
  fill_normal(in.q, rng);
  fill_channel_offsets(in.k, rng, 2.0);
  fill_normal(in.v, rng);
  return in;
}

// How many valid keys row i of batch item b and query head h sees (causal: among keys 0..i).
std::int64_t valid_keys(const Case& c, const KeyMaskView& mask, std::int64_t b, std::int64_t h, std::int64_t i) {
  const std::int64_t keys = sj_keys_to_visit(static_cast<int>(i), 1, static_cast<int>(c.seq_kv), c.options.causal);
  std::int64_t count = 0;
  for (std::int64_t n = 0; n < keys; ++n) count += key_masked(mask, b, n, h) ? 0 : 1;
  return count;
}

// Does row i of batch item b and query head h see any valid key (causal: among keys 0..i)?
bool row_has_valid_key(const Case& c, const KeyMaskView& mask, std::int64_t b, std::int64_t h, std::int64_t i) {
  const std::int64_t keys = sj_keys_to_visit(static_cast<int>(i), 1, static_cast<int>(c.seq_kv), c.options.causal);
  for (std::int64_t n = 0; n < keys; ++n)
    if (!key_masked(mask, b, n, h)) return true;
  return false;
}

// The K mean's fp64 sum and how many keys it summed, recomputed from docs/NUMERICS.md "Key masks":
// per 64-key chunk its every eighth key when one of those is valid, else all its valid keys; each
// chunk's partial summed in key order, the partials in chunk order.
struct KeySum {
  double sum = 0.0;
  int keys = 0;
};
template <typename Valid, typename Value>
KeySum k_mean_sum(std::int64_t keys, Valid valid, Value value) {
  KeySum total;
  for (std::int64_t chunk = 0; chunk < keys; chunk += 64) {
    const std::int64_t end = std::min<std::int64_t>(chunk + 64, keys);
    bool sampled = false;
    for (std::int64_t n = chunk; n < end; n += 8) sampled = sampled || valid(n);
    double partial = 0.0;
    for (std::int64_t n = chunk; n < end; n += sampled ? 8 : 1)
      if (valid(n)) {
        partial += value(n);
        ++total.keys;
      }
    total.sum += partial;
  }
  return total;
}

}  // namespace

TEST_CASE("key masks: the emulator matches fp64 attention with the mask, all-masked rows give 0 and LSE -inf") {
  std::mt19937_64 rng(sagejit::test::detail::mix(sagejit::test::test_seed() + 0x4b4d));
  const int count = trials();
  for (int trial = 0; trial < count; ++trial) {
    const Case c = draw_case(rng);
    const KeyMaskBuffer mask = make_mask(c, c.pattern, c.ltx_style, rng);
    const std::string what = fmt::format("trial {}: {}", trial, describe(c, mask));
    CAPTURE(what);
    const Inputs in = make_inputs(c, rng);
    EmulatorOptions options = c.options;
    options.key_mask = mask.view;
    const EmulatorResult got = emulate(in.q.view(), in.k.view(), in.v.view(), c.layout, options);
    const ReferenceResult ref = reference_attention(in.q.view(), in.k.view(), in.v.view(), c.layout, c.options.causal,
                                                    std::numeric_limits<float>::quiet_NaN(), mask.view);
    // Rows with a valid key against fp64; all-masked rows exactly 0 with an LSE of -inf (as fp64).
    std::vector<double> got_rows, ref_rows;
    double lse_error = 0.0, few_keys_lse_error = 0.0;  // rows with >= / < kFewKeys valid keys
    std::int64_t empty_rows = 0;
    bool empty_rows_exact = true;
    for (std::int64_t b = 0; b < c.batch; ++b)
      for (std::int64_t h = 0; h < c.heads_q; ++h)
        for (std::int64_t i = 0; i < c.seq_q; ++i) {
          const std::int64_t row = (b * c.heads_q + h) * c.seq_q + i;
          const bool valid = row_has_valid_key(c, mask.view, b, h, i);
          if (!valid) ++empty_rows;
          for (std::int64_t d = 0; d < c.head_dim; ++d) {
            const double value = got.out.get(b, h, i, d), expected = ref.out[static_cast<std::size_t>(row * c.head_dim + d)];
            if (valid) {
              got_rows.push_back(value);
              ref_rows.push_back(expected);
            } else if (value != 0.0 || std::signbit(value) || expected != 0.0) {
              empty_rows_exact = false;
            }
          }
          if (c.options.return_lse) {
            const double lse = got.lse[static_cast<std::size_t>(row)], expected = ref.lse[static_cast<std::size_t>(row)];
            if (valid) {
              double& worst = valid_keys(c, mask.view, b, h, i) >= kFewKeys ? lse_error : few_keys_lse_error;
              worst = std::max(worst, std::abs(lse - expected));
            } else if (!(std::isinf(lse) && lse < 0 && std::isinf(expected) && expected < 0)) {
              empty_rows_exact = false;
            }
          }
        }
    CHECK_MESSAGE(empty_rows_exact, "an all-masked row is not exactly +0 (LSE -inf)");
    if (!got_rows.empty()) {
      const AccuracyMetrics metrics = measure_accuracy(std::span<const double>(got_rows), std::span<const double>(ref_rows));
      INFO(what, ": ", metrics.summary(), ", LSE max-abs ", lse_error, " (rows with few keys ", few_keys_lse_error,
           "), all-masked rows ", empty_rows);
      CHECK(metrics.non_finite == 0);
      CHECK(metrics.cosine >= 0.998);
      CHECK(metrics.relative_l1 <= 0.06);
      // The bounds of tests/lse_bounds.hpp (rows with few valid keys get twice the anchors' 0.05, both
      // three times that without K smoothing).
      CHECK(lse_error <= lse_error_bound(kFewKeys, c.options.smooth_k));
      CHECK(few_keys_lse_error <= lse_error_bound(1, c.options.smooth_k));
    }
  }
}

TEST_CASE("key masks: masked keys take no part (their k and v values change nothing), and no mask equals none") {
  std::mt19937_64 rng(sagejit::test::detail::mix(sagejit::test::test_seed() + 0x4b4e));
  const int count = trials();
  for (int trial = 0; trial < count; ++trial) {
    Case c = draw_case(rng);
    if (c.pattern == MaskPattern::all_masked) c.pattern = MaskPattern::random;
    const KeyMaskBuffer mask = make_mask(c, c.pattern, false, rng);
    const std::string what = fmt::format("trial {}: {}", trial, describe(c, mask));
    CAPTURE(what);
    Inputs in = make_inputs(c, rng);
    EmulatorOptions options = c.options;
    options.key_mask = mask.view;
    const PreparedTensors before = prepare(in.q.view(), in.k.view(), in.v.view(), c.layout, options);
    const EmulatorResult out_before = attention(before, options);
    // Masked keys get huge, infinite or NaN values: nothing of them may reach the workspaces or out.
    const float poison[] = {3.0e4f, -std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN()};
    for (std::int64_t b = 0; b < c.batch; ++b)
      for (std::int64_t n = 0; n < c.seq_kv; ++n)
        for (std::int64_t h = 0; h < c.heads_kv; ++h)
          if (key_masked(mask.view, b, n, h))
            for (std::int64_t d = 0; d < c.head_dim; ++d) {
              in.k.set(b, h, n, d, poison[(n + d) % 3]);
              in.v.set(b, h, n, d, poison[(n + d + 1) % 3]);
            }
    const PreparedTensors after = prepare(in.q.view(), in.k.view(), in.v.view(), c.layout, options);
    CHECK(after.k8 == before.k8);
    CHECK(after.k_scale == before.k_scale);
    CHECK(after.k_mean == before.k_mean);
    CHECK(after.v8 == before.v8);
    CHECK(after.v16 == before.v16);
    CHECK(after.v_scale == before.v_scale);
    CHECK(after.key_bias == before.key_bias);
    const EmulatorResult out_after = attention(after, options);
    CHECK(out_after.out.storage() == out_before.out.storage());
  }
  // Nothing masked (every bool true, every bias 0): the unmasked computation, bit for bit (the plain
  // form; the fused form rounds the biased score once more, NUMERICS.md "Key masks").
  for (int kind = SJ_KEY_MASK_BOOL; kind <= SJ_KEY_MASK_F16; ++kind) {
    Case c = draw_case(rng);
    c.options.fused_scores = c.options.sum_quantized_p = false;
    const KeyMaskBuffer mask = make_mask(c, MaskPattern::none_masked, /*ltx_style=*/true, rng, kind);  // zeros
    CAPTURE(describe(c, mask));
    const Inputs in = make_inputs(c, rng);
    EmulatorOptions options = c.options;
    const EmulatorResult plain = emulate(in.q.view(), in.k.view(), in.v.view(), c.layout, options);
    options.key_mask = mask.view;
    const EmulatorResult masked = emulate(in.q.view(), in.k.view(), in.v.view(), c.layout, options);
    CHECK(masked.out.storage() == plain.out.storage());
    CHECK(masked.lse == plain.lse);
  }
}

TEST_CASE("key masks: the K mean is the fp64 mean of each chunk's sampled valid keys (all its valid keys when none is sampled), key_bias the log2-domain bias") {
  std::mt19937_64 rng(sagejit::test::detail::mix(sagejit::test::test_seed() + 0x4b4f));
  for (int trial = 0; trial < 8; ++trial) {
    Case c = draw_case(rng);
    c.options.smooth_k = true;
    const KeyMaskBuffer mask = make_mask(c, c.pattern, false, rng);
    CAPTURE(describe(c, mask));
    const Inputs in = make_inputs(c, rng);
    EmulatorOptions options = c.options;
    options.key_mask = mask.view;
    const PreparedTensors p = prepare(in.q.view(), in.k.view(), in.v.view(), c.layout, options);
    REQUIRE(p.key_bias.size() == static_cast<std::size_t>(c.batch * c.mask_heads * p.seq_kv_pad));
    for (std::int64_t b = 0; b < c.batch; ++b) {
      for (std::int64_t mh = 0; mh < c.mask_heads; ++mh)
        for (std::int64_t n = 0; n < p.seq_kv_pad; ++n) {
          const std::int64_t row = sj_key_mask_row(static_cast<int>(c.mask_heads), static_cast<int>(b), static_cast<int>(mh));
          const float bias = p.key_bias[static_cast<std::size_t>(row * p.seq_kv_pad + n)];
          if (n >= c.seq_kv || key_masked(mask.view, b, n, mh))
            CHECK(!sj_key_bias_valid(bias));
          else
            CHECK(bias == sj_key_bias(mask.view.data, mask.view.kind,
                                      b * mask.view.stride_batch + mh * mask.view.stride_head + n * mask.view.stride_key));
        }
      for (std::int64_t h = 0; h < c.heads_kv; ++h)
        for (std::int64_t d = 0; d < c.head_dim; ++d) {
          const KeySum s = k_mean_sum(
              c.seq_kv, [&](std::int64_t n) { return !key_masked(mask.view, b, n, h); },
              [&](std::int64_t n) { return in.k.get(b, h, n, d); });
          const double expected = s.keys == 0 ? 0.0 : s.sum / s.keys;
          const double got = p.k_mean[static_cast<std::size_t>((b * c.heads_kv + h) * c.head_dim_pad + d)];
          CHECK(std::abs(got - expected) <= 1e-6 * (1.0 + std::abs(expected)));
        }
    }
  }
}

TEST_CASE("key masks: a chunk none of whose sampled keys is valid adds all its valid keys to the K mean") {
  // A sparse mask can leave every sampled key of a chunk (keys 0, 8, ... of it) masked; the chunk then
  // sums all its valid keys, so K stays smoothed (a mean of 0 would leave K's channel offsets in its
  // int8 blocks). Each layout: which keys are valid; the expected mean in the contract's order
  // (k_mean_sum, one division).
  std::mt19937_64 rng(sagejit::test::detail::mix(sagejit::test::test_seed() + 0x4b51));
  struct MaskCase {
    std::int64_t keys;
    bool (*valid)(std::int64_t n);
  };
  const MaskCase layouts[] = {
      {10, [](std::int64_t n) { return n % 8 != 0; }},  // one chunk, both samples (0, 8) masked
      // chunk 0 all valid (sampled), chunk 1 only unsampled keys, chunk 2 (128, 129) only key 129
      {130, [](std::int64_t n) { return n < 64 || n % 8 != 0; }},
      // left padding, the last ten keys: chunk 2's valid keys (190, 191) unsampled, chunk 3's 192 sampled
      {200, [](std::int64_t n) { return n >= 190; }},
  };
  for (const MaskCase& layout : layouts) {
    const std::int64_t D = 64;
    HostTensor q({1, 1, 4, D}, DType::bf16, Layout::HND), k({1, 1, layout.keys, D}, DType::bf16, Layout::HND),
        v({1, 1, layout.keys, D}, DType::bf16, Layout::HND);
    fill_normal(q, rng);
    fill_channel_offsets(k, rng, 2.0);
    fill_normal(v, rng);
    std::vector<std::uint8_t> bytes(static_cast<std::size_t>(layout.keys));
    for (std::int64_t n = 0; n < layout.keys; ++n) bytes[static_cast<std::size_t>(n)] = layout.valid(n) ? 1 : 0;
    EmulatorOptions options;
    options.smooth_k = true;
    options.head_dim_pad = D;
    options.key_mask = KeyMaskView{bytes.data(), SJ_KEY_MASK_BOOL, 0, 1};
    CAPTURE(layout.keys);
    const PreparedTensors p = prepare(q.view(), k.view(), v.view(), Layout::HND, options);
    double largest_offset = 0.0;
    for (std::int64_t d = 0; d < D; ++d) {
      const KeySum s = k_mean_sum(layout.keys, layout.valid, [&](std::int64_t n) { return k.get(0, 0, n, d); });
      REQUIRE(s.keys > 0);
      const float expected = static_cast<float>(s.sum / s.keys);
      CHECK(p.k_mean[static_cast<std::size_t>(d)] == expected);
      largest_offset = std::max(largest_offset, std::abs(static_cast<double>(expected)));
    }
    CHECK(largest_offset > 0.5);  // the channel offsets (N(0, 2) per channel) are subtracted, not 0
  }
}

TEST_CASE("key masks, fused form: the exponent's argument stays <= P_OFFSET for any bias and score magnitude") {
  // sj_masked_* as the gfx12 kernel uses them, on rows of random dot products, scales and biases of
  // magnitudes up to 2^40 (where one rounding of bias - c would move the argument by thousands).
  std::mt19937_64 rng(sagejit::test::detail::mix(sagejit::test::test_seed() + 0x4b50));
  const int count = trials() * 20;
  std::uniform_int_distribution<int> dot_of(-127 * 127 * 128, 127 * 127 * 128), exponent(-20, 40), keys_of(1, 64);
  std::uniform_real_distribution<float> mantissa(-1.0f, 1.0f);
  std::int64_t checked = 0;
  for (int trial = 0; trial < count; ++trial) {
    const float q_scale = std::ldexp(std::abs(mantissa(rng)) + 0.01f, exponent(rng) / 2 - 10);
    const float k_scale = std::ldexp(std::abs(mantissa(rng)) + 0.01f, exponent(rng) / 2 - 10);
    const float bias_magnitude = std::ldexp(1.0f, exponent(rng));
    const int keys = keys_of(rng);
    std::vector<float> x(static_cast<std::size_t>(keys));
    float x_max = sj_neg_inf();
    for (float& value : x) {
      value = sj_masked_fused_score(static_cast<float>(dot_of(rng)), q_scale, k_scale, mantissa(rng) * bias_magnitude);
      x_max = std::fmax(x_max, value);
    }
    const float c = sj_shifted_round_up(sj_masked_shifted_max(x_max));
    CAPTURE(trial);
    CAPTURE(c);
    for (const float value : x) {
      const float arg = sj_masked_fused_arg(value, c);
      CHECK(arg <= SJ_P_OFFSET);
      CHECK((static_cast<double>(value) - static_cast<double>(c)) <= static_cast<double>(SJ_P_OFFSET));  // exactly
      ++checked;
    }
  }
  CHECK(checked > 0);
  // A row without a valid key yet (c = -inf): its masked keys' p are 0, not NaN.
  CHECK(sj_exp2(sj_masked_fused_arg(sj_neg_inf(), sj_neg_inf())) == 0.0f);
}
