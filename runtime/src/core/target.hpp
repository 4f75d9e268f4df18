#pragma once
// A GPU target, parsed once: which vendor, which arch, which features. Every layer asks a Target
// instead of splitting or prefix-matching target strings itself ("sm_" / "gfx" / ':' appear only in
// core/target.cpp).
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sagejit {

enum class Vendor : int { nvidia = 0, amd = 1 };
std::string_view to_string(Vendor vendor) noexcept;

struct Target {
  Vendor vendor = Vendor::nvidia;
  std::string arch;                   // processor without feature suffixes: "sm_90", "sm_90a", "gfx1201"
  std::string full;                   // as given, feature suffixes kept: "gfx1201:sramecc-:xnack-"
  int sm = 0;                         // NVIDIA compute capability: "sm_90a" -> 90; 0 on AMD
  std::vector<std::string> features;  // AMD feature suffixes in order: {"sramecc-", "xnack-"}

  bool is_nvidia() const noexcept { return vendor == Vendor::nvidia; }
  bool is_amd() const noexcept { return vendor == Vendor::amd; }
  // The AMD family: the processors that share one instruction set, so one kernel source serves them
  // all. "gfx1201" -> "gfx12", "gfx942" -> "gfx9", "gfx1151" -> "gfx11"; "gfx1250" -> "gfx12.5" (see
  // target.cpp); empty on NVIDIA. Kernel descriptors name the family they build for (TargetRule).
  std::string amd_family() const;
  bool operator==(const Target&) const = default;
};

// "sm_90", "sm_90a", "sm_100f": sm_ + 2-3 digits + optional a/f suffix.
bool is_nvidia_target(std::string_view text) noexcept;
// "gfx1201", "gfx90a", "gfx942:sramecc+:xnack-": gfx + hex digits + optional ":feature+/-" suffixes,
// the features being those of an AMDGPU target ID (sramecc, xnack).
bool is_amd_target(std::string_view text) noexcept;

// The part before the first ':' ("gfx1201:xnack-" -> "gfx1201"): the one place a suffix is cut off.
std::string_view target_arch(std::string_view text) noexcept;

// nullopt when `text` is neither form above.
std::optional<Target> try_parse_target(std::string_view text);
// Throws Error(invalid_argument) naming `text` and the accepted forms.
Target parse_target(std::string_view text);

// Throw Error(invalid_argument) naming `who` (a compiler, an option), the target and the accepted form.
void require_nvidia_target(std::string_view who, std::string_view text);
void require_amd_target(std::string_view who, std::string_view text);

}  // namespace sagejit
