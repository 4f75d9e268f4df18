// Descriptor of kernel_src/attention_sm80.cu (mma.sync; NVIDIA sm_80+ ISA, fp8 PV needs sm_89+).
// Config parameters (configs/sm_*.json): warps, rows_per_warp, block_n, stages, pv_fp16, and the
// optional min_blocks (CTAs per SM requested through __launch_bounds__, which caps the registers per
// thread at 65536 / (min_blocks * threads); default 1 = no cap beyond 255).
#include <fmt/format.h>

#include "kernels/config_params.hpp"
#include "kernels/registry.hpp"

namespace sagejit {
namespace {

bool sm80_supports(const std::string& target) { return nvidia_sm_number(target) >= 80; }

struct Sm80Tile {
  int warps, rows_per_warp, block_n, stages, pv_fp16, min_blocks;
};

Sm80Tile tile_of(const TileConfig& config, const Specialization& spec) {
  return {config_param(config, "warps", 4), config_param(config, "rows_per_warp", 16), config_param(config, "block_n", 64),
          config_param(config, "stages", 2), config_param(config, "pv_fp16", spec.pv_fp16 ? 1 : 0), config_param(config, "min_blocks", 1)};
}

unsigned shared_bytes(const Sm80Tile& tile, int head_dim) {
  const int v_bytes = tile.pv_fp16 ? 2 : 1;
  // rows_per_warp 32 also stages the CTA's int8 Q tile (SJ_Q_IN_SMEM in the kernel).
  const int q_bytes = tile.rows_per_warp == 32 ? tile.warps * tile.rows_per_warp * head_dim : 0;
  return static_cast<unsigned>(tile.stages * (tile.block_n * head_dim + head_dim * tile.block_n * v_bytes) + q_bytes);
}

std::string sm80_check(const TileConfig& config, const Specialization& spec, const std::string& target) {
  for (const auto& [name, value] : config)
    if (name != "warps" && name != "rows_per_warp" && name != "block_n" && name != "stages" && name != "pv_fp16" &&
        name != "min_blocks" && name != "wgmma")
      return fmt::format(
          "unknown attention_sm80 parameter \"{}\" (accepted: block_n, min_blocks, pv_fp16, rows_per_warp, stages, warps, wgmma=0)",
          name);
  if (config_param(config, "wgmma", 0) != 0) return "wgmma=1 configs belong to attention_sm90";
  const Sm80Tile tile = tile_of(config, spec);
  if (!one_of(tile.warps, {2, 4, 8})) return fmt::format("warps {} is not one of [2, 4, 8]", tile.warps);
  if (!one_of(tile.rows_per_warp, {16, 32})) return fmt::format("rows_per_warp {} is not one of [16, 32]", tile.rows_per_warp);
  if (!one_of(tile.block_n, {32, 64, 128})) return fmt::format("block_n {} is not one of [32, 64, 128]", tile.block_n);
  if (!one_of(tile.stages, {1, 2, 3})) return fmt::format("stages {} is not one of [1, 2, 3]", tile.stages);
  if (!one_of(tile.pv_fp16, {0, 1})) return fmt::format("pv_fp16 {} is not 0 or 1", tile.pv_fp16);
  if (!one_of(tile.min_blocks, {1, 2, 3, 4})) return fmt::format("min_blocks {} is not one of [1, 2, 3, 4]", tile.min_blocks);
  // At most 64 warps per SM (sm_80..sm_90): more resident CTAs than that cannot be requested.
  if (tile.min_blocks * tile.warps > 64)
    return fmt::format("min_blocks {} x warps {} exceeds 64 warps per SM", tile.min_blocks, tile.warps);
  if ((tile.pv_fp16 != 0) != spec.pv_fp16)
    return fmt::format("config pv_fp16={} does not match the specialization's pv_fp16={}", tile.pv_fp16, spec.pv_fp16 ? 1 : 0);
  if (spec.head_dim != 64 && spec.head_dim != 128) return fmt::format("head_dim {} is not one of [64, 128]", spec.head_dim);
  if (spec.dtype != 0 && spec.dtype != 1) return fmt::format("dtype {} is not bf16 (0) or fp16 (1)", spec.dtype);
  const int sm = nvidia_sm_number(target);
  if (sm < 80) return fmt::format("target {} is not an NVIDIA sm_80+ target", target);
  if (!tile.pv_fp16 && sm < 89) return fmt::format("fp8 PV (pv_fp16=0) needs sm_89+, target is {}", target);
  // Shared memory per block with opt-in: 99 KiB on sm_86/sm_89, 163 KiB on sm_80, 227 KiB on sm_90+.
  const unsigned limit = sm >= 90 ? 227u * 1024u : (sm == 80 ? 163u * 1024u : 99u * 1024u);
  const unsigned bytes = shared_bytes(tile, spec.head_dim);
  if (bytes > limit) return fmt::format("shared memory {} KiB > {} KiB on {}", bytes / 1024, limit / 1024, target);
  return {};
}

std::vector<std::pair<std::string, std::string>> sm80_defines(const TileConfig& config, const Specialization& spec) {
  const Sm80Tile tile = tile_of(config, spec);
  return {{"SJ_HEAD_DIM", std::to_string(spec.head_dim)},
          {"SJ_DTYPE", std::to_string(spec.dtype)},
          {"SJ_WARPS", std::to_string(tile.warps)},
          {"SJ_ROWS_PER_WARP", std::to_string(tile.rows_per_warp)},
          {"SJ_BLOCK_N", std::to_string(tile.block_n)},
          {"SJ_STAGES", std::to_string(tile.stages)},
          {"SJ_PV_FP16", std::to_string(tile.pv_fp16)},
          {"SJ_MIN_BLOCKS", std::to_string(tile.min_blocks)},
          {"SJ_CAUSAL", spec.causal ? "1" : "0"},
          {"SJ_WRITE_LSE", spec.write_lse ? "1" : "0"}};
}

LaunchGeometry sm80_geometry(int, const TileConfig& config, const Specialization& spec, const ProblemShape& shape) {
  const Sm80Tile tile = tile_of(config, spec);
  return query_block_launch(shape, tile.warps * tile.rows_per_warp, tile.warps * 32, shared_bytes(tile, spec.head_dim));
}

}  // namespace

extern const KernelDesc attention_sm80_kernel{
    .name = "attention_sm80",
    .family = "attention",
    .source_path = "attention_sm80.cu",
    .entries = {"sj_attention_sm80"},
    .supports_target = sm80_supports,
    .check_config = sm80_check,
    .defines = sm80_defines,
    .geometry = sm80_geometry,
};

}  // namespace sagejit
