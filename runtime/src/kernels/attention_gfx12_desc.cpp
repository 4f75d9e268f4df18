// Descriptor of kernel_src/attention_gfx12.hip: valid configs, defines and launch geometry.
// Config parameters (configs/gfx1201.json, configs/gfx1200.json): waves, rows_per_wave, block_n, stages.
#include "kernels/attention_gfx12_desc.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <initializer_list>
#include <string_view>

#include "kernels/config_params.hpp"

namespace sagejit {
namespace {

constexpr int lds_pad = 16;  // bytes added to each LDS row (kLdsPad in the kernel)

std::string_view arch_of(const std::string& target) { return std::string_view(target).substr(0, target.find(':')); }

bool gfx12_supports(const std::string& target) {
  const std::string_view arch = arch_of(target);
  return arch == "gfx1200" || arch == "gfx1201";
}

std::string gfx12_check(const TileConfig& config, const Specialization& spec, const std::string& target) {
  for (const auto& [name, value] : config)
    if (name != "waves" && name != "rows_per_wave" && name != "block_n" && name != "stages")
      return fmt::format("unknown attention_gfx12 parameter \"{}\" (accepted: block_n, rows_per_wave, stages, waves)", name);
  if (!gfx12_supports(target)) return fmt::format("target {} is not gfx1200 or gfx1201", target);
  const Gfx12AttentionTile tile = gfx12_attention_tile(config);
  if (!one_of(tile.waves, {2, 4, 8})) return fmt::format("waves {} is not one of [2, 4, 8]", tile.waves);
  if (!one_of(tile.rows_per_wave, {16, 32}))
    return fmt::format("rows_per_wave {} is not one of [16, 32]", tile.rows_per_wave);
  if (!one_of(tile.block_n, {32, 64})) return fmt::format("block_n {} is not one of [32, 64]", tile.block_n);
  if (!one_of(tile.stages, {1, 2})) return fmt::format("stages {} is not one of [1, 2]", tile.stages);
  if (spec.head_dim != 64 && spec.head_dim != 128)
    return fmt::format("head_dim {} is not one of [64, 128]", spec.head_dim);
  if (spec.dtype != 0 && spec.dtype != 1) return fmt::format("dtype {} is not bf16 (0) or fp16 (1)", spec.dtype);
  if (spec.pv_fp16)
    return "pv_fp16 is an NVIDIA config family; gfx12 runs PV in fp8 (native WMMA), use pv_fp16=false";
  const Gfx12AttentionFigures figures = gfx12_attention_figures(tile, spec.head_dim);
  if (figures.lds_bytes > gfx12_lds_limit_bytes)
    return fmt::format("LDS {} B > {} B", figures.lds_bytes, gfx12_lds_limit_bytes);
  if (figures.vgpr_estimate > gfx12_vgpr_limit)
    return fmt::format("estimated {} VGPRs > {} (would spill to scratch)", figures.vgpr_estimate, gfx12_vgpr_limit);
  return {};
}

std::vector<std::pair<std::string, std::string>> gfx12_defines(const TileConfig& config, const Specialization& spec) {
  const Gfx12AttentionTile tile = gfx12_attention_tile(config);
  return {{"SJ_HEAD_DIM", std::to_string(spec.head_dim)},
          {"SJ_DTYPE", std::to_string(spec.dtype)},
          {"SJ_CAUSAL", spec.causal ? "1" : "0"},
          {"SJ_WRITE_LSE", spec.write_lse ? "1" : "0"},
          {"SJ_WAVES", std::to_string(tile.waves)},
          {"SJ_ROWS_PER_WAVE", std::to_string(tile.rows_per_wave)},
          {"SJ_BLOCK_N", std::to_string(tile.block_n)},
          {"SJ_STAGES", std::to_string(tile.stages)}};
}

LaunchGeometry gfx12_geometry(int, const TileConfig& config, const Specialization& spec, const ProblemShape& shape) {
  const Gfx12AttentionFigures figures = gfx12_attention_figures(gfx12_attention_tile(config), spec.head_dim);
  return query_block_launch(shape, figures.rows_per_group, figures.threads, 0);  // the kernel's LDS is static
}

}  // namespace

Gfx12AttentionTile gfx12_attention_tile(const TileConfig& config) {
  const Gfx12AttentionTile defaults;
  return {config_param(config, "waves", defaults.waves), config_param(config, "rows_per_wave", defaults.rows_per_wave),
          config_param(config, "block_n", defaults.block_n), config_param(config, "stages", defaults.stages)};
}

Gfx12AttentionFigures gfx12_attention_figures(const Gfx12AttentionTile& tile, int head_dim) {
  Gfx12AttentionFigures figures;
  const int d = head_dim;
  figures.threads = tile.waves * 32;
  figures.rows_per_group = tile.waves * tile.rows_per_wave;
  // Per stage: K tile (block_n rows of d bytes) + V^T tile (d rows of block_n bytes), rows padded.
  figures.lds_bytes = static_cast<unsigned>(tile.stages * (tile.block_n * (d + lds_pad) + d * (tile.block_n + lds_pad)));
  const int q_blocks = tile.rows_per_wave / 16, k_blocks = tile.block_n / 16, steps = d / 16;
  figures.qk_wmma_per_tile = q_blocks * k_blocks * steps;
  figures.pv_wmma_per_tile = steps * k_blocks * q_blocks;
  // VGPRs per lane, counted from the kernel's live values plus a fixed allowance for addresses,
  // softmax state and temporaries. Calibrated against clang-22's allocation over the whole space
  // (docs/RDNA4.md: the allowance is 8..30 there, 32 here), so a config this accepts does not spill.
  const int q_fragments = q_blocks * steps * 2;                 // Q^T in registers, 8 bytes per step
  const int o_accumulators = q_blocks * steps * 8;              // O^T, fp32
  const int chunk_iters = (tile.block_n * d / 16 + figures.threads - 1) / figures.threads;
  const int prefetch = 2 * chunk_iters * 4;                     // next K and V^T tiles, 16 B a chunk
  const int s_accumulators = q_blocks * k_blocks * 8;           // S^T of one key tile
  const int k_fragments = 2 * k_blocks * 4;                     // current + next channel pair (pipelined)
  constexpr int allowance = 32;
  figures.vgpr_estimate = q_fragments + o_accumulators + prefetch + s_accumulators + k_fragments + allowance;
  return figures;
}

extern const KernelDesc attention_gfx12_kernel{
    .name = "attention_gfx12",
    .family = "attention",
    .source_path = "attention_gfx12.hip",
    .entries = {"sj_attention_gfx12"},
    .supports_target = gfx12_supports,
    .check_config = gfx12_check,
    .defines = gfx12_defines,
    .geometry = gfx12_geometry,
};

}  // namespace sagejit
