#include "compiler/target_names.hpp"

#include <cctype>

#include "core/error.hpp"

namespace sagejit {
namespace {

bool all_of(std::string_view text, int (*predicate)(int)) {
  for (const char c : text)
    if (!predicate(static_cast<unsigned char>(c))) return false;
  return true;
}

int is_lower_hex(int c) { return std::isdigit(c) || (c >= 'a' && c <= 'f'); }
int is_feature_char(int c) { return std::islower(c) || std::isdigit(c) || c == '-' || c == '_'; }

}  // namespace

bool is_nvidia_target(std::string_view target) noexcept {
  if (target.substr(0, 3) != "sm_") return false;
  std::string_view digits = target.substr(3);
  if (!digits.empty() && (digits.back() == 'a' || digits.back() == 'f')) digits.remove_suffix(1);
  return digits.size() >= 2 && digits.size() <= 3 && all_of(digits, [](int c) { return std::isdigit(c); });
}

bool is_amd_target(std::string_view target) noexcept {
  const std::size_t colon = target.find(':');
  const std::string_view processor = target.substr(0, colon);
  if (processor.size() < 4 || processor.substr(0, 3) != "gfx" || !all_of(processor.substr(3), is_lower_hex)) return false;
  if (colon == std::string_view::npos) return true;
  std::string_view features = target.substr(colon + 1);
  if (features.empty()) return false;  // "gfx942:"
  while (!features.empty()) {
    const std::size_t next = features.find(':');
    const std::string_view feature = features.substr(0, next);
    // each feature is a name followed by + or -: "sramecc+", "xnack-"
    if (feature.size() < 2 || (feature.back() != '+' && feature.back() != '-') ||
        !all_of(feature.substr(0, feature.size() - 1), is_feature_char))
      return false;
    if (next == std::string_view::npos) break;
    features.remove_prefix(next + 1);
    if (features.empty()) return false;  // trailing ':'
  }
  return true;
}

void require_nvidia_target(std::string_view compiler, std::string_view target) {
  if (!is_nvidia_target(target))
    fail(ErrorCode::invalid_argument, "{}: target '{}' is not an NVIDIA architecture; expected sm_XY (e.g. sm_90, sm_90a)",
         compiler, target);
}

void require_amd_target(std::string_view compiler, std::string_view target) {
  if (!is_amd_target(target))
    fail(ErrorCode::invalid_argument,
         "{}: target '{}' is not an AMD GPU architecture; expected gfxNNNN with optional feature suffixes "
         "(e.g. gfx1201, gfx942:sramecc+:xnack-)",
         compiler, target);
}

std::string amd_base_target(std::string_view target) { return std::string(target.substr(0, target.find(':'))); }

}  // namespace sagejit
