#pragma once
// Validating the target strings the compilers accept, so a wrong-vendor or misspelled target is an
// Error naming the accepted form instead of a confusing compiler failure.
#include <string>
#include <string_view>

namespace sagejit {

// "sm_90", "sm_90a", "sm_100f": sm_ + 2-3 digits + optional a/f suffix.
bool is_nvidia_target(std::string_view target) noexcept;
// "gfx1201", "gfx90a", "gfx942:sramecc+:xnack-": gfx + hex digits + optional ":feature+/-" suffixes.
bool is_amd_target(std::string_view target) noexcept;
// Throw Error(invalid_argument) naming the compiler, the argument and the accepted form.
void require_nvidia_target(std::string_view compiler, std::string_view target);
void require_amd_target(std::string_view compiler, std::string_view target);
// "gfx1201:xnack-" -> "gfx1201"
std::string amd_base_target(std::string_view target);

}  // namespace sagejit
