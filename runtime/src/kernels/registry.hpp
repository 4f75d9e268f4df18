#pragma once
// Every kernel the library knows, as an explicit list (no static-initialisation self-registration:
// the order is deterministic and a descriptor cannot be dropped by the linker).
#include <string>
#include <string_view>
#include <vector>

#include "kernels/kernel_desc.hpp"

namespace sagejit {

const std::vector<const KernelDesc*>& all_kernels();

// The kernel of `family` ("attention", "prepare", "jit_probe") that supports `target` ("sm_90",
// "gfx1201"; feature suffixes are ignored). Throws Error(unsupported) naming the family, the target and
// the targets/families that exist.
const KernelDesc& find_kernel(std::string_view family, const std::string& target);

// By unique name ("attention_sm80"); throws Error(invalid_argument) listing the known names.
const KernelDesc& kernel_by_name(std::string_view name);

// The small self-test kernel (kernel_src/jit_probe.cu): config {"block": 64|128|256, "scale": int}.
extern const KernelDesc jit_probe_kernel;

}  // namespace sagejit
