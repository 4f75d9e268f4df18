// Descriptors of the matrix-instruction layout probes (kernel_src/probe_gfx12.hip,
// kernel_src/probe_sm80.cu) that sagejit-selftest runs before anything else. Family "probe"; no tile
// parameters; one wave/warp. The gfx12 probe builds for the gfx12 attention kernel's targets.
#include "kernels/attention_gfx12_desc.hpp"

namespace sagejit {
namespace {

LaunchGeometry one_wave(int, const TileConfig&, const Specialization&, const ProblemShape&) {
  LaunchGeometry geometry;
  geometry.block = {32, 1, 1};
  return geometry;
}

}  // namespace

extern const KernelDesc probe_gfx12_kernel{
    .name = "probe_gfx12",
    .family = "probe",
    .source_path = "probe_gfx12.hip",
    .entries = {"sj_probe_gfx12", "sj_probe_gfx12_fp8_accumulation"},
    .targets = {gfx12_targets},
    .geometry = one_wave,
};

extern const KernelDesc probe_sm80_kernel{
    .name = "probe_sm80",
    .family = "probe",
    .source_path = "probe_sm80.cu",
    .entries = {"sj_probe_sm80"},
    .targets = {{.vendor = Vendor::nvidia, .min_sm = 89}},  // e4m3 mma.sync exists from sm_89 on
    .geometry = one_wave,
};

}  // namespace sagejit
