// Descriptor of kernel_src/attention_sm90.cu (warpgroup MMA; NVIDIA Hopper, compiled for sm_90a).
// Selected by the config switch "wgmma": 1 in the tuning tables (configs/sm_90.json); it shares the
// attention config space of sm_90 with attention_sm80:
//   warps        4 | 8 | 12 (one to three warpgroups; BLOCK_M = 16 * warps; with tma 1, three
//                         warpgroups release a K/V stage by counting instead of a CTA barrier)
//   rows_per_warp 16     (a warpgroup's m64 tile is 16 rows per warp)
//   block_n      64 | 128
//   stages       2 | 3
//   pv_fp16      0       (PV in native e4m3)
//   min_blocks   1..5    (CTAs per SM requested through __launch_bounds__; the registers this caps
//                         must hold the accumulators of the head dim and tile, sm90_resources)
//   tma          0 | 1   (K and V tiles by cp.async from every thread, or by the tensor copy engine:
//                         thread 0 issues two copies per tile on the stage's mbarrier; the tensor
//                         maps are the kernel's second argument, encoded here for each launch)
#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "arch/wgmma_sm90.h"
#include "common/params.h"
#include "kernels/launch_shapes.hpp"
#include "kernels/nvidia_sm_limits.hpp"

namespace sagejit {
namespace {

constexpr int sm90_max_head_dim = 128;

unsigned shared_bytes(const TileConfig& config, int head_dim) {
  const int q_bytes = config.at("warps") * 16 * head_dim;
  const int stage_bytes = 2 * config.at("block_n") * head_dim;  // int8 K tile + e4m3 V tile
  return static_cast<unsigned>(1024 + q_bytes + config.at("stages") * stage_bytes);  // + 1 KiB to align to 1 KiB
}

std::string sm90_resources(const TileConfig& config, const Specialization& spec, const Target& target) {
  const SmLimits* limits = find_sm_limits(target);
  if (limits == nullptr) return missing_sm_limits(target);
  // Two-level PV keeps O and a fresh PV accumulator of the same size (D / 2 registers each per
  // thread), and K/Q rows of more than 128 bytes exceed the largest wgmma swizzle (128B): head dims
  // above 128 run attention_sm80 on sm_90 (configs/sm_90.json has their entries with "wgmma": 0).
  if (spec.head_dim > sm90_max_head_dim)
    return fmt::format("head_dim {} > {}: the wgmma kernel holds O and the PV accumulator in D registers per thread "
                       "and reads rows of at most 128 bytes; use wgmma=0 (attention_sm80)",
                       spec.head_dim, sm90_max_head_dim);
  const int warps = config.at("warps"), min_blocks = config.at("min_blocks");
  // The register file shared by min_blocks CTAs must hold what is live per thread: O (D / 2), then
  // either the score accumulators (BLOCK_N / 2) or the fresh PV accumulator (D / 2), the packed P
  // (BLOCK_N / 8) and ~24 for addresses and the softmax state; below that ptxas spills heavily (NVRTC 13:
  // 168 at D = 128 / BLOCK_N 128 spills 8-52 bytes, which the shipped config accepts; D = 64 /
  // BLOCK_N 64 needs 95, so five CTAs per SM fit).
  const int register_cap = limits->registers_per_sm / (min_blocks * warps * 32);
  const int head_dim = spec.head_dim, block_n = config.at("block_n");
  const int register_need = head_dim / 2 + std::max(head_dim / 2, block_n / 2) + block_n / 8 + 24;
  if (register_cap < register_need)
    return fmt::format("min_blocks {} x warps {} caps registers at {} per thread (< {} for head_dim {}, block_n {})",
                       min_blocks, warps, register_cap, register_need, head_dim, block_n);
  // min_blocks CTAs resident at once: each takes its shared memory plus the system's reserve; with tma
  // the stages' mbarriers are static shared memory, which ptxas pads to 1 KiB because the dynamic
  // tiles that follow are declared 1 KiB-aligned.
  const unsigned bytes = shared_bytes(config, spec.head_dim) + (config.at("tma") != 0 ? 1024u : 0u);
  if ((bytes + limits->reserved_per_block) * static_cast<unsigned>(min_blocks) > limits->shared_per_sm)
    return fmt::format("shared memory {} KiB (+{} KiB reserved) x min_blocks {} > {} KiB per SM", bytes / 1024,
                       limits->reserved_per_block / 1024, min_blocks, limits->shared_per_sm / 1024);
  return {};
}

// With "tma": 1, the K and V tensor maps (arch/wgmma_sm90.h, SjSm90TensorMaps) of this launch.
std::size_t sm90_tensor_maps(const Device& device, const TileConfig& config, const Specialization& spec,
                             const void* params, void* out) {
  if (config.at("tma") == 0) return 0;
  static_assert(sizeof(SjSm90TensorMaps) <= kKernelExtraArgumentBytes && alignof(SjSm90TensorMaps) <= 64);
  static_assert(sizeof(SjSm90TensorMaps::k) == kTensorMapBytes && sizeof(SjSm90TensorMaps::v) == kTensorMapBytes);
  const auto& p = *static_cast<const SjAttentionParams*>(params);
  const unsigned long long d = static_cast<unsigned long long>(spec.head_dim);
  const unsigned long long keys = static_cast<unsigned long long>(p.seq_kv_pad);
  const unsigned long long heads = static_cast<unsigned long long>(p.batch) * static_cast<unsigned long long>(p.heads_kv);
  const unsigned block_n = static_cast<unsigned>(config.at("block_n"));
  SjSm90TensorMaps maps;
  // K: int8 [B * Hk][Nk_pad][D]; one box = BLOCK_N keys of one head.
  TensorMapRequest k{.base = p.k8, .rank = 3, .sizes = {d, keys, heads}, .strides = {d, d * keys},
                     .box = {static_cast<unsigned>(d), block_n, 1}, .swizzle_bytes = sj_sm90_swizzle_bytes(spec.head_dim)};
  // V: e4m3 [B * Hk][D][Nk_pad]; one box = D channels of BLOCK_N keys.
  TensorMapRequest v{.base = p.v_quant, .rank = 3, .sizes = {keys, d, heads}, .strides = {keys, keys * d},
                     .box = {block_n, static_cast<unsigned>(d), 1}, .swizzle_bytes = sj_sm90_swizzle_bytes(static_cast<int>(block_n))};
  device.encode_tensor_map(k, maps.k);
  device.encode_tensor_map(v, maps.v);
  std::memcpy(out, &maps, sizeof(maps));
  return sizeof(maps);
}

// The tables' three-warpgroup configs were measured on unmasked calls only, and that form's masked
// path has been checked less (test_gpu_key_mask with an explicit three-warpgroup config, on an H100;
// not the varlen tests nor compute-sanitizer): a masked call of such a table entry runs the
// one-warpgroup form at three CTAs per SM, which every masked GPU test and the sanitizer runs cover.
TileConfig sm90_table_config_for(const TileConfig& config, const Specialization& spec) {
  TileConfig fitted = config;
  if (spec.key_mask && fitted.at("warps") == 12) {
    fitted["warps"] = 4;
    fitted["min_blocks"] = 3;
  }
  return fitted;
}

LaunchGeometry sm90_geometry(int, const TileConfig& config, const Specialization& spec, const ProblemShape& shape) {
  const int warps = config.at("warps");
  return query_block_launch(shape, warps * 16, warps * 32, shared_bytes(config, spec.head_dim));
}

}  // namespace

extern const KernelDesc attention_sm90_kernel{
    .name = "attention_sm90",
    .family = "attention",
    .source_path = "attention_sm90.cu",
    .entries = {"sj_attention_sm90"},
    // sm_90a code runs on sm_90 only: the "a" features do not carry over to later architectures.
    .targets = {{.vendor = Vendor::nvidia, .archs = {"sm_90", "sm_90a"}}},
    .specialized_on = spec_head_dim | spec_dtype | spec_causal | spec_write_lse | spec_key_mask,
    .params = {{"warps", {4, 8, 12}, 4, "SJ_WARPS"},
               {"rows_per_warp", {16}, 16, ""},
               {"block_n", {64, 128}, 128, "SJ_BLOCK_N"},
               {"stages", {2, 3}, 2, "SJ_STAGES"},
               {"pv_fp16", {0}, 0, ""},
               {"min_blocks", {1, 2, 3, 4, 5}, 1, "SJ_MIN_BLOCKS"},
               {"wgmma", {1}, 1, ""},
               {"tma", {0, 1}, 0, "SJ_TMA"}},
    .check_resources = sm90_resources,
    .geometry = sm90_geometry,
    // e4m3 V in the sm80 kernel's permuted key order (the wgmma kernel reads the same prepare output).
    .v_input = [](const TileConfig&) { return VInput{false, VOrder::sm80_fp8_permuted}; },
    .table_config_for = sm90_table_config_for,  // masked calls: one warpgroup per CTA
    .extra_argument = sm90_tensor_maps,
    .config_switch = "wgmma",
    .arch_specific = true,
};

}  // namespace sagejit
