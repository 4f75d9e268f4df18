#pragma once
// Descriptor of kernel_src/attention_gfx12.hip (RDNA4 wave32 WMMA: iu8 QK^T, fp8 PV) and the
// per-config figures it derives (LDS bytes, VGPR estimate, WMMA counts), which the resource check, the
// ISA test and docs/RDNA4.md use.
#include "jit/kernel_desc.hpp"

namespace sagejit {

extern const KernelDesc attention_gfx12_kernel;

// The targets of the gfx12 kernels (this one and the layout probe): the RDNA4 family, so a new
// processor of that family needs only its tuning table (configs/<arch>.json).
inline const TargetRule gfx12_targets{.vendor = Vendor::amd, .amd_family = "gfx12"};

// Tile parameters of one gfx12 attention config (the "attention" params of configs/gfx12*.json).
// Allowed values and defaults: the descriptor's params (attention_gfx12_desc.cpp).
struct Gfx12AttentionTile {
  int waves = 0;          // waves (of 32 lanes) per workgroup
  int rows_per_wave = 0;  // query rows per wave (1 or 2 WMMA column blocks)
  int block_n = 0;        // keys per LDS tile
  int stages = 0;         // LDS buffers for K/V tiles
};

// Missing parameters take the descriptor's defaults; unknown names are ignored here (check_kernel_config reports them).
Gfx12AttentionTile gfx12_attention_tile(const TileConfig& config);

struct Gfx12AttentionFigures {
  int threads = 0;             // workgroup size
  int rows_per_group = 0;      // query rows per workgroup
  unsigned lds_bytes = 0;      // static LDS of the kernel (exact: the compiler reports the same)
  int vgpr_estimate = 0;       // registers per lane, an upper estimate (see the .cpp)
  int qk_wmma_per_tile = 0;    // v_wmma_i32_16x16x16_iu8 per key tile per wave
  int pv_wmma_per_tile = 0;    // v_wmma_f32_16x16x16_fp8_fp8 per key tile per wave
};

Gfx12AttentionFigures gfx12_attention_figures(const Gfx12AttentionTile& tile, int head_dim);

// Query rows per wave of the key-mask variant (SJ_KEY_MASK): its biased scores and the biases' selects
// keep more values live per score than the unmasked fused form, and at 32 rows per wave hipRTC 6.4
// spills (12-36 B of scratch) and exceeds the VGPR estimate. A table's config runs masked calls at
// this many rows per wave (KernelDesc::table_config_for); the resource check refuses more.
inline constexpr int gfx12_key_mask_rows_per_wave = 16;

// Limits of one gfx12 workgroup that its resource check enforces.
inline constexpr unsigned gfx12_lds_limit_bytes = 64 * 1024;
inline constexpr int gfx12_vgpr_limit = 256;

}  // namespace sagejit
