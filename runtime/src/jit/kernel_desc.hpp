#pragma once
// A kernel is one source file in kernel_src/ plus this small, declarative descriptor: its tile
// parameters (name, allowed values, default, macro), the targets it builds for, the specialization
// it is compiled for, one resource check and its launch geometry. The JIT machinery
// (jit/kernel_config.hpp validates and turns a config into defines; render, cache, compile, load)
// is generic: nothing outside a descriptor knows a kernel's internals.
//
// The candidate space of tile parameters lives in the tuning tables (configs/<arch>.json, the
// autotuner's search space); a descriptor says which values exist and which combinations fit.
#include <cstddef>
#include <string>
#include <vector>

#include "core/kernel_inputs.hpp"  // kernel_head_dims, kernel_dtypes
#include "core/target.hpp"
#include "core/tile_config.hpp"
#include "device/device.hpp"
#include "sagejit/types.hpp"

namespace sagejit {

// The key order of the transposed V that prepare writes and an attention kernel reads.
enum class VOrder : int {
  natural = 0,          // keys in order
  sm80_fp8_permuted = 1 // within each group of 32 keys, sj_sm80_v_slot_of_key order (NVIDIA fp8 PV)
};

// How an attention kernel reads V for a config: the format prepare must write.
struct VInput {
  bool pv_fp16 = false;             // V as fp16 without a scale (NVIDIA fp16-PV family) instead of e4m3
  VOrder order = VOrder::natural;
  bool operator==(const VInput&) const = default;
};

// Compile-time properties of a call that select a code object (besides the tile config).
struct Specialization {
  int dtype = 0;         // sagejit::DType as int (bf16 0, fp16 1)
  int head_dim = 128;    // one of kernel_head_dims
  bool causal = false;
  bool write_lse = false;
  VInput v;              // the V format of the call (set by the attention plan from the attention kernel)
  bool key_mask = false; // a key mask (docs/NUMERICS.md "Key masks"): its SjKeyMask is the kernels' last argument
  bool operator==(const Specialization&) const = default;  // every field: the JIT's module lookup compares all
};

// Which Specialization fields a kernel is compiled for; each becomes a define.
enum SpecField : unsigned {
  spec_head_dim = 1u << 0,   // SJ_HEAD_DIM
  spec_dtype = 1u << 1,      // SJ_DTYPE
  spec_causal = 1u << 2,     // SJ_CAUSAL
  spec_write_lse = 1u << 3,  // SJ_WRITE_LSE
  spec_v_format = 1u << 4,   // SJ_PV_FP16, SJ_V_PERMUTE
  spec_key_mask = 1u << 5,   // SJ_KEY_MASK 1, defined only with a mask (a kernel without one renders as before masks)
};

// Sizes of one call, for launch geometry.
struct ProblemShape {
  int batch = 1, heads_q = 1, heads_kv = 1, seq_q = 1, seq_kv = 1;
};

// One tile parameter of a kernel.
struct KernelParam {
  std::string name;          // "block_n"
  std::vector<int> allowed;  // accepted values; empty: any integer
  int default_value = 0;     // taken when a config does not set it
  std::string macro;         // the define it becomes ("SJ_BLOCK_N"); empty: not passed to the source
};

// The targets a kernel builds for: a vendor, and optionally a minimum NVIDIA sm, an AMD family or a
// list of archs. An AMD kernel names its family ({amd, .amd_family = "gfx12"}), so a new processor of
// that family needs no edit here; `archs` is for a kernel that runs on exact archs only (sm_90a code).
struct TargetRule {
  Vendor vendor = Vendor::nvidia;
  int min_sm = 0;                  // NVIDIA: sm >= min_sm
  std::string amd_family = {};     // AMD: when not empty, Target::amd_family() must be this ("gfx12")
  std::vector<std::string> archs = {};  // when not empty: the arch must be one of these ("sm_90", "sm_90a")
};

// The largest second kernel argument a descriptor's extra_argument writes.
inline constexpr std::size_t kKernelExtraArgumentBytes = 512;

struct KernelDesc {
  std::string name;                  // unique: "attention_sm80", "attention_gfx12", "prepare"
  std::string family;                // what the dispatcher asks for: "attention" | "prepare" | ...
  std::string source_path;           // main file in kernel_src/, e.g. "attention_sm80.cu"
  std::vector<std::string> entries;  // extern "C" __global__ names the runtime looks up
  std::vector<TargetRule> targets;   // builds for a target matching any rule
  unsigned specialized_on = 0;       // SpecField bits
  std::vector<KernelParam> params;
  // The resource check (LDS, registers, shared memory, arch features) of a config whose names and
  // values are already valid and complete (defaults filled). Empty when it fits; else the reason.
  std::string (*check_resources)(const TileConfig& config, const Specialization& spec, const Target& target) = nullptr;
  // Grid and block of entry `entry` (index into `entries`) for a complete config and a problem.
  LaunchGeometry (*geometry)(int entry, const TileConfig& config, const Specialization& spec,
                             const ProblemShape& shape) = nullptr;
  // Attention kernels: how they read V for a complete config; null for other kernels.
  VInput (*v_input)(const TileConfig& config) = nullptr;
  // The config a specialization runs when a tuning table chose `config` (complete): a variant that
  // holds more live values than the tables' configs were chosen for narrows it (gfx12's key mask:
  // 16 rows per wave). The tables hold one config per problem for every specialization; this says
  // how a variant departs from it, once. Null: as chosen. Explicit configs are never narrowed (the
  // resource check accepts or refuses them as they are).
  TileConfig (*table_config_for)(const TileConfig& config, const Specialization& spec) = nullptr;
  // Kernels that take a second argument after their parameter struct (attention_sm90 with "tma": 1:
  // its tensor maps): writes it for one launch of a complete config into `out` (at most
  // kKernelExtraArgumentBytes, 64-byte aligned) from the launch's parameter struct `params`, and
  // returns its size; 0 when this config takes none. Null for kernels that never do.
  std::size_t (*extra_argument)(const Device& device, const TileConfig& config, const Specialization& spec,
                                const void* params, void* out) = nullptr;
  // When a family has several kernels for one target, the config picks: this kernel serves configs
  // whose parameter `config_switch` is non-zero ("wgmma": 1). A kernel with an empty switch serves
  // the configs that turn no other kernel's switch on.
  std::string config_switch = {};
  // Compiled for the arch-specific variant of an NVIDIA target ("sm_90" -> "sm_90a"), whose
  // instructions (wgmma) run on that exact arch only.
  bool arch_specific = false;
  // fp8 PV accumulated straight into the rescaled O through the matrix instruction's C operand
  // (docs/NUMERICS.md step 7, one-level) instead of a fresh per-tile sum added to it (two-level).
  bool pv_into_output = false;
  // The softmax in the fused form (docs/NUMERICS.md "Fused scores": the shifted running maximum, p
  // from one fma of the integer dot product), and the row sum l over the quantized p (step 6).
  bool fused_scores = false;
  bool sum_quantized_p = false;
};

}  // namespace sagejit
