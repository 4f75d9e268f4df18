#pragma once
// The content key of a code object (docs/CACHE.md, "The key"): XXH3-128 over everything that decides the
// bytes the compiler produces, and nothing else (no absolute paths, no cache location).
//
// Runtime version. A cache key commonly holds it; we keep it as an explicit input but the JIT
// and the precompile tool both leave it EMPTY, on purpose:
//  - our code objects are final machine code (cubin SASS from NVRTC, AMDGPU ELF from hipRTC/clang);
//    they are produced by the compiler alone, whose identity+version is in the key, and are not
//    re-JITted by the driver, so the runtime version cannot change them;
//  - an offline precompile (tools, CI) has no GPU runtime, so a key that held the runtime version
//    would make every shipped system-cache entry miss on every user machine.
// A runtime too old for a code object is caught when the module is loaded: the JIT drops that entry
// and compiles again (jit/jit.cpp). A future backend that emits an intermediate the driver
// finalises (PTX, SPIR-V) must pass the runtime version here.
#include <array>
#include <compare>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sagejit {

// Bumped whenever the entry file layout or the key recipe changes; old entries then simply miss.
inline constexpr std::uint32_t cache_format_version = 1;

struct CacheKey {
  std::array<std::uint8_t, 16> bytes{};

  std::string hex() const;  // 32 lowercase hex digits
  static std::optional<CacheKey> from_hex(std::string_view hex);
  friend bool operator==(const CacheKey&, const CacheKey&) = default;
  friend auto operator<=>(const CacheKey&, const CacheKey&) = default;
};

struct CacheKeyHash {
  std::size_t operator()(const CacheKey& key) const noexcept;
};

struct CacheKeyInputs {
  std::string source;                // rendered source, headers already inlined
  std::vector<std::string> options;  // kernel options, then the compiler's base_options(target)
  std::string target;                // full target, feature suffixes kept: "gfx1201:xnack-", "sm_90"
  std::string compiler_identity;     // Compiler::identity(): "nvrtc 13.0", "clang 22.1.0"
  std::string runtime_version;       // empty for our code objects: see the note at the top
  // Values of the compiler's option_env_vars() (name, value); an unset variable is recorded as unset.
  std::vector<std::pair<std::string, std::optional<std::string>>> environment;
  std::uint32_t format_version = cache_format_version;
};

// Trims each option, drops empty ones and collapses inner runs of blanks. The order is kept: two
// orders of one option set only cost a miss, while sorting could merge "-O0 -O3" with "-O3 -O0".
std::vector<std::string> normalise_options(const std::vector<std::string>& options);

CacheKey make_cache_key(const CacheKeyInputs& inputs);

}  // namespace sagejit
