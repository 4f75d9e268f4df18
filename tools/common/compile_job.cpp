#include "common/compile_job.hpp"

#include <charconv>

#include <fmt/format.h>

#include "core/target.hpp"
#include "core/env.hpp"
#include "core/error.hpp"
#include "kernels/jit.hpp"

namespace sagejit::tools {

KeyedJob key_job(const CompileJob& job) {
  KernelBuild build = plan_build(*job.kernel, job.config, job.spec, job.target, *job.compiler);
  return KeyedJob{job, std::move(build.rendered), build.key, std::move(build.label)};
}

CacheLookup build_job(CodeCache& cache, const KeyedJob& job) {
  return build_code_object(cache, KernelBuild{job.rendered, job.key, job.label}, *job.job.compiler);
}

std::string specialization_text(const Specialization& spec) {
  std::string text = fmt::format("{} d{}", spec.dtype == 1 ? "fp16" : "bf16", spec.head_dim);
  if (spec.causal) text += " causal";
  if (spec.write_lse) text += " lse";
  if (spec.pv_fp16) text += " pv=fp16";
  return text;
}

std::string specialization_tag(const Specialization& spec) {
  std::string tag = specialization_text(spec);
  for (char& c : tag)
    if (c == ' ' || c == '=') c = '-';
  return tag;
}

namespace {

// "hiprtc 6.4.60401" -> {6, 4}; {0, 0} when unreadable.
std::pair<int, int> hiprtc_version(const std::string& identity) {
  const std::size_t space = identity.find(' ');
  if (space == std::string::npos) return {0, 0};
  int major = 0, minor = 0;
  const char* first = identity.data() + space + 1;
  const char* last = identity.data() + identity.size();
  auto [end, error] = std::from_chars(first, last, major);
  if (error != std::errc() || end == last || *end != '.') return {major, 0};
  std::from_chars(end + 1, last, minor);
  return {major, minor};
}

}  // namespace

const Compiler& compiler_for_target(const std::string& target, std::optional<CompilerKind> requested) {
  if (is_nvidia_target(target)) {
    if (requested && *requested != CompilerKind::nvrtc)
      fail(ErrorCode::invalid_argument, "--compiler {} cannot build NVIDIA target {}; NVIDIA targets use nvrtc",
           to_string(*requested), target);
    return nvrtc_compiler();
  }
  if (!is_amd_target(target))
    fail(ErrorCode::invalid_argument, "target \"{}\" is neither an NVIDIA (sm_90) nor an AMD (gfx1201) target", target);
  if (requested) {
    if (*requested == CompilerKind::nvrtc)
      fail(ErrorCode::invalid_argument, "--compiler nvrtc cannot build AMD target {}; use hiprtc or clang", target);
    return compiler(*requested);
  }
  if (const auto name = env::get("SAGEJIT_COMPILER")) {
    const CompilerKind kind = parse_compiler_kind(*name);
    if (kind == CompilerKind::nvrtc)
      fail(ErrorCode::invalid_argument, "SAGEJIT_COMPILER=nvrtc cannot build AMD target {}; use hiprtc or clang", target);
    return compiler(kind);
  }
  std::string hiprtc_problem;
  try {
    const Compiler& hiprtc = hiprtc_compiler();
    const auto [major, minor] = hiprtc_version(hiprtc.identity());
    const bool gfx12 = parse_target(target).amd_family() == "gfx12";
    if (!gfx12 || major > 6 || (major == 6 && minor >= 4)) return hiprtc;
    hiprtc_problem = fmt::format("{} cannot build {} (needs ROCm 6.4+)", hiprtc.identity(), target);
  } catch (const Error& error) {
    hiprtc_problem = error.what();
  }
  try {
    return clang_compiler();
  } catch (const Error& error) {
    fail(ErrorCode::runtime_not_found, "no compiler can build {}: hipRTC: {}; clang: {}", target, hiprtc_problem,
         error.what());
  }
}

}  // namespace sagejit::tools
