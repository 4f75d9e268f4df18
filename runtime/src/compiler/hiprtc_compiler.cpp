// hipRTC backend: compiles a rendered HIP source to an AMDGPU code object for one gfx target, in
// process. Works without a GPU (the target is always explicit).
#include <cstdio>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "compiler/compile_diagnostics.hpp"
#include "compiler/compiler.hpp"
#include "compiler/hiprtc_api.hpp"
#include "core/target.hpp"
#include "core/env.hpp"
#include "core/error.hpp"
#include "core/log.hpp"
#include "platform/dynlib.hpp"
#include "platform/library_loader.hpp"
#include "platform/toolkit_dirs.hpp"

namespace sagejit {
namespace {

using namespace hiprtc_api;

// "libhiprtc.so.6.4.60401" -> "6.4.60401"; empty when the file name carries no version.
std::string soname_version(const std::string& path) {
  const std::string file = std::filesystem::path(path).filename().string();
  const std::size_t at = file.find(".so.");
  return at == std::string::npos ? std::string() : file.substr(at + 4);
}

class HiprtcCompiler final : public Compiler {
 public:
  HiprtcCompiler(DynamicLibrary library, const Functions& api) : library_(std::move(library)), api_(api) {
    // hiprtcVersion() is no help: ROCm's implementation answers a fixed 9.0. The ROCm version comes
    // from hipRuntimeGetVersion where hipRTC lives inside libamdhip64 (ROCm 5), else from the
    // library file's version (libhiprtc.so.6.4.60401).
    int runtime_version = 0;
    auto* get_runtime_version = reinterpret_cast<int (*)(int*)>(library_.optional_symbol("hipRuntimeGetVersion"));
    if (get_runtime_version != nullptr && get_runtime_version(&runtime_version) == 0 && runtime_version > 0) {
      // HIP_VERSION = major * 10'000'000 + minor * 100'000 + patch
      major_ = runtime_version / 10000000;
      minor_ = (runtime_version / 100000) % 100;
      version_ = fmt::format("{}.{}.{}", major_, minor_, runtime_version % 100000);
    } else {
      version_ = soname_version(library_.path());
      if (std::sscanf(version_.c_str(), "%d.%d", &major_, &minor_) != 2) {
        major_ = minor_ = 0;
        version_ = "unknown";
      }
    }
    identity_ = fmt::format("hiprtc {}", version_);
  }

  CompilerKind kind() const override { return CompilerKind::hiprtc; }
  std::string identity() const override { return identity_; }
  std::string location() const override { return library_.path(); }
  std::vector<std::string> option_env_vars() const override { return {"HIPRTC_COMPILE_OPTIONS_APPEND"}; }

  std::vector<std::string> base_options(const std::string& target) const override {
    require_supported_target(target);
    // --offload-arch is explicit because there may be no GPU to infer it from; the full target keeps
    // feature suffixes (xnack/sramecc) so the code object matches the device exactly.
    // -std=c++17 because hipRTC's default standard is older than what our sources use.
    // -mcumode is deliberately NOT passed: hipRTC (like clang) defaults to WGP mode on gfx10+, where
    // a workgroup's waves may run on all four SIMDs of the WGP instead of the two of one CU. Our
    // attention workgroups are 4-16 waves, so WGP mode gives them twice the issue slots and the
    // WGP's full LDS bandwidth; the cost (L0 caches of the two CUs are not coherent, so
    // workgroup-scope acquires invalidate L0) is paid only at our few barriers. It also keeps hipRTC
    // and the offline clang compiler producing code for the same mode.
    return {"--offload-arch=" + target, "-O3", "-std=c++17"};
  }

  CompileResult compile(const CompileRequest& request) const override {
    CompileResult result;
    result.effective_options = base_options(request.target);
    result.effective_options.insert(result.effective_options.end(), request.options.begin(), request.options.end());
    const std::string file_name = source_file_stem(request.name) + ".hip";

    // ROCm 5's hipRTC/comgr keeps process-global state while compiling; one compile at a time there.
    std::unique_lock<std::mutex> serial;
    if (major_ < 6) serial = std::unique_lock(compile_mutex_);

    hiprtcProgram program = nullptr;
    check(api_.hiprtcCreateProgram(&program, request.source.c_str(), file_name.c_str(), 0, nullptr, nullptr),
          "hiprtcCreateProgram");
    const std::unique_ptr<hiprtcProgram, ProgramDeleter> guard(&program, ProgramDeleter{&api_});

    std::vector<const char*> options;
    for (const auto& option : result.effective_options) options.push_back(option.c_str());
    const hiprtcResult compiled = api_.hiprtcCompileProgram(program, static_cast<int>(options.size()), options.data());
    result.log = program_log(program);
    if (compiled == HIPRTC_ERROR_COMPILATION)
      throw_compile_error(identity_, request.name, request.target, {file_name, "CompileSource"}, request.source, result.log);
    check(compiled, "hiprtcCompileProgram");

    std::size_t size = 0;
    check(api_.hiprtcGetCodeSize(program, &size), "hiprtcGetCodeSize");
    if (size == 0)
      fail(ErrorCode::compile_error, "{} produced an empty code object for kernel '{}' ({}); log:\n{}", identity_,
           request.name, request.target, result.log);
    result.code.resize(size);
    check(api_.hiprtcGetCode(program, reinterpret_cast<char*>(result.code.data())), "hiprtcGetCode");
    return result;
  }

 private:
  struct ProgramDeleter {
    const Functions* api;
    void operator()(hiprtcProgram* program) const noexcept {
      if (*program != nullptr) api->hiprtcDestroyProgram(program);
    }
  };

  // gfx12 (RDNA4) needs ROCm >= 6.4: older comgr does not know the target, and Debian's 5.2 even
  // aborts the process (heap corruption) instead of failing. Refuse before calling it.
  void require_supported_target(const std::string& target) const {
    require_amd_target("hiprtc", target);
    const std::string base(target_arch(target));
    const bool gfx12 = base.rfind("gfx12", 0) == 0;
    if (gfx12 && (major_ < 6 || (major_ == 6 && minor_ < 4)))
      fail(ErrorCode::unsupported,
           "{} ({}) cannot compile for {}: gfx12 needs hipRTC from ROCm 6.4 or newer (this is ROCm {}); "
           "use the offline clang compiler instead (SAGEJIT_COMPILER=clang; clang++-22 or SAGEJIT_CLANG)",
           identity_, library_.path(), target, version_);
  }

  void check(hiprtcResult result, const char* call) const {
    if (result != HIPRTC_SUCCESS)
      fail(ErrorCode::compile_error, "hipRTC call {} failed: {}", call,
           api_.hiprtcGetErrorString != nullptr ? api_.hiprtcGetErrorString(result) : fmt::format("hiprtcResult {}", result));
  }

  std::string program_log(hiprtcProgram program) const {
    std::size_t size = 0;
    if (api_.hiprtcGetProgramLogSize(program, &size) != HIPRTC_SUCCESS || size <= 1) return {};
    std::string log(size, '\0');
    if (api_.hiprtcGetProgramLog(program, log.data()) != HIPRTC_SUCCESS) return {};
    while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
    return log;
  }

  DynamicLibrary library_;
  Functions api_;
  int major_ = 0;
  int minor_ = 0;
  std::string version_;
  std::string identity_;
  mutable std::mutex compile_mutex_;
};

std::vector<std::string> hiprtc_candidates() {
  // ROCm >= 6: hipRTC is its own library. ROCm 5 (e.g. Debian 12): its symbols are in libamdhip64.
  return library_candidates({"libhiprtc.so.7", "libhiprtc.so.6", "libhiprtc.so", "libamdhip64.so.5", "libamdhip64.so"},
                            rocm_library_dirs());
}

Functions resolve_functions(const DynamicLibrary& library) {
  Functions api;
  library.resolve(api.hiprtcGetErrorString, "hiprtcGetErrorString");
  library.resolve(api.hiprtcCreateProgram, "hiprtcCreateProgram");
  library.resolve(api.hiprtcDestroyProgram, "hiprtcDestroyProgram");
  library.resolve(api.hiprtcCompileProgram, "hiprtcCompileProgram");
  library.resolve(api.hiprtcGetProgramLogSize, "hiprtcGetProgramLogSize");
  library.resolve(api.hiprtcGetProgramLog, "hiprtcGetProgramLog");
  library.resolve(api.hiprtcGetCodeSize, "hiprtcGetCodeSize");
  library.resolve(api.hiprtcGetCode, "hiprtcGetCode");
  return api;
}

}  // namespace

const Compiler& hiprtc_compiler() {
  static const auto* outcome = new LoadedLibrary<HiprtcCompiler>(load_library<HiprtcCompiler>(  // process lifetime
      hiprtc_candidates(), "hiprtcCreateProgram", "the hipRTC library", resolve_functions));
  return outcome->get();
}

}  // namespace sagejit
