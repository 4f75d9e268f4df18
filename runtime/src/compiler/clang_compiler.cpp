// Offline clang backend: runs an AMDGPU-capable upstream clang (clang++-22 by default) as a
// subprocess to turn a rendered HIP source into a code object, with no ROCm installed. This is how
// gfx1201 kernels are built on machines whose hipRTC cannot target gfx12.
#include <cctype>
#include <chrono>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "build_info.hpp"
#include "compiler/compile_diagnostics.hpp"
#include "compiler/compiler.hpp"
#include "core/env.hpp"
#include "core/error.hpp"
#include "core/log.hpp"
#include "core/target.hpp"
#include "platform/private_temp_dir.hpp"
#include "platform/subprocess.hpp"

namespace sagejit {
namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  if (!out) fail(ErrorCode::internal, "could not write {}", path);
}

std::string trim_trailing_newlines(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  return text;
}

// "Debian clang version 22.1.8 (1~deb12u1)" -> "clang 22.1.8"; other first lines are kept whole.
std::string parse_clang_identity(const std::string& version_output) {
  const std::string first_line = version_output.substr(0, version_output.find('\n'));
  const std::string marker = "clang version ";
  const std::size_t at = first_line.find(marker);
  if (at == std::string::npos) return first_line;
  std::size_t end = at + marker.size();
  while (end < first_line.size() && (std::isdigit(static_cast<unsigned char>(first_line[end])) || first_line[end] == '.'))
    ++end;
  const std::string version = first_line.substr(at + marker.size(), end - at - marker.size());
  return version.empty() ? first_line : "clang " + version;
}

// Device-only HIP compile with no ROCm: -nogpulib/-nogpuinc (the prelude defines what HIP headers
// would), one unbundled code object. Code-object version 5 is stated explicitly so every ROCm that
// supports the target loads it, whatever this clang's default is. WGP mode is the default on gfx10+,
// as for hipRTC (see hiprtc_base_options in rtc_vendors.cpp for why we keep it). Independent of the executable, so a
// prebuilt stand-in (below) keys exactly as the compiler that built the entries did.
std::vector<std::string> clang_base_options(const std::string& target) {
  require_amd_target("clang", target);
  return {"-x", "hip", "--offload-arch=" + target, "-nogpulib", "-nogpuinc", "--offload-device-only",
          "--no-gpu-bundle-output", "-O3", "-std=c++17", "-mcode-object-version=5"};
}

// How long one clang run may take (SAGEJIT_COMPILE_TIMEOUT): a hung compiler would otherwise hold the
// per-key lock and block every process needing that kernel.
constexpr std::chrono::seconds default_compile_timeout{600};

// Read by the clang driver itself and able to change any compile: it must be in the cache key.
std::vector<std::string> clang_option_env_vars() { return {"CCC_OVERRIDE_OPTIONS"}; }

// Stands in for the clang that built a system cache's entries: same kind, identity, options and
// env vars, so its keys find them; it never compiles (that clang need not exist here).
class PrebuiltClang final : public Compiler {
 public:
  explicit PrebuiltClang(std::string identity) : identity_(std::move(identity)) {}
  CompilerKind kind() const override { return CompilerKind::clang; }
  std::string identity() const override { return identity_; }
  std::string location() const override { return "prebuilt code objects of the system cache"; }
  std::vector<std::string> base_options(const std::string& target) const override { return clang_base_options(target); }
  std::vector<std::string> option_env_vars() const override { return clang_option_env_vars(); }
  CompileResult compile(const CompileRequest& request) const override {
    fail(ErrorCode::unsupported, "{} (prebuilt) cannot compile kernel '{}': it only finds code objects built ahead of time",
         identity_, request.name);
  }

 private:
  std::string identity_;
};

class ClangCompiler final : public Compiler {
 public:
  ClangCompiler(std::string executable, std::string identity)
      : executable_(std::move(executable)), identity_(std::move(identity)) {}

  CompilerKind kind() const override { return CompilerKind::clang; }
  std::string identity() const override { return identity_; }
  std::string location() const override { return executable_; }
  std::vector<std::string> option_env_vars() const override { return clang_option_env_vars(); }

  std::vector<std::string> base_options(const std::string& target) const override { return clang_base_options(target); }

  CompileResult compile(const CompileRequest& request) const override {
    CompileResult result;
    result.effective_options = base_options(request.target);
    result.effective_options.insert(result.effective_options.end(), request.options.begin(), request.options.end());

    const PrivateTempDir directory("sagejit-clang");
    const std::string stem = source_file_stem(request.name);
    const std::string source_name = stem + ".hip";
    const std::string output_name = stem + ".co";
    write_file(directory.file(source_name), request.source);

    std::vector<std::string> argv{executable_};
    argv.insert(argv.end(), result.effective_options.begin(), result.effective_options.end());
    argv.insert(argv.end(), {"-o", output_name, source_name});
    // Run inside the private directory with relative names: the log then names the source as
    // "<stem>.hip:LINE:COL", with no temporary path in it.
    const auto timeout = env::seconds("SAGEJIT_COMPILE_TIMEOUT", default_compile_timeout);
    int status = 0;
    try {
      status = run_process(argv, directory.file("compile.log"), directory.path(), timeout);
    } catch (const ProcessTimeout&) {
      fail(ErrorCode::compile_error,
           "{} did not finish compiling kernel '{}' for {} within {} s and was killed; SAGEJIT_COMPILE_TIMEOUT "
           "sets the limit in seconds. Log so far:\n{}",
           identity_, request.name, request.target, timeout.count(),
           shorten_compiler_log(trim_trailing_newlines(read_file(directory.file("compile.log")))));
    }
    result.log = trim_trailing_newlines(read_file(directory.file("compile.log")));
    if (status != 0) {
      if (status > 128) result.log += fmt::format("\n({} was killed by signal {})", executable_, status - 128);
      throw_compile_error(identity_, request.name, request.target, {source_name}, request.source, result.log);
    }
    const std::string code = read_file(directory.file(output_name));
    if (code.empty())
      fail(ErrorCode::compile_error, "{} exited 0 but wrote no code object for kernel '{}' ({}); log:\n{}", identity_,
           request.name, request.target, shorten_compiler_log(result.log));
    result.code.resize(code.size());
    std::memcpy(result.code.data(), code.data(), code.size());
    return result;
  }

 private:
  std::string executable_;
  std::string identity_;
};

struct ClangLoadOutcome {
  std::unique_ptr<ClangCompiler> compiler;
  std::string error;
};

ClangLoadOutcome locate_clang() {
  std::string requested;
  std::string origin;
  if (auto from_env = env::get("SAGEJIT_CLANG")) {
    requested = *from_env;
    origin = "SAGEJIT_CLANG";
  } else if (std::string(build::default_clang).empty()) {
    requested = "clang++-22";
    origin = "the built-in default";
  } else {
    requested = build::default_clang;
    origin = "the configure-time default";
  }
  const std::string executable = find_executable(requested);
  if (executable.empty())
    return {nullptr, fmt::format("the offline AMDGPU compiler '{}' ({}) was not found{}; install clang-22 or set "
                                 "SAGEJIT_CLANG to an AMDGPU-capable clang++",
                                 requested, origin, requested.find('/') == std::string::npos ? " on PATH" : "")};
  try {
    const PrivateTempDir directory("sagejit-clang-version");
    const std::string output = directory.file("version.txt");
    const int status =
        run_process({executable, "--version"}, output, {}, env::seconds("SAGEJIT_COMPILE_TIMEOUT", default_compile_timeout));
    const std::string text = read_file(output);
    if (status != 0 || text.empty())
      return {nullptr, fmt::format("'{}' ({}) --version failed with status {}: {}", executable, origin, status, text)};
    return {std::make_unique<ClangCompiler>(executable, parse_clang_identity(text)), {}};
  } catch (const Error& error) {
    return {nullptr, error.what()};
  } catch (const ProcessTimeout& timeout) {
    return {nullptr, fmt::format("'{}' ({}) --version: {} (SAGEJIT_COMPILE_TIMEOUT)", executable, origin, timeout.what())};
  }
}

}  // namespace

std::unique_ptr<Compiler> prebuilt_compiler(CompilerKind kind, std::string identity) {
  if (kind != CompilerKind::clang)
    fail(ErrorCode::invalid_argument, "prebuilt code objects of compiler kind {} cannot be keyed here (accepted: clang)",
         to_string(kind));
  return std::make_unique<PrebuiltClang>(std::move(identity));
}

const Compiler& clang_compiler() {
  static ClangLoadOutcome* outcome = new ClangLoadOutcome(locate_clang());  // process lifetime
  if (!outcome->compiler) throw Error(ErrorCode::runtime_not_found, outcome->error);
  return *outcome->compiler;
}

}  // namespace sagejit
