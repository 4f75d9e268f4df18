#pragma once
// A kernel is one source file in kernel_src/ plus this small descriptor. The JIT machinery (render,
// cache, compile, load, launch) is generic: nothing outside a descriptor knows a kernel's internals.
//
// The candidate space of tile parameters lives in the tuning tables (configs/<arch>.json, the
// autotuner's search space); a descriptor says which combinations are valid for a problem, how they
// become compile-time defines, and the launch geometry.
#include <map>
#include <string>
#include <vector>

#include "core/tile_config.hpp"
#include "device/device.hpp"

namespace sagejit {

// Compile-time properties of a call that select a code object (besides the tile config).
struct Specialization {
  int dtype = 0;         // sagejit::DType as int (bf16 0, fp16 1)
  int head_dim = 128;    // 64 | 128
  bool causal = false;
  bool write_lse = false;
  bool smooth_k = true;
  bool pv_fp16 = false;  // PV in fp16 (NVIDIA config family) instead of fp8
  std::string target;    // "sm_90", "gfx1201": arch-specific code paths (e.g. V key order) key on it
};

// Sizes of one call, for launch geometry.
struct ProblemShape {
  int batch = 1, heads_q = 1, heads_kv = 1, seq_q = 1, seq_kv = 1;
};

struct KernelDesc {
  std::string name;         // unique: "attention_sm80", "attention_gfx12", "prepare"
  std::string family;       // what the dispatcher asks for: "attention" | "prepare"
  std::string source_path;  // main file in kernel_src/, e.g. "attention_sm80.cu"
  std::vector<std::string> entries;  // extern "C" __global__ names the runtime looks up
  // True when this kernel can be built for the target ("sm_89", "sm_90", "gfx1201", "gfx1200", ...).
  bool (*supports_target)(const std::string& target) = nullptr;
  // Empty when the config is valid for the specialization; otherwise the reason (e.g. "LDS 72 KiB > 64 KiB").
  std::string (*check_config)(const TileConfig& config, const Specialization& spec,
                              const std::string& target) = nullptr;
  // Compile-time defines (-DNAME=VALUE without the -D) for config + specialization.
  std::vector<std::pair<std::string, std::string>> (*defines)(const TileConfig& config,
                                                              const Specialization& spec) = nullptr;
  // Grid and block of entry `entry` (index into `entries`) for a problem.
  LaunchGeometry (*geometry)(int entry, const TileConfig& config, const Specialization& spec,
                             const ProblemShape& shape) = nullptr;
  // When a family has several kernels for one target, the config picks: this kernel serves configs
  // whose parameter `config_switch` is non-zero ("wgmma": 1). A kernel with an empty switch serves
  // the configs that turn no other kernel's switch on.
  std::string config_switch = {};
  // The compiler target for a device target, when the kernel needs an arch-specific variant
  // ("sm_90" -> "sm_90a" for wgmma); null: the device target itself.
  std::string (*compile_target)(const std::string& target) = nullptr;
};

}  // namespace sagejit
