// Descriptor of kernel_src/attention_gfx12.hip: valid configs, defines and launch geometry.
// Config parameters (the gfx12 tables, configs/gfx12*.json): waves, rows_per_wave, block_n, stages.
#include "kernels/attention_gfx12_desc.hpp"

#include <fmt/format.h>

#include "jit/kernel_config.hpp"
#include "kernels/launch_shapes.hpp"

namespace sagejit {
namespace {

constexpr int lds_pad = 16;  // bytes added to each LDS row (kLdsPad in the kernel)

std::string gfx12_resources(const TileConfig& config, const Specialization& spec, const Target&) {
  const Gfx12AttentionFigures figures = gfx12_attention_figures(gfx12_attention_tile(config), spec.head_dim);
  if (figures.lds_bytes > gfx12_lds_limit_bytes)
    return fmt::format("LDS {} B > {} B", figures.lds_bytes, gfx12_lds_limit_bytes);
  if (figures.vgpr_estimate > gfx12_vgpr_limit)
    return fmt::format("estimated {} VGPRs > {} (would spill to scratch)", figures.vgpr_estimate, gfx12_vgpr_limit);
  if (spec.key_mask && config.at("rows_per_wave") > gfx12_key_mask_rows_per_wave)
    return fmt::format("the key-mask variant runs at most {} rows per wave (at {} it spills to scratch)",
                       gfx12_key_mask_rows_per_wave, config.at("rows_per_wave"));
  return {};
}

TileConfig gfx12_table_config_for(const TileConfig& config, const Specialization& spec) {
  TileConfig fitted = config;
  if (spec.key_mask && fitted.at("rows_per_wave") > gfx12_key_mask_rows_per_wave)
    fitted["rows_per_wave"] = gfx12_key_mask_rows_per_wave;
  return fitted;
}

LaunchGeometry gfx12_geometry(int, const TileConfig& config, const Specialization& spec, const ProblemShape& shape) {
  const Gfx12AttentionFigures figures = gfx12_attention_figures(gfx12_attention_tile(config), spec.head_dim);
  return query_block_launch(shape, figures.rows_per_group, figures.threads, 0);  // the kernel's LDS is static
}

}  // namespace

Gfx12AttentionTile gfx12_attention_tile(const TileConfig& config) {
  const auto tile_of = [](const TileConfig& complete) {
    return Gfx12AttentionTile{complete.at("waves"), complete.at("rows_per_wave"), complete.at("block_n"),
                              complete.at("stages")};
  };
  // Every launch reads the plan's config, which is complete: read as it is, without a copy (a repeated
  // call allocates nothing); a partial one (tables, tools) is completed with the defaults first.
  const bool complete = config.contains("waves") && config.contains("rows_per_wave") && config.contains("block_n") &&
                        config.contains("stages");
  return complete ? tile_of(config) : tile_of(complete_config(attention_gfx12_kernel, config));
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
  // (docs/RDNA4.md: the allowance is 6..25 there, 24 here), so a config this accepts does not spill.
  const int q_fragments = q_blocks * steps * 2;                 // Q^T in registers, 8 bytes per step
  const int o_accumulators = q_blocks * steps * 8;              // O^T, fp32
  const int chunk_iters = (tile.block_n * d / 16 + figures.threads - 1) / figures.threads;
  const int prefetch = 2 * chunk_iters * 4;                     // next K and V^T tiles, 16 B a chunk
  const int s_accumulators = q_blocks * k_blocks * 8;           // S^T of one key tile
  const int k_fragments = 2 * k_blocks * 4;                     // current + next channel pair (pipelined)
  const int v_fragments = 2 * (k_blocks / 2) * 4;               // current + next channel block (PV pipeline)
  constexpr int allowance = 24;
  figures.vgpr_estimate =
      q_fragments + o_accumulators + prefetch + s_accumulators + k_fragments + v_fragments + allowance;
  return figures;
}

extern const KernelDesc attention_gfx12_kernel{
    .name = "attention_gfx12",
    .family = "attention",
    .source_path = "attention_gfx12.hip",
    .entries = {"sj_attention_gfx12"},
    .targets = {gfx12_targets},
    .specialized_on = spec_head_dim | spec_dtype | spec_causal | spec_write_lse | spec_key_mask,
    .params = {{"waves", {2, 4, 8}, 4, "SJ_WAVES"},
               {"rows_per_wave", {16, 32}, 32, "SJ_ROWS_PER_WAVE"},
               {"block_n", {32, 64}, 32, "SJ_BLOCK_N"},
               {"stages", {1, 2}, 2, "SJ_STAGES"}},
    .check_resources = gfx12_resources,
    .geometry = gfx12_geometry,
    .v_input = [](const TileConfig&) { return VInput{false, VOrder::natural}; },  // fp8 V, keys in order
    .table_config_for = gfx12_table_config_for,  // key masks: 16 rows per wave
    .pv_into_output = true,  // WMMA C operand = O (gfx12 accumulates fp8 products in fp32)
    .fused_scores = true,     // one v_fma per score (and a non-saturating P convert needs its bound)
    .sum_quantized_p = true,  // l by v_dot4_f32_fp8_fp8 over the packed P
};

}  // namespace sagejit
