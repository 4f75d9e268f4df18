// Descriptor of kernel_src/attention_sm80.cu (mma.sync; NVIDIA sm_80+ ISA, fp8 PV needs sm_89+).
// Config parameters (configs/sm_*.json): warps, rows_per_warp, block_n, stages, pv_fp16, and the
// optional min_blocks (CTAs per SM requested through __launch_bounds__, which caps the registers per
// thread at the SM's registers / (min_blocks * threads); default 1 = no cap beyond 255). Shared memory
// and warps are checked against the arch's row of kernels/nvidia_sm_limits.cpp. On sm_90 it serves the
// configs that do not switch attention_sm90 on (wgmma=0 or absent; the registry drops the switch).
#include <fmt/format.h>

#include "kernels/launch_shapes.hpp"
#include "kernels/nvidia_sm_limits.hpp"

namespace sagejit {
namespace {

constexpr int sm80_max_o_registers = 128;

unsigned shared_bytes(const TileConfig& config, int head_dim) {
  const int v_bytes = config.at("pv_fp16") != 0 ? 2 : 1;
  const int warps = config.at("warps"), rows_per_warp = config.at("rows_per_warp"), block_n = config.at("block_n");
  // rows_per_warp 32 or D > 128 also stages the CTA's int8 Q tile (SJ_Q_IN_SMEM in the kernel).
  const bool q_in_shared_memory = rows_per_warp == 32 || head_dim > 128;
  const int q_bytes = q_in_shared_memory ? warps * rows_per_warp * head_dim : 0;
  return static_cast<unsigned>(config.at("stages") * (block_n * head_dim + head_dim * block_n * v_bytes) + q_bytes);
}

std::string sm80_resources(const TileConfig& config, const Specialization& spec, const Target& target) {
  const SmLimits* limits = find_sm_limits(target);
  if (limits == nullptr) return missing_sm_limits(target);  // open-ended min_sm: an unlisted arch is not guessed at
  const int warps = config.at("warps"), min_blocks = config.at("min_blocks");
  // More resident CTAs than the SM holds warps for cannot be requested.
  if (min_blocks * warps > limits->warps_per_sm)
    return fmt::format("min_blocks {} x warps {} exceeds {} warps per SM on {}", min_blocks, warps,
                       limits->warps_per_sm, target.arch);
  // Each thread holds rows_per_warp / 16 x D / 8 x 4 output accumulators; past 128 (32 rows per warp at
  // D = 256) the scores, Q fragments and addresses no longer fit beside them in 255 registers.
  const int o_registers = config.at("rows_per_warp") / 16 * spec.head_dim / 8 * 4;
  if (o_registers > sm80_max_o_registers)
    return fmt::format("rows_per_warp {} at head_dim {} needs {} output registers per thread (> {}); use rows_per_warp 16",
                       config.at("rows_per_warp"), spec.head_dim, o_registers, sm80_max_o_registers);
  if (config.at("pv_fp16") == 0 && target.sm < 89)
    return fmt::format("fp8 PV (pv_fp16=0) needs sm_89+, target is {}", target.arch);
  const unsigned bytes = shared_bytes(config, spec.head_dim);
  if (bytes > limits->shared_per_block)
    return fmt::format("shared memory {} KiB > {} KiB per block on {}", bytes / 1024, limits->shared_per_block / 1024,
                       target.arch);
  return {};
}

LaunchGeometry sm80_geometry(int, const TileConfig& config, const Specialization& spec, const ProblemShape& shape) {
  const int warps = config.at("warps");
  return query_block_launch(shape, warps * config.at("rows_per_warp"), warps * 32, shared_bytes(config, spec.head_dim));
}

// The fp16-PV family reads V in key order; the fp8 family reads each group of 32 keys in the order
// that lets the S accumulator fragment serve as the e4m3 A operand.
VInput sm80_v_input(const TileConfig& config) {
  return config.at("pv_fp16") != 0 ? VInput{true, VOrder::natural} : VInput{false, VOrder::sm80_fp8_permuted};
}

}  // namespace

extern const KernelDesc attention_sm80_kernel{
    .name = "attention_sm80",
    .family = "attention",
    .source_path = "attention_sm80.cu",
    .entries = {"sj_attention_sm80"},
    .targets = {{.vendor = Vendor::nvidia, .min_sm = 80}},
    .specialized_on = spec_head_dim | spec_dtype | spec_causal | spec_write_lse | spec_key_mask,
    .params = {{"warps", {2, 4, 8}, 4, "SJ_WARPS"},
               {"rows_per_warp", {16, 32}, 16, "SJ_ROWS_PER_WARP"},
               {"block_n", {32, 64, 128}, 64, "SJ_BLOCK_N"},
               {"stages", {1, 2, 3}, 2, "SJ_STAGES"},
               {"pv_fp16", {0, 1}, 0, "SJ_PV_FP16"},
               {"min_blocks", {1, 2, 3, 4}, 1, "SJ_MIN_BLOCKS"},
               {"tma", {0}, 0, ""}},  // the sm_90 space's K/V loader switch of attention_sm90: cp.async only here
    .check_resources = sm80_resources,
    .geometry = sm80_geometry,
    .v_input = sm80_v_input,
};

}  // namespace sagejit
