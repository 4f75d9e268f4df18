// Descriptor of kernel_src/jit_probe.cu, the trivial kernel used by the JIT self-tests and the cache
// benchmark (it builds with every compiler for every target).
#include "kernels/registry.hpp"

namespace sagejit {

extern const KernelDesc jit_probe_kernel{
    .name = "jit_probe",
    .family = "jit_probe",
    .source_path = "jit_probe.cu",
    .entries = {"sagejit_probe_axpy"},
    .targets = {{.vendor = Vendor::nvidia}, {.vendor = Vendor::amd}},
    .params = {{"block", {64, 128, 256}, 128, "SJ_PROBE_BLOCK"}, {"scale", {}, 2, "SJ_PROBE_SCALE"}},
};

}  // namespace sagejit
