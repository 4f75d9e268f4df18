// Key masks on the GPU kernels (docs/NUMERICS.md "Key masks"): random masked problems (every mask
// kind, padded tails, masked tiles, all-masked rows, strided and broadcast views, causal + mask, GQA,
// odd lengths) through the tuning tables' kernels and, on NVIDIA, both mma.sync PV families and (sm_90)
// the wgmma kernel with and without TMA. The prepare workspaces (key_bias included) equal the
// emulator's bit for bit, the output is within accumulation noise of it, an all-masked row is exactly
// 0 with an LSE of -inf, and nothing is written past the output or the LSE. Skips without a GPU.
#include <doctest/doctest.h>

#include "skip_support.hpp"

#include <array>
#include <cmath>
#include <limits>

#include "common/key_mask.h"
#include "dev/numerics/metrics.hpp"
#include "gpu_attention_support.hpp"
#include "random_support.hpp"

using namespace sagejit;
using namespace sagejit::test;

namespace {

std::vector<TileConfig> configs_for(const Gpu& gpu) {
  std::vector<TileConfig> configs{TileConfig{}};  // empty: the tuning tables' choice
  if (gpu.target.rfind("sm_", 0) != 0) return configs;
  for (int pv_fp16 : {0, 1})
    configs.push_back({{"warps", 4}, {"rows_per_warp", 16}, {"block_n", 64}, {"stages", 2}, {"pv_fp16", pv_fp16}});
  if (gpu.target == "sm_90") {
    for (int tma : {0, 1})
      configs.push_back({{"warps", 4}, {"rows_per_warp", 16}, {"block_n", 128}, {"stages", 2}, {"pv_fp16", 0},
                         {"wgmma", 1}, {"tma", tma}, {"min_blocks", 3}});
    // Three warpgroups sharing each tile (stages released by counting; a tile without a valid key is
    // still counted): the form of the table's 32k and 16k-causal entries, which masked calls are
    // narrowed away from (attention_sm90_desc.cpp, sm90_table_config_for) but may ask for explicitly.
    configs.push_back({{"warps", 12}, {"rows_per_warp", 16}, {"block_n", 128}, {"stages", 2}, {"pv_fp16", 0},
                       {"wgmma", 1}, {"tma", 1}, {"min_blocks", 1}});
  }
  return configs;
}

Case random_masked_case(std::uint64_t seed) {
  Case c;
  c.seed = seed;
  c.dtype = random_in(0, 1) != 0 ? DType::fp16 : DType::bf16;
  c.batch = random_in(1, 3);
  c.heads_kv = random_in(1, 2);
  c.heads_q = c.heads_kv * random_in(1, 3);
  if (random_in(0, 2) == 0) c.heads_q = c.heads_kv = c.mask_heads = random_in(2, 3);  // a mask per head (LTX)
  c.seq_q = random_in(1, 600);
  c.seq_kv = random_in(1, 1500);
  c.head_dim = std::array<std::int64_t, 3>{64, 128, 256}[static_cast<std::size_t>(random_in(0, 2))];
  c.layout = random_in(0, 1) != 0 ? Layout::NHD : Layout::HND;
  c.causal = random_in(0, 2) == 0;
  c.smooth_k = random_in(0, 3) != 0;
  c.lse = random_in(0, 1) != 0;
  c.fill = Fill::channel_offsets;
  c.mask_kind = static_cast<int>(random_in(SJ_KEY_MASK_BOOL, SJ_KEY_MASK_F16));
  c.mask_pattern = static_cast<numerics::MaskPattern>(random_in(0, 3));
  c.mask_ltx_style = c.mask_kind != SJ_KEY_MASK_BOOL && random_in(0, 3) == 0;
  c.mask_stride_key = random_in(1, 2);
  const std::int64_t batch_choice = random_in(0, 2);  // dense, one row for every item, padded batch stride
  if (c.mask_heads > 1 && random_in(0, 1) != 0) c.mask_stride_head = c.seq_kv * c.mask_stride_key + 3;  // padded rows
  const std::int64_t key_row = c.seq_kv * c.mask_stride_key;
  const std::int64_t item = c.mask_heads > 1 ? c.mask_heads * (c.mask_stride_head < 0 ? key_row : c.mask_stride_head) : key_row;
  c.mask_stride_batch = batch_choice == 0 ? -1 : batch_choice == 1 ? 0 : item + 5;
  return c;
}

bool row_has_valid_key(const Case& c, const numerics::KeyMaskView& mask, std::int64_t b, std::int64_t h,
                       std::int64_t i) {
  const std::int64_t keys = c.causal ? std::min(i + 1, c.seq_kv) : c.seq_kv;
  for (std::int64_t n = 0; n < keys; ++n)
    if (!numerics::key_masked(mask, b, n, h)) return true;
  return false;
}

void check_masked(const Gpu& gpu, const Case& c) {
  const CaseResult r = run_case(gpu, c);
  const std::string what = c.describe() + " | " + r.mask.description;
  CAPTURE(what);
  CHECK(r.out_guard_intact);
  CHECK(r.out_padding_intact);
  CHECK(r.lse_guard_intact);
  REQUIRE(r.plan.spec.key_mask);

  numerics::EmulatorOptions options = emulator_options_for(r.plan, r.call);
  options.key_mask = r.mask.view;  // the host copy
  const numerics::PreparedTensors expected = numerics::prepare(r.q.view(), r.k.view(), r.v.view(), c.layout, options);
  const numerics::PreparedTensors actual =
      prepared_from_workspace(std::as_bytes(std::span(r.workspace)), r.plan, r.call);
  const auto mismatch = numerics::compare_prepared(expected, actual, v_key_slots(r.plan));
  CHECK_MESSAGE(!mismatch, (mismatch ? mismatch->describe() : std::string()));
  const numerics::EmulatorResult emulated = numerics::attention(expected, options);

  std::vector<double> got_rows, emulated_rows;
  bool empty_rows_exact = true;
  double lse_error = 0.0;
  std::int64_t empty_rows = 0;
  for (std::int64_t b = 0; b < c.batch; ++b)
    for (std::int64_t h = 0; h < c.heads_q; ++h)
      for (std::int64_t i = 0; i < c.seq_q; ++i) {
        const bool valid = row_has_valid_key(c, r.mask.view, b, h, i);
        empty_rows += valid ? 0 : 1;
        for (std::int64_t d = 0; d < c.head_dim; ++d) {
          const double got = r.out.get(b, h, i, d);
          if (valid) {
            got_rows.push_back(got);
            emulated_rows.push_back(emulated.out.get(b, h, i, d));
          } else if (got != 0.0 || std::signbit(got)) {
            empty_rows_exact = false;
          }
        }
        if (c.lse) {
          const std::size_t row = static_cast<std::size_t>((b * c.heads_q + h) * c.seq_q + i);
          const double got = r.lse[row];
          if (valid)
            lse_error = std::isfinite(got) ? std::max(lse_error, std::abs(got - emulated.lse[row])) : 1e30;
          else if (!(std::isinf(got) && got < 0))
            empty_rows_exact = false;
        }
      }
  CHECK_MESSAGE(empty_rows_exact, "an all-masked row is not exactly +0 (LSE -inf)");
  if (!got_rows.empty()) {
    const numerics::AccuracyMetrics metrics =
        numerics::measure_accuracy(std::span<const double>(got_rows), std::span<const double>(emulated_rows));
    MESSAGE(what << "\n  vs emulator: " << metrics.summary() << ", LSE max-abs " << lse_error << ", all-masked rows "
                 << empty_rows);
    CHECK(metrics.non_finite == 0);
    CHECK(metrics.cosine >= 0.99995);
    CHECK(metrics.relative_l1 <= 4e-3);
    CHECK(lse_error <= 2e-3);
  }
}

}  // namespace

TEST_CASE("GPU key masks: prepare bit for bit, output within noise of the emulator, all-masked rows 0") {
  const auto gpu = gpu_or_skip();
  if (!gpu) return;
  const std::vector<TileConfig> configs = configs_for(*gpu);
  std::uint64_t seed = 2500;
  for (int trial = 0; trial < 8; ++trial) {
    Case c = random_masked_case(seed++);
    for (const TileConfig& config : configs) {
      if (c.head_dim > 128 && config.contains("wgmma")) continue;  // the wgmma kernel stops at 128
      c.attention = config;
      check_masked(*gpu, c);
    }
  }
  // The shapes that matter most: a HunyuanVideo-like text-padding mask over a long sequence (whole
  // tiles skipped at the end), and LTX's -10000 bias, both bf16 D=128 through the tables' kernel.
  Case hunyuan;
  hunyuan.seq_q = hunyuan.seq_kv = 2300;
  hunyuan.batch = 2;
  hunyuan.mask_kind = SJ_KEY_MASK_BOOL;
  hunyuan.mask_pattern = numerics::MaskPattern::padded_tail;
  hunyuan.attention = {};
  hunyuan.seed = seed++;
  check_masked(*gpu, hunyuan);
  Case ltx = hunyuan;
  ltx.seq_q = 1024;
  ltx.seq_kv = 128;
  ltx.mask_kind = SJ_KEY_MASK_BF16;
  ltx.mask_ltx_style = true;
  ltx.seed = seed++;
  check_masked(*gpu, ltx);
}

// One small masked call per kernel of this GPU (the tables' and, on sm_90, the wgmma kernel with TMA):
// the size compute-sanitizer memcheck runs in seconds (`-tc="*sanitizer*"`).
TEST_CASE("GPU key masks: small masked calls (sanitizer-sized)") {
  const auto gpu = gpu_or_skip();
  if (!gpu) return;
  std::vector<TileConfig> configs{TileConfig{}};
  if (gpu->target == "sm_90")
    configs.push_back({{"warps", 4}, {"rows_per_warp", 16}, {"block_n", 128}, {"stages", 2}, {"pv_fp16", 0},
                       {"wgmma", 1}, {"tma", 1}, {"min_blocks", 3}});
  for (const TileConfig& config : configs) {
    Case c;
    c.batch = 2;
    c.heads_q = 2;
    c.heads_kv = 1;
    c.seq_q = 77;
    c.seq_kv = 333;
    c.causal = true;
    c.lse = true;
    c.mask_kind = SJ_KEY_MASK_F16;
    c.mask_pattern = numerics::MaskPattern::masked_tiles;
    c.mask_stride_key = 2;
    c.attention = config;
    c.seed = 2600;
    check_masked(*gpu, c);
  }
}
