// Descriptors of the matrix-instruction layout probes (kernel_src/probe_gfx12.hip,
// kernel_src/probe_sm80.cu) that sagejit-selftest runs before anything else. Family "probe"; no tile
// parameters; one wave/warp.
#include <charconv>

#include <fmt/format.h>

#include "kernels/registry.hpp"

namespace sagejit {
namespace {

bool gfx12_supports(const std::string& target) { return target.rfind("gfx12", 0) == 0; }

// e4m3 mma.sync exists from sm_89 on.
bool sm89_supports(const std::string& target) {
  if (target.rfind("sm_", 0) != 0) return false;
  int sm = 0;
  const auto [end, error] = std::from_chars(target.data() + 3, target.data() + target.size(), sm);
  return error == std::errc() && end != target.data() + 3 && sm >= 89;
}

std::string no_parameters(const TileConfig& config, const Specialization&, const std::string&) {
  if (!config.empty()) return fmt::format("the layout probe takes no tile parameters (got \"{}\")", config.begin()->first);
  return {};
}

std::vector<std::pair<std::string, std::string>> no_defines(const TileConfig&, const Specialization&) { return {}; }

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
    .entries = {"sj_probe_gfx12"},
    .supports_target = gfx12_supports,
    .check_config = no_parameters,
    .defines = no_defines,
    .geometry = one_wave,
};

extern const KernelDesc probe_sm80_kernel{
    .name = "probe_sm80",
    .family = "probe",
    .source_path = "probe_sm80.cu",
    .entries = {"sj_probe_sm80"},
    .supports_target = sm89_supports,
    .check_config = no_parameters,
    .defines = no_defines,
    .geometry = one_wave,
};

}  // namespace sagejit
