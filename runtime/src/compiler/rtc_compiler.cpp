// In-process runtime compiler (NVRTC or hipRTC, per RtcVendor): compiles a rendered source to a
// cubin / AMDGPU code object for one explicit target. Works without a GPU.
#include "compiler/rtc_compiler.hpp"

#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "compiler/compile_diagnostics.hpp"
#include "core/error.hpp"

namespace sagejit {
namespace {

using namespace rtc_api;

class RtcCompiler final : public Compiler {
 public:
  RtcCompiler(DynamicLibrary library, const RtcVendor& vendor, const Functions& api)
      : library_(std::move(library)), vendor_(vendor), api_(api) {
    version_ = vendor_.read_version(library_, api_);
    identity_ = fmt::format("{} {}", vendor_.name, version_.text);
  }

  CompilerKind kind() const override { return vendor_.kind; }
  std::string identity() const override { return identity_; }
  std::string location() const override { return library_.path(); }
  std::vector<std::string> option_env_vars() const override { return vendor_.option_env_vars; }

  std::vector<std::string> base_options(const std::string& target) const override {
    require_supported_target(target);
    return vendor_.base_options(target);
  }

  CompileResult compile(const CompileRequest& request) const override {
    CompileResult result;
    result.effective_options = base_options(request.target);
    result.effective_options.insert(result.effective_options.end(), request.options.begin(), request.options.end());
    const std::string file_name = source_file_stem(request.name) + std::string(vendor_.source_extension);

    std::unique_lock<std::mutex> serial;
    if (version_.major < vendor_.serial_below_major) serial = std::unique_lock(compile_mutex_);

    Program program = nullptr;
    check(api_.create_program, api_.create_program(&program, request.source.c_str(), file_name.c_str(), 0, nullptr, nullptr));
    const std::unique_ptr<Program, ProgramDeleter> guard(&program, ProgramDeleter{&api_});

    std::vector<const char*> options;
    for (const auto& option : result.effective_options) options.push_back(option.c_str());
    const Result compiled = api_.compile_program(program, static_cast<int>(options.size()), options.data());
    result.log = program_log(program);
    if (compiled == kErrorCompilation) {
      std::vector<std::string_view> log_names{file_name};
      if (!vendor_.log_alias.empty()) log_names.push_back(vendor_.log_alias);
      throw_compile_error(identity_, request.name, request.target, log_names, request.source, result.log);
    }
    check(api_.compile_program, compiled);

    std::size_t size = 0;
    check(api_.get_code_size, api_.get_code_size(program, &size));
    if (size == 0)
      fail(ErrorCode::compile_error, "{} produced an empty {} for kernel '{}' ({}); log:\n{}", identity_,
           vendor_.code_noun, request.name, request.target, result.log);
    result.code.resize(size);
    check(api_.get_code, api_.get_code(program, reinterpret_cast<char*>(result.code.data())));
    return result;
  }

 private:
  struct ProgramDeleter {
    const Functions* api;
    void operator()(Program* program) const noexcept {
      if (*program != nullptr) api->destroy_program(program);
    }
  };

  void require_supported_target(const std::string& target) const {
    if (vendor_.target_vendor == Vendor::nvidia)
      require_nvidia_target(vendor_.name, target);
    else
      require_amd_target(vendor_.name, target);
    if (const std::string reason = cannot_build(target); !reason.empty()) fail(ErrorCode::unsupported, "{}", reason);
  }

 public:
  // The vendor's family floor (gfx12 needs hipRTC from ROCm 6.4): the one place it is decided.
  std::string cannot_build(const std::string& target) const override {
    const auto& floor = vendor_.family_floor;
    const auto parsed = try_parse_target(target);
    if (!floor || !parsed || parsed->amd_family() != floor->family) return {};
    if (version_.major > floor->major || (version_.major == floor->major && version_.minor >= floor->minor)) return {};
    // An unreadable version is not a too old one: the compile itself decides (an old comgr fails
    // with "invalid target"; ROCm 5, whose hipRTC crashes on gfx12, always has a readable version).
    if (version_.major == 0 || (version_.major == floor->major && version_.minor < 0)) return {};
    return fmt::format(
        "{} ({}) cannot compile for {}: {} needs {} from {} {}.{} or newer (this is {} {}); "
        "use the offline clang compiler instead (SAGEJIT_COMPILER=clang; clang++-22 or SAGEJIT_CLANG)",
        identity_, library_.path(), target, floor->family, vendor_.display, floor->toolkit, floor->major, floor->minor,
        floor->toolkit, version_.text);
  }

 private:

  // `result` of calling `call`: the message names its symbol ("hiprtcCompileProgram").
  void check(const SymbolSlot& call, Result result) const { check_rtc_call(vendor_, api_, result, call.name); }

  std::string program_log(Program program) const {
    std::size_t size = 0;
    if (api_.get_program_log_size(program, &size) != kSuccess || size <= 1) return {};
    std::string log(size, '\0');
    if (api_.get_program_log(program, log.data()) != kSuccess) return {};
    while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
    return log;
  }

  DynamicLibrary library_;
  const RtcVendor& vendor_;
  Functions api_;
  RtcVersion version_;
  std::string identity_;
  mutable std::mutex compile_mutex_;
};

}  // namespace

void check_rtc_call(const RtcVendor& vendor, const Functions& api, Result result, std::string_view call) {
  if (result == kSuccess) return;
  fail(ErrorCode::compile_error, "{} call {} failed: {}", vendor.display, call,
       api.get_error_string.address != nullptr ? api.get_error_string(result)
                                               : fmt::format("{}Result {}", vendor.name, result));
}

LoadedLibrary<Compiler> load_rtc_compiler(const RtcVendor& vendor) {
  return load_library<Compiler, RtcCompiler>(open_runtime_library(vendor.library), vendor);
}

}  // namespace sagejit
