// Descriptor of kernel_src/jit_probe.cu, the trivial kernel used by the JIT self-tests and the cache
// benchmark (it builds with every compiler for every target).
#include <fmt/format.h>

#include "kernels/registry.hpp"

namespace sagejit {
namespace {

bool probe_supports(const std::string& target) {
  return target.rfind("sm_", 0) == 0 || target.rfind("gfx", 0) == 0;
}

int value_or(const TileConfig& config, const char* name, int fallback) {
  const auto it = config.find(name);
  return it == config.end() ? fallback : it->second;
}

std::string probe_check(const TileConfig& config, const Specialization&, const std::string&) {
  for (const auto& [name, value] : config)
    if (name != "block" && name != "scale") return fmt::format("unknown parameter \"{}\" (accepted: block, scale)", name);
  const int block = value_or(config, "block", 128);
  if (block != 64 && block != 128 && block != 256) return fmt::format("block {} is not one of [64, 128, 256]", block);
  return {};
}

std::vector<std::pair<std::string, std::string>> probe_defines(const TileConfig& config, const Specialization&) {
  return {{"SJ_PROBE_BLOCK", std::to_string(value_or(config, "block", 128))},
          {"SJ_PROBE_SCALE", std::to_string(value_or(config, "scale", 2))}};
}

}  // namespace

extern const KernelDesc jit_probe_kernel{
    .name = "jit_probe",
    .family = "jit_probe",
    .source_path = "jit_probe.cu",
    .entries = {"sagejit_probe_axpy"},
    .supports_target = probe_supports,
    .check_config = probe_check,
    .defines = probe_defines,
};

}  // namespace sagejit
