// NVRTC backend: compiles a rendered CUDA source to a cubin for one sm_XY target, in process.
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "compiler/compile_diagnostics.hpp"
#include "compiler/compiler.hpp"
#include "compiler/nvrtc_api.hpp"
#include "core/target.hpp"
#include "core/error.hpp"
#include "core/log.hpp"
#include "platform/dynlib.hpp"
#include "platform/library_loader.hpp"
#include "platform/toolkit_dirs.hpp"

namespace sagejit {
namespace {

using namespace nvrtc_api;

class NvrtcCompiler final : public Compiler {
 public:
  NvrtcCompiler(DynamicLibrary library, const Functions& api) : library_(std::move(library)), api_(api) {
    int major = 0;
    int minor = 0;
    check(api_.nvrtcVersion(&major, &minor), "nvrtcVersion");
    identity_ = fmt::format("nvrtc {}.{}", major, minor);
  }

  CompilerKind kind() const override { return CompilerKind::nvrtc; }
  std::string identity() const override { return identity_; }
  std::string location() const override { return library_.path(); }

  std::vector<std::string> base_options(const std::string& target) const override {
    require_nvidia_target("nvrtc", target);
    // No --use_fast_math: the prepare kernels must match the emulator bit for bit (NUMERICS.md), so
    // kernels that want approximate math ask for it explicitly per operation. NVRTC has no -O flag
    // (it always optimises). -default-device: helpers without __device__ still compile for the GPU.
    return {"--gpu-architecture=" + target, "-std=c++17", "-default-device"};
  }

  CompileResult compile(const CompileRequest& request) const override {
    CompileResult result;
    result.effective_options = base_options(request.target);
    result.effective_options.insert(result.effective_options.end(), request.options.begin(), request.options.end());
    const std::string file_name = source_file_stem(request.name) + ".cu";

    nvrtcProgram program = nullptr;
    check(api_.nvrtcCreateProgram(&program, request.source.c_str(), file_name.c_str(), 0, nullptr, nullptr),
          "nvrtcCreateProgram");
    const std::unique_ptr<nvrtcProgram, ProgramDeleter> guard(&program, ProgramDeleter{&api_});

    std::vector<const char*> options;
    for (const auto& option : result.effective_options) options.push_back(option.c_str());
    const nvrtcResult compiled = api_.nvrtcCompileProgram(program, static_cast<int>(options.size()), options.data());
    result.log = program_log(program);
    if (compiled == NVRTC_ERROR_COMPILATION)
      throw_compile_error(identity_, request.name, request.target, {file_name}, request.source, result.log);
    check(compiled, "nvrtcCompileProgram");

    std::size_t size = 0;
    check(api_.nvrtcGetCUBINSize(program, &size), "nvrtcGetCUBINSize");
    if (size == 0) fail(ErrorCode::compile_error, "nvrtc produced an empty cubin for kernel '{}' ({})", request.name, request.target);
    result.code.resize(size);
    check(api_.nvrtcGetCUBIN(program, reinterpret_cast<char*>(result.code.data())), "nvrtcGetCUBIN");
    return result;
  }

 private:
  struct ProgramDeleter {
    const Functions* api;
    void operator()(nvrtcProgram* program) const noexcept {
      if (*program != nullptr) api->nvrtcDestroyProgram(program);
    }
  };

  void check(nvrtcResult result, const char* call) const {
    if (result != NVRTC_SUCCESS)
      fail(ErrorCode::compile_error, "NVRTC call {} failed: {}", call,
           api_.nvrtcGetErrorString != nullptr ? api_.nvrtcGetErrorString(result) : fmt::format("nvrtcResult {}", result));
  }

  std::string program_log(nvrtcProgram program) const {
    std::size_t size = 0;
    if (api_.nvrtcGetProgramLogSize(program, &size) != NVRTC_SUCCESS || size <= 1) return {};
    std::string log(size, '\0');
    if (api_.nvrtcGetProgramLog(program, log.data()) != NVRTC_SUCCESS) return {};
    while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
    return log;
  }

  DynamicLibrary library_;
  Functions api_;
  std::string identity_;
};

std::vector<std::string> nvrtc_candidates() {
  // The CUDA toolkit is usually not on the dynamic linker's path; look where it is installed.
  return library_candidates({"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"}, cuda_toolkit_library_dirs());
}

Functions resolve_functions(const DynamicLibrary& library) {
  Functions api;
  library.resolve(api.nvrtcGetErrorString, "nvrtcGetErrorString");
  library.resolve(api.nvrtcVersion, "nvrtcVersion");
  library.resolve(api.nvrtcCreateProgram, "nvrtcCreateProgram");
  library.resolve(api.nvrtcDestroyProgram, "nvrtcDestroyProgram");
  library.resolve(api.nvrtcCompileProgram, "nvrtcCompileProgram");
  library.resolve(api.nvrtcGetProgramLogSize, "nvrtcGetProgramLogSize");
  library.resolve(api.nvrtcGetProgramLog, "nvrtcGetProgramLog");
  library.resolve(api.nvrtcGetCUBINSize, "nvrtcGetCUBINSize");
  library.resolve(api.nvrtcGetCUBIN, "nvrtcGetCUBIN");
  return api;
}

}  // namespace

const Compiler& nvrtc_compiler() {
  static const auto* outcome = new LoadedLibrary<NvrtcCompiler>(load_library<NvrtcCompiler>(  // process lifetime
      nvrtc_candidates(), "nvrtcGetCUBIN", "the NVRTC library", resolve_functions));
  return outcome->get();
}

}  // namespace sagejit
