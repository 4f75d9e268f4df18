#pragma once
// Every kernel the library knows, as an explicit list (no static-initialisation self-registration:
// the order is deterministic and a descriptor cannot be dropped by the linker), and the one place
// that resolves a family + target + config to a kernel. The list is generated at build time from
// the descriptors of kernels/*_desc.cpp (cmake/KernelList.cmake), in file name order.
#include <string>
#include <string_view>
#include <vector>

#include "jit/kernel_desc.hpp"

namespace sagejit {

// Defined in the generated kernel_list.cpp: every `extern const KernelDesc <name>{` of kernels/*_desc.cpp.
const std::vector<const KernelDesc*>& all_kernels();

// The kernel of `family` ("attention", "prepare", "jit_probe") that builds for `target` ("sm_90",
// "gfx1201"; feature suffixes are ignored), without a config switch. Throws Error(invalid_argument)
// for an unknown family, Error(unsupported) naming the target and the family's kernels.
const KernelDesc& find_kernel(std::string_view family, std::string_view target);

// The same, choosing among the family's kernels for the target by the config's switch parameters
// (KernelDesc::config_switch): the kernel whose switch is non-zero in `config`, else the one without
// a switch. Throws Error(unsupported) when the switched-on kernel does not build for the target.
const KernelDesc& find_kernel(std::string_view family, std::string_view target, const TileConfig& config);

// True when `desc` is the kernel of its family that `config` selects (see find_kernel above).
bool kernel_serves_config(const KernelDesc& desc, const TileConfig& config);

// `config` as `desc` reads it: without the switch parameters of the family's other kernels (which
// select a kernel and mean nothing to this one), so a switched variant needs no entry in the
// descriptors of its siblings.
TileConfig kernel_config_of(const KernelDesc& desc, const TileConfig& config);

// True when `family` has a kernel for `target`.
bool family_supports(std::string_view family, std::string_view target);

// By unique name ("attention_sm80"); throws Error(invalid_argument) listing the known names.
const KernelDesc& kernel_by_name(std::string_view name);

// The small self-test kernel (kernel_src/jit_probe.cu): config {"block": 64|128|256, "scale": int}.
extern const KernelDesc jit_probe_kernel;

}  // namespace sagejit
