// Descriptor of kernel_src/attention_sm90.cu (warpgroup MMA; NVIDIA Hopper, compiled for sm_90a).
// Selected by the config switch "wgmma": 1 in the tuning tables (configs/sm_90.json); it shares the
// attention config space of sm_90 with attention_sm80:
//   warps        4 | 8   (one or two warpgroups; BLOCK_M = 16 * warps)
//   rows_per_warp 16     (a warpgroup's m64 tile is 16 rows per warp)
//   block_n      64 | 128
//   stages       2 | 3
//   pv_fp16      0       (PV in native e4m3)
//   min_blocks   1..4    (CTAs per SM requested through __launch_bounds__)
#include <fmt/format.h>

#include "kernels/config_params.hpp"
#include "kernels/registry.hpp"

namespace sagejit {
namespace {

// sm_90a code runs on sm_90 only: the "a" features do not carry over to later architectures.
bool sm90_supports(const std::string& target) { return target == "sm_90" || target == "sm_90a"; }

std::string sm90_compile_target(const std::string& target) {
  return target == "sm_90" ? std::string("sm_90a") : target;
}

struct Sm90Tile {
  int warps, rows_per_warp, block_n, stages, pv_fp16, min_blocks;
};

Sm90Tile tile_of(const TileConfig& config) {
  return {config_param(config, "warps", 4),  config_param(config, "rows_per_warp", 16),
          config_param(config, "block_n", 128), config_param(config, "stages", 2),
          config_param(config, "pv_fp16", 0), config_param(config, "min_blocks", 1)};
}

unsigned shared_bytes(const Sm90Tile& tile, int head_dim) {
  const int q_bytes = tile.warps * 16 * head_dim;
  const int stage_bytes = 2 * tile.block_n * head_dim;  // int8 K tile + e4m3 V tile
  return static_cast<unsigned>(1024 + q_bytes + tile.stages * stage_bytes);  // + 1 KiB to align to 1 KiB
}

std::string sm90_check(const TileConfig& config, const Specialization& spec, const std::string& target) {
  for (const auto& [name, value] : config)
    if (name != "warps" && name != "rows_per_warp" && name != "block_n" && name != "stages" && name != "pv_fp16" &&
        name != "min_blocks" && name != "wgmma")
      return fmt::format(
          "unknown attention_sm90 parameter \"{}\" (accepted: block_n, min_blocks, pv_fp16, rows_per_warp, stages, "
          "warps, wgmma)",
          name);
  if (config_param(config, "wgmma", 0) != 1) return "attention_sm90 configs need wgmma=1";
  const Sm90Tile tile = tile_of(config);
  if (!one_of(tile.warps, {4, 8})) return fmt::format("warps {} is not one of [4, 8] (one or two warpgroups)", tile.warps);
  if (tile.rows_per_warp != 16) return fmt::format("rows_per_warp {} is not 16 (wgmma tiles are 64 rows per warpgroup)", tile.rows_per_warp);
  if (!one_of(tile.block_n, {64, 128})) return fmt::format("block_n {} is not one of [64, 128]", tile.block_n);
  if (!one_of(tile.stages, {2, 3})) return fmt::format("stages {} is not one of [2, 3]", tile.stages);
  if (tile.pv_fp16 != 0) return fmt::format("pv_fp16 {} is not 0 (the wgmma kernel runs PV in e4m3)", tile.pv_fp16);
  if (spec.pv_fp16) return "the specialization asks for fp16 PV; the wgmma kernel runs PV in e4m3 (pv_fp16=0)";
  if (!one_of(tile.min_blocks, {1, 2, 3, 4})) return fmt::format("min_blocks {} is not one of [1, 2, 3, 4]", tile.min_blocks);
  // The register file (64 Ki per SM) shared by min_blocks CTAs: below ~160 per thread the score, PV
  // and output accumulators (3 x 64 for D = 128) no longer fit and ptxas spills or gives up.
  const int register_cap = 65536 / (tile.min_blocks * tile.warps * 32);
  if (register_cap < 160)
    return fmt::format("min_blocks {} x warps {} caps registers at {} per thread (< 160)", tile.min_blocks, tile.warps,
                       register_cap);
  if (spec.head_dim != 64 && spec.head_dim != 128) return fmt::format("head_dim {} is not one of [64, 128]", spec.head_dim);
  if (spec.dtype != 0 && spec.dtype != 1) return fmt::format("dtype {} is not bf16 (0) or fp16 (1)", spec.dtype);
  if (!sm90_supports(target)) return fmt::format("target {} is not sm_90 (wgmma needs Hopper)", target);
  const unsigned bytes = shared_bytes(tile, spec.head_dim);
  if (bytes * static_cast<unsigned>(tile.min_blocks) > 227u * 1024u)
    return fmt::format("shared memory {} KiB x min_blocks {} > 227 KiB per SM", bytes / 1024, tile.min_blocks);
  return {};
}

std::vector<std::pair<std::string, std::string>> sm90_defines(const TileConfig& config, const Specialization& spec) {
  const Sm90Tile tile = tile_of(config);
  return {{"SJ_HEAD_DIM", std::to_string(spec.head_dim)},
          {"SJ_DTYPE", std::to_string(spec.dtype)},
          {"SJ_WARPGROUPS", std::to_string(tile.warps / 4)},
          {"SJ_BLOCK_N", std::to_string(tile.block_n)},
          {"SJ_STAGES", std::to_string(tile.stages)},
          {"SJ_MIN_BLOCKS", std::to_string(tile.min_blocks)},
          {"SJ_CAUSAL", spec.causal ? "1" : "0"},
          {"SJ_WRITE_LSE", spec.write_lse ? "1" : "0"}};
}

LaunchGeometry sm90_geometry(int, const TileConfig& config, const Specialization& spec, const ProblemShape& shape) {
  const Sm90Tile tile = tile_of(config);
  return query_block_launch(shape, tile.warps * 16, tile.warps * 32, shared_bytes(tile, spec.head_dim));
}

}  // namespace

extern const KernelDesc attention_sm90_kernel{
    .name = "attention_sm90",
    .family = "attention",
    .source_path = "attention_sm90.cu",
    .entries = {"sj_attention_sm90"},
    .supports_target = sm90_supports,
    .check_config = sm90_check,
    .defines = sm90_defines,
    .geometry = sm90_geometry,
    .config_switch = "wgmma",
    .compile_target = sm90_compile_target,
};

}  // namespace sagejit
