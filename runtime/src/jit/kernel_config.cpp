#include "jit/kernel_config.hpp"

#include <algorithm>
#include <cctype>
#include <ranges>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace sagejit {

namespace {

bool rule_matches(const TargetRule& rule, const Target& target) {
  if (rule.vendor != target.vendor) return false;
  if (target.is_nvidia() && target.sm < rule.min_sm) return false;
  if (!rule.amd_family.empty() && target.amd_family() != rule.amd_family) return false;
  return rule.archs.empty() || std::find(rule.archs.begin(), rule.archs.end(), target.arch) != rule.archs.end();
}

std::string accepted_names(const KernelDesc& desc) {
  std::vector<std::string> names;
  for (const KernelParam& param : desc.params) names.push_back(param.name);
  std::sort(names.begin(), names.end());
  return names.empty() ? std::string("none") : fmt::format("{}", fmt::join(names, ", "));
}

std::string describe_targets(const KernelDesc& desc) {
  std::vector<std::string> parts;
  for (const TargetRule& rule : desc.targets) {
    if (!rule.archs.empty()) parts.push_back(fmt::format("{}", fmt::join(rule.archs, ", ")));
    else if (!rule.amd_family.empty()) parts.push_back(fmt::format("the AMD {} family", rule.amd_family));
    else if (rule.min_sm > 0) parts.push_back(fmt::format("sm_{}+", rule.min_sm));
    else parts.push_back(fmt::format("any {} target", to_string(rule.vendor)));
  }
  return fmt::format("{}", fmt::join(parts, "; "));
}

}  // namespace

bool kernel_supports(const KernelDesc& desc, const Target& target) {
  return std::any_of(desc.targets.begin(), desc.targets.end(),
                     [&](const TargetRule& rule) { return rule_matches(rule, target); });
}

bool kernel_supports(const KernelDesc& desc, std::string_view target) {
  const auto parsed = try_parse_target(target);
  return parsed && kernel_supports(desc, *parsed);
}

TileConfig complete_config(const KernelDesc& desc, const TileConfig& config) {
  TileConfig complete = config;
  for (const KernelParam& param : desc.params) complete.emplace(param.name, param.default_value);
  return complete;
}

std::string check_kernel_config(const KernelDesc& desc, const TileConfig& config, const Specialization& spec,
                                const Target& target) {
  for (const auto& [name, value] : config) {
    const auto param = std::find_if(desc.params.begin(), desc.params.end(),
                                    [&](const KernelParam& p) { return p.name == name; });
    if (param == desc.params.end())
      return fmt::format("unknown {} parameter \"{}\" (accepted: {})", desc.name, name, accepted_names(desc));
    if (!param->allowed.empty() && std::find(param->allowed.begin(), param->allowed.end(), value) == param->allowed.end())
      return fmt::format("{} {} is not one of [{}]", name, value, fmt::join(param->allowed, ", "));
  }
  if (!kernel_supports(desc, target))
    return fmt::format("target {} is not one {} builds for ({})", target.full, desc.name, describe_targets(desc));
  if ((desc.specialized_on & spec_head_dim) != 0 && !is_kernel_head_dim(spec.head_dim))
    return fmt::format("head_dim {} is not one of {}", spec.head_dim, kernel_head_dims_text());
  if ((desc.specialized_on & spec_dtype) != 0 && !is_kernel_dtype(spec.dtype))
    return fmt::format("dtype {} is not one of {} (as int: {})", spec.dtype, kernel_dtypes_text(),
                       fmt::join(kernel_dtypes | std::views::transform([](DType d) { return static_cast<int>(d); }), ", "));
  if (spec.key_mask && (desc.specialized_on & spec_key_mask) == 0)
    return fmt::format("{} has no key-mask variant (SJ_KEY_MASK)", desc.name);
  if (desc.check_resources != nullptr) return desc.check_resources(complete_config(desc, config), spec, target);
  return {};
}

std::string check_kernel_config(const KernelDesc& desc, const TileConfig& config, const Specialization& spec,
                                std::string_view target) {
  const auto parsed = try_parse_target(target);
  if (!parsed) return fmt::format("\"{}\" is not a target (e.g. sm_90, gfx1201)", target);
  return check_kernel_config(desc, config, spec, *parsed);
}

Defines kernel_defines(const KernelDesc& desc, const TileConfig& config, const Specialization& spec) {
  Defines defines;
  const auto flag = [](bool value) { return std::string(value ? "1" : "0"); };
  if ((desc.specialized_on & spec_head_dim) != 0) defines.emplace_back("SJ_HEAD_DIM", std::to_string(spec.head_dim));
  if ((desc.specialized_on & spec_dtype) != 0) defines.emplace_back("SJ_DTYPE", std::to_string(spec.dtype));
  if ((desc.specialized_on & spec_causal) != 0) defines.emplace_back("SJ_CAUSAL", flag(spec.causal));
  if ((desc.specialized_on & spec_write_lse) != 0) defines.emplace_back("SJ_WRITE_LSE", flag(spec.write_lse));
  if ((desc.specialized_on & spec_key_mask) != 0 && spec.key_mask) defines.emplace_back("SJ_KEY_MASK", "1");
  if ((desc.specialized_on & spec_v_format) != 0) {
    defines.emplace_back("SJ_PV_FP16", flag(spec.v.pv_fp16));
    defines.emplace_back("SJ_V_PERMUTE", std::to_string(static_cast<int>(spec.v.order)));
  }
  const TileConfig complete = complete_config(desc, config);
  for (const KernelParam& param : desc.params)
    if (!param.macro.empty()) defines.emplace_back(param.macro, std::to_string(complete.at(param.name)));
  return defines;
}

std::string kernel_compile_target(const KernelDesc& desc, const Target& target) {
  // An NVIDIA arch with a suffix ("sm_90a", "sm_100f") is already a specific variant.
  if (!desc.arch_specific || !target.is_nvidia() || !std::isdigit(static_cast<unsigned char>(target.arch.back())))
    return target.full;
  return target.arch + "a";
}

LaunchGeometry kernel_geometry(const KernelDesc& desc, int entry, const TileConfig& config, const Specialization& spec,
                               const ProblemShape& shape) {
  // On every launch: the config is already complete (the plan's), so it is not copied again here.
  return desc.geometry != nullptr ? desc.geometry(entry, config, spec, shape) : LaunchGeometry{};
}

VInput kernel_v_input(const KernelDesc& desc, const TileConfig& config) {
  return desc.v_input != nullptr ? desc.v_input(complete_config(desc, config)) : VInput{};
}

TileConfig kernel_table_config(const KernelDesc& desc, const TileConfig& config, const Specialization& spec) {
  const TileConfig complete = complete_config(desc, config);
  return desc.table_config_for != nullptr ? desc.table_config_for(complete, spec) : complete;
}

}  // namespace sagejit
