#include "compiler/compiler.hpp"

#include "core/error.hpp"

namespace sagejit {

std::string_view to_string(CompilerKind kind) noexcept {
  switch (kind) {
    case CompilerKind::nvrtc: return "nvrtc";
    case CompilerKind::hiprtc: return "hiprtc";
    case CompilerKind::clang: return "clang";
  }
  return "unknown";
}

CompilerKind parse_compiler_kind(std::string_view name) {
  if (name == "nvrtc") return CompilerKind::nvrtc;
  if (name == "hiprtc") return CompilerKind::hiprtc;
  if (name == "clang") return CompilerKind::clang;
  fail(ErrorCode::invalid_argument, "compiler '{}' is not known; expected one of: nvrtc, hiprtc, clang", name);
}

const Compiler& compiler(CompilerKind kind) {
  switch (kind) {
    case CompilerKind::nvrtc: return nvrtc_compiler();
    case CompilerKind::hiprtc: return hiprtc_compiler();
    case CompilerKind::clang: return clang_compiler();
  }
  fail(ErrorCode::invalid_argument, "compiler kind {} is not one of nvrtc (0), hiprtc (1), clang (2)",
       static_cast<int>(kind));
}

}  // namespace sagejit
