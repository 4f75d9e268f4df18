#pragma once
// Kernel compilers behind one interface: the in-process runtime compilers NVRTC and hipRTC share
// one implementation (rtc_compiler.cpp, per-vendor table in rtc_vendors.cpp); the offline clang
// compiler runs as a subprocess (clang_compiler.cpp).
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace sagejit {

enum class CompilerKind : int { nvrtc = 0, hiprtc = 1, clang = 2 };
std::string_view to_string(CompilerKind kind) noexcept;
// Parses "nvrtc" | "hiprtc" | "clang"; throws Error(invalid_argument) naming the accepted values.
CompilerKind parse_compiler_kind(std::string_view name);

struct CompileRequest {
  std::string name;                  // for logs and errors: "attention.bm128_bn64.sm_90"
  std::string source;                // fully rendered, self-contained (headers already inlined)
  std::string target;                // "sm_90", "gfx1201", "gfx1030" (feature suffixes allowed on AMD)
  std::vector<std::string> options;  // kernel-specific options (defines); the compiler adds its own
};

struct CompileResult {
  std::vector<std::byte> code;       // cubin / AMDGPU code object (ELF)
  std::string log;                   // compiler log (may be non-empty on success: warnings)
  std::vector<std::string> effective_options;  // everything that was passed, for dumps
};

class Compiler {
 public:
  virtual ~Compiler() = default;
  virtual CompilerKind kind() const = 0;
  // Identity for the cache key and sagejit-info: "nvrtc 13.0", "hiprtc 5.2.21153", "clang 22.1.0".
  virtual std::string identity() const = 0;
  // Where it came from (library or executable path), for sagejit-info; not part of any cache key.
  virtual std::string location() const = 0;
  // Options the compiler always adds (e.g. -O3, -std=c++17, --offload-arch=...), part of the key.
  virtual std::vector<std::string> base_options(const std::string& target) const = 0;
  // Names of environment variables that change this compiler's output; their values enter the key.
  virtual std::vector<std::string> option_env_vars() const { return {}; }
  // Empty when this compiler can build `target` (a valid target of its vendor); otherwise why not,
  // decided without compiling (e.g. hipRTC below ROCm 6.4 and gfx12). compile() refuses the same.
  virtual std::string cannot_build(const std::string& target) const {
    (void)target;
    return {};
  }
  // Throws Error(compile_error) with the log and the first error's rendered-source location.
  virtual CompileResult compile(const CompileRequest& request) const = 0;
};

// Process-wide compilers, loaded/located on first call; throw Error(runtime_not_found) naming what
// was tried when unavailable.
const Compiler& nvrtc_compiler();
const Compiler& hiprtc_compiler();
const Compiler& clang_compiler();
const Compiler& compiler(CompilerKind kind);

// A stand-in for the compiler that built prebuilt code objects (a system cache's manifest): it keys
// as that compiler did but never compiles. Only clang's options are fixed enough for that; other
// kinds throw Error(invalid_argument).
std::unique_ptr<Compiler> prebuilt_compiler(CompilerKind kind, std::string identity);

}  // namespace sagejit
