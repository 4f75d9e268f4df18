#pragma once
// The generic half of every descriptor: validating a tile config against the declared parameters,
// the targets and the specialization, filling defaults, and turning it into compile-time defines.
// Descriptors only declare (jit/kernel_desc.hpp); every check and message lives here once.
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "jit/kernel_desc.hpp"

namespace sagejit {

using Defines = std::vector<std::pair<std::string, std::string>>;

// True when a TargetRule of `desc` matches (suffixes like ":xnack-" do not matter).
bool kernel_supports(const KernelDesc& desc, const Target& target);
// The same for a target string; false for a string that is no target.
bool kernel_supports(const KernelDesc& desc, std::string_view target);

// Empty when `config` is valid for `spec` on `target`: known parameter names, allowed values, a
// supported target, a kernel head dim and dtype, and the descriptor's resource check. Otherwise the
// reason, naming the parameter and the accepted values.
std::string check_kernel_config(const KernelDesc& desc, const TileConfig& config, const Specialization& spec,
                                const Target& target);
std::string check_kernel_config(const KernelDesc& desc, const TileConfig& config, const Specialization& spec,
                                std::string_view target);

// `config` with every declared parameter present (defaults filled). Unknown names are kept (so
// check_kernel_config still reports them).
TileConfig complete_config(const KernelDesc& desc, const TileConfig& config);

// The defines of a config + specialization: the specialization fields the kernel is compiled for
// (SJ_HEAD_DIM, SJ_DTYPE, SJ_CAUSAL, SJ_WRITE_LSE, SJ_PV_FP16 and SJ_V_PERMUTE), then each
// parameter's macro with its (complete) value.
Defines kernel_defines(const KernelDesc& desc, const TileConfig& config, const Specialization& spec);

// The compiler target: `target` itself, or its arch-specific variant for an arch_specific kernel
// ("sm_90" -> "sm_90a").
std::string kernel_compile_target(const KernelDesc& desc, const Target& target);

// Launch geometry of entry `entry` for a complete config (complete_config; the plan's configs are);
// a kernel without geometry gets one block of 1.
LaunchGeometry kernel_geometry(const KernelDesc& desc, int entry, const TileConfig& config, const Specialization& spec,
                               const ProblemShape& shape);

// How an attention kernel reads V for `config` (defaults filled); {fp8, natural} for a kernel that
// declares nothing.
VInput kernel_v_input(const KernelDesc& desc, const TileConfig& config);

// The config `spec` runs when a tuning table chose `config` (KernelDesc::table_config_for; complete).
TileConfig kernel_table_config(const KernelDesc& desc, const TileConfig& config, const Specialization& spec);

}  // namespace sagejit
