#include "kernels/registry.hpp"

#include "core/error.hpp"
#include "jit/kernel_config.hpp"

namespace sagejit {

// all_kernels() is generated from the descriptors (kernels/*_desc.cpp) by cmake/KernelList.cmake.

namespace {

// True when `config` turns on `desc`'s config switch (never for a kernel without one).
bool switch_is_on(const KernelDesc& desc, const TileConfig& config) {
  if (desc.config_switch.empty()) return false;
  const auto it = config.find(desc.config_switch);
  return it != config.end() && it->second != 0;
}

}  // namespace

const KernelDesc& find_kernel(std::string_view family, std::string_view target) {
  const std::string arch(target_arch(target));
  std::string families;
  std::string targets_note;
  bool family_known = false;
  for (const KernelDesc* desc : all_kernels()) {
    if (families.find(desc->family) == std::string::npos) families += (families.empty() ? "" : ", ") + desc->family;
    if (desc->family != family) continue;
    family_known = true;
    if (!desc->config_switch.empty()) continue;  // chosen only by its config switch
    if (kernel_supports(*desc, target)) return *desc;
    targets_note += (targets_note.empty() ? "" : ", ") + desc->name;
  }
  if (!family_known) fail(ErrorCode::invalid_argument, "kernel family \"{}\" is not one of [{}]", family, families);
  fail(ErrorCode::unsupported, "no {} kernel supports target {} (kernels of this family: {})", family, arch,
       targets_note);
}

const KernelDesc& find_kernel(std::string_view family, std::string_view target, const TileConfig& config) {
  for (const KernelDesc* desc : all_kernels()) {
    if (desc->family != family || !switch_is_on(*desc, config)) continue;
    if (!kernel_supports(*desc, target))
      fail(ErrorCode::unsupported, "config {} selects kernel {} ({}=1), which does not support target {}",
           config_id(config), desc->name, desc->config_switch, target_arch(target));
    return *desc;
  }
  return find_kernel(family, target);
}

TileConfig kernel_config_of(const KernelDesc& desc, const TileConfig& config) {
  TileConfig own = config;
  for (const KernelDesc* other : all_kernels())
    if (other != &desc && other->family == desc.family && !other->config_switch.empty() &&
        other->config_switch != desc.config_switch)
      own.erase(other->config_switch);
  return own;
}

bool family_supports(std::string_view family, std::string_view target) {
  for (const KernelDesc* desc : all_kernels())
    if (desc->family == family && kernel_supports(*desc, target)) return true;
  return false;
}

bool kernel_serves_config(const KernelDesc& desc, const TileConfig& config) {
  if (!desc.config_switch.empty()) return switch_is_on(desc, config);
  for (const KernelDesc* other : all_kernels())
    if (other->family == desc.family && switch_is_on(*other, config)) return false;
  return true;
}

const KernelDesc& kernel_by_name(std::string_view name) {
  std::string names;
  for (const KernelDesc* desc : all_kernels()) {
    if (desc->name == name) return *desc;
    names += (names.empty() ? "" : ", ") + desc->name;
  }
  fail(ErrorCode::invalid_argument, "kernel \"{}\" is not one of [{}]", name, names);
}

}  // namespace sagejit
