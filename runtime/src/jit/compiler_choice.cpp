#include "jit/compiler_choice.hpp"

#include <utility>

#include "core/env.hpp"
#include "core/error.hpp"
#include "core/log.hpp"

namespace sagejit {
namespace {

// The compiler named by the caller or SAGEJIT_COMPILER, checked against the vendor.
std::optional<CompilerKind> named_compiler(const Target& target, std::optional<CompilerKind> requested) {
  std::string origin = "--compiler";
  if (!requested) {
    const auto name = env::get("SAGEJIT_COMPILER");
    if (!name) return std::nullopt;
    origin = "SAGEJIT_COMPILER";
    try {
      requested = parse_compiler_kind(*name);
    } catch (const Error& error) {  // the same names, but the message names the variable
      fail(ErrorCode::invalid_argument, "SAGEJIT_COMPILER={}: {}", *name, error.what());
    }
  }
  const bool fits = target.is_nvidia() ? *requested == CompilerKind::nvrtc : *requested != CompilerKind::nvrtc;
  if (!fits)
    fail(ErrorCode::invalid_argument, "{} {} cannot build {} target {}; accepted there: {}", origin,
         to_string(*requested), to_string(target.vendor), target.arch, target.is_nvidia() ? "nvrtc" : "hiprtc, clang");
  return requested;
}

const Compiler& automatic_amd_compiler(const Target& target) {
  std::string hiprtc_problem;
  try {
    const Compiler& hiprtc = hiprtc_compiler();
    hiprtc_problem = hiprtc.cannot_build(target.full);
    if (hiprtc_problem.empty()) return hiprtc;
  } catch (const Error& error) {
    hiprtc_problem = error.what();
  }
  try {
    const Compiler& clang = clang_compiler();
    log::debug("compiler for {}: {} ({})", target.full, clang.identity(), hiprtc_problem);
    return clang;
  } catch (const Error& error) {
    fail(ErrorCode::runtime_not_found, "no compiler can build {}: hipRTC: {}; clang: {}", target.full, hiprtc_problem,
         error.what());
  }
}

}  // namespace

CompilerChoice choose_compiler(const Target& target, std::optional<CompilerKind> requested, const CodeCache* cache) {
  CompilerChoice choice;
  if (const auto kind = named_compiler(target, requested)) choice.compiler = &compiler(*kind);
  else choice.compiler = target.is_nvidia() ? &nvrtc_compiler() : &automatic_amd_compiler(target);
  if (cache == nullptr) return choice;
  for (const PrebuiltCompiler& prebuilt : cache->prebuilt_compilers()) {
    if (prebuilt.identity == choice.compiler->identity()) continue;  // its own entries: found anyway
    try {
      const CompilerKind kind = parse_compiler_kind(prebuilt.kind);
      if ((kind == CompilerKind::nvrtc) != target.is_nvidia()) continue;
      choice.prebuilt.push_back(prebuilt_compiler(kind, prebuilt.identity));
    } catch (const Error& error) {
      log::debug("system cache: not searching objects of {} ({}): {}", prebuilt.identity, prebuilt.kind, error.what());
    }
  }
  return choice;
}

}  // namespace sagejit
