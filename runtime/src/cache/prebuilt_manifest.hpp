#pragma once
// The manifest of a system cache: which compilers built its code objects ("compilers.json", written
// by sagejit-precompile). A run needs it to key a lookup the way another compiler keyed the entry:
// the identity of that compiler ("clang 22.1.8") is part of every key, and the machine that runs the
// code usually does not have that compiler (docs/ARCHITECTURE.md, "Which code objects a run accepts").
#include <filesystem>
#include <string>
#include <vector>

namespace sagejit {

struct PrebuiltCompiler {
  std::string kind;      // "clang", "hiprtc", "nvrtc"
  std::string identity;  // as Compiler::identity() said when it built the entries
  bool operator==(const PrebuiltCompiler&) const = default;
};

inline constexpr const char* prebuilt_manifest_name = "compilers.json";

// The compilers recorded in `dir`'s manifest; empty when there is none. A manifest that is
// unreadable, untrusted or malformed is logged (warn) and treated as empty: it can only make a run
// compile what it could have loaded, never load something else.
std::vector<PrebuiltCompiler> read_prebuilt_manifest(const std::filesystem::path& dir);

// Adds `compiler` to `dir`'s manifest (kept sorted, no duplicates), published atomically. Throws
// Error(cache_error) naming the file when it cannot be written.
void record_prebuilt_compiler(const std::filesystem::path& dir, const PrebuiltCompiler& compiler);

}  // namespace sagejit
