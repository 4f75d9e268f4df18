#include "core/target.hpp"

#include <cctype>
#include <charconv>

#include "core/error.hpp"

namespace sagejit {
namespace {

bool all_of(std::string_view text, int (*predicate)(int)) {
  for (const char c : text)
    if (!predicate(static_cast<unsigned char>(c))) return false;
  return true;
}

int is_digit(int c) { return std::isdigit(c); }
int is_lower_hex(int c) { return std::isdigit(c) || (c >= 'a' && c <= 'f'); }

// The features an AMDGPU target ID may carry (LLVM AMDGPUUsage, "Target ID"); anything else is a typo
// that would otherwise reach the compiler and fail there.
constexpr std::string_view amd_target_features[] = {"sramecc", "xnack"};
bool is_amd_target_feature(std::string_view name) {
  for (const std::string_view known : amd_target_features)
    if (name == known) return true;
  return false;
}

constexpr std::string_view nvidia_form = "sm_XY (e.g. sm_90, sm_90a)";
constexpr std::string_view amd_form =
    "gfxNNNN with optional feature suffixes sramecc+/- and xnack+/- (e.g. gfx1201, gfx942:sramecc+:xnack-)";

// Processors that share a major version but not its instruction set: gfx1250/gfx1251 (LLVM's GFX12.5)
// lack the gfx12 16x16x16 WMMA forms (clang-22 cannot select v_wmma_i32_16x16x16_iu8 for gfx1250)
// and are not in LLVM's gfx12-generic (gfx1200, gfx1201), so they are a family of their own.
struct AmdFamilySplit {
  std::string_view prefix, family;
};
constexpr AmdFamilySplit amd_family_splits[] = {{"gfx125", "gfx12.5"}};

}  // namespace

std::string_view to_string(Vendor vendor) noexcept {
  switch (vendor) {
    case Vendor::nvidia: return "nvidia";
    case Vendor::amd: return "amd";
  }
  return "unknown";
}

std::string Target::amd_family() const {
  if (!is_amd() || arch.size() < 5) return {};
  for (const AmdFamilySplit& split : amd_family_splits)
    if (arch.starts_with(split.prefix)) return std::string(split.family);
  // gfx + major version: two digits for gfx10+ (4 hex digits in all), one otherwise.
  return arch.substr(0, arch.size() >= 7 ? 5 : 4);
}

std::string_view target_arch(std::string_view text) noexcept { return text.substr(0, text.find(':')); }

bool is_nvidia_target(std::string_view text) noexcept {
  if (text.substr(0, 3) != "sm_") return false;
  std::string_view digits = text.substr(3);
  if (!digits.empty() && (digits.back() == 'a' || digits.back() == 'f')) digits.remove_suffix(1);
  return digits.size() >= 2 && digits.size() <= 3 && all_of(digits, is_digit);
}

bool is_amd_target(std::string_view text) noexcept {
  const std::size_t colon = text.find(':');
  const std::string_view processor = text.substr(0, colon);
  if (processor.size() < 4 || processor.substr(0, 3) != "gfx" || !all_of(processor.substr(3), is_lower_hex)) return false;
  if (colon == std::string_view::npos) return true;
  std::string_view features = text.substr(colon + 1);
  if (features.empty()) return false;  // "gfx942:"
  while (!features.empty()) {
    const std::size_t next = features.find(':');
    const std::string_view feature = features.substr(0, next);
    // each feature is a name followed by + or -: "sramecc+", "xnack-"
    if (feature.size() < 2 || (feature.back() != '+' && feature.back() != '-') ||
        !is_amd_target_feature(feature.substr(0, feature.size() - 1)))
      return false;
    if (next == std::string_view::npos) break;
    features.remove_prefix(next + 1);
    if (features.empty()) return false;  // trailing ':'
  }
  return true;
}

std::optional<Target> try_parse_target(std::string_view text) {
  Target target;
  target.full = std::string(text);
  target.arch = std::string(target_arch(text));
  if (is_nvidia_target(text)) {
    target.vendor = Vendor::nvidia;
    std::from_chars(text.data() + 3, text.data() + text.size(), target.sm);
    return target;
  }
  if (!is_amd_target(text)) return std::nullopt;
  target.vendor = Vendor::amd;
  std::string_view rest = text.substr(target.arch.size());
  while (!rest.empty()) {
    rest.remove_prefix(1);  // ':'
    const std::size_t next = rest.find(':');
    target.features.emplace_back(rest.substr(0, next));
    rest = next == std::string_view::npos ? std::string_view{} : rest.substr(next);
  }
  return target;
}

Target parse_target(std::string_view text) {
  if (auto target = try_parse_target(text)) return *std::move(target);
  fail(ErrorCode::invalid_argument, "target '{}' is neither an NVIDIA target ({}) nor an AMD target ({})", text,
       nvidia_form, amd_form);
}

void require_nvidia_target(std::string_view who, std::string_view text) {
  if (!is_nvidia_target(text))
    fail(ErrorCode::invalid_argument, "{}: target '{}' is not an NVIDIA architecture; expected {}", who, text,
         nvidia_form);
}

void require_amd_target(std::string_view who, std::string_view text) {
  if (!is_amd_target(text))
    fail(ErrorCode::invalid_argument, "{}: target '{}' is not an AMD GPU architecture; expected {}", who, text,
         amd_form);
}

}  // namespace sagejit
