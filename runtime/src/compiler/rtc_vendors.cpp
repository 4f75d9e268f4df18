// What distinguishes NVRTC from hipRTC (libraries, symbols, versions, options, limits) and the
// process-wide instances nvrtc_compiler() / hiprtc_compiler(); the compiling is rtc_compiler.cpp.
#include <cstdio>
#include <filesystem>
#include <optional>
#include <system_error>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "compiler/rtc_compiler.hpp"

namespace sagejit {
namespace {

// Each call's NVRTC and hipRTC symbol side by side (nullptr: that library has no such call). hipRTC
// copies NVRTC's API under its own prefix, except the code getter (nvrtcGetCUBIN, hiprtcGetCode).
rtc_api::Functions symbols_of(CompilerKind kind) {
  const auto in = [kind](const char* nvrtc, const char* hiprtc) { return kind == CompilerKind::nvrtc ? nvrtc : hiprtc; };
  return {.get_error_string = in("nvrtcGetErrorString", "hiprtcGetErrorString"),
          .create_program = in("nvrtcCreateProgram", "hiprtcCreateProgram"),
          .destroy_program = in("nvrtcDestroyProgram", "hiprtcDestroyProgram"),
          .compile_program = in("nvrtcCompileProgram", "hiprtcCompileProgram"),
          .get_program_log_size = in("nvrtcGetProgramLogSize", "hiprtcGetProgramLogSize"),
          .get_program_log = in("nvrtcGetProgramLog", "hiprtcGetProgramLog"),
          .get_code_size = in("nvrtcGetCUBINSize", "hiprtcGetCodeSize"),
          .get_code = in("nvrtcGetCUBIN", "hiprtcGetCode"),
          .version = in("nvrtcVersion", nullptr)};  // hiprtcVersion answers a fixed 9.0: hiprtc_version below
}

// ---- NVRTC ----

const RtcVendor& nvrtc_vendor();

RtcVersion nvrtc_version(const DynamicLibrary&, const rtc_api::Functions& api) {
  RtcVersion result;
  check_rtc_call(nvrtc_vendor(), api, api.version(&result.major, &result.minor), api.version.name);
  result.text = fmt::format("{}.{}", result.major, result.minor);
  return result;
}

std::vector<std::string> nvrtc_base_options(const std::string& target) {
  // No --use_fast_math: the prepare kernels must match the emulator bit for bit (NUMERICS.md), so
  // kernels that want approximate math ask for it explicitly per operation. NVRTC has no -O flag
  // (it always optimises). -default-device: helpers without __device__ still compile for the GPU.
  return {"--gpu-architecture=" + target, "-std=c++17", "-default-device"};
}

const RtcVendor& nvrtc_vendor() {
  static const RtcVendor vendor{
      .kind = CompilerKind::nvrtc, .target_vendor = Vendor::nvidia, .name = "nvrtc", .display = "NVRTC",
      .code_noun = "cubin", .source_extension = ".cu", .log_alias = "",
      .library = RuntimeLibrary::nvrtc, .read_version = nvrtc_version, .base_options = nvrtc_base_options, .option_env_vars = {},
      .family_floor = std::nullopt, .serial_below_major = 0, .symbols = symbols_of(CompilerKind::nvrtc)};
  return vendor;
}

// ---- hipRTC ----

// "libhiprtc.so.6.4.60401" -> "6.4.60401"; empty when the file name carries no version.
std::string soname_version(const std::string& path) {
  const std::string file = std::filesystem::path(path).filename().string();
  const std::size_t at = file.find(".so.");
  return at == std::string::npos ? std::string() : file.substr(at + 4);
}

// HIP_VERSION = major * 10'000'000 + minor * 100'000 + patch, as hipRuntimeGetVersion answers it.
std::optional<RtcVersion> hip_runtime_version_of(const DynamicLibrary& library) {
  auto* get_version = reinterpret_cast<int (*)(int*)>(library.optional_symbol("hipRuntimeGetVersion"));
  int version = 0;
  if (get_version == nullptr || get_version(&version) != 0 || version <= 0) return std::nullopt;
  RtcVersion result;
  result.major = version / 10000000;
  result.minor = (version / 100000) % 100;
  result.text = fmt::format("{}.{}.{}", result.major, result.minor, version % 100000);
  return result;
}

// "6.4.43484" -> 6.4; "7" -> 7 with the minor unknown; anything else: nothing.
std::optional<RtcVersion> parse_file_version(const std::string& text) {
  RtcVersion result;
  char tail = 0;
  const int fields = std::sscanf(text.c_str(), "%d.%d%c", &result.major, &result.minor, &tail);
  if (fields < 1 || result.major <= 0) return std::nullopt;
  if (fields == 1) {
    if (text.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
    result.minor = -1;
  }
  result.text = text;
  return result;
}

RtcVersion hiprtc_rocm_version_impl(const DynamicLibrary& library, const DynamicLibrary* hip_runtime) {
  // hiprtcVersion() is no help: ROCm's implementation answers a fixed 9.0, and hipRTC's ELF has no
  // version data (no version definitions, no .comment). The ROCm version comes from, in order:
  // 1. hipRuntimeGetVersion in the library itself (ROCm 5: hipRTC lives inside libamdhip64);
  // 2. the file's own name or the file its name links to (libhiprtc.so.6 -> libhiprtc.so.6.4.43484,
  //    the /opt/rocm-X/lib and distribution layouts), when it says major.minor;
  // 3. the HIP runtime this process uses, when it lives in hipRTC's directory (the one-ROCm rule of
  //    platform/runtime_discovery makes them one ROCm): torch/lib's unversioned libhiprtc.so next to
  //    its libamdhip64.so, TheRock's libhiprtc.so.7 next to libamdhip64.so.7;
  // 4. a major version alone from the name (libhiprtc.so.7);
  // else it is unknown, which is not "too old" (cannot_build lets the compile decide).
  if (auto inside = hip_runtime_version_of(library)) return *inside;
  // DynamicLibrary::path() is the file the loaded name resolves to (symlinks followed), so its name
  // is the one that carries the full version; both paths are canonical, so their directories compare.
  const std::optional<RtcVersion> from_name = parse_file_version(soname_version(library.path()));
  if (from_name && from_name->minor >= 0) return *from_name;
  const auto directory = [](const DynamicLibrary& lib) { return std::filesystem::path(lib.path()).parent_path(); };
  if (hip_runtime != nullptr && directory(*hip_runtime) == directory(library))
    if (auto same_rocm = hip_runtime_version_of(*hip_runtime)) return *same_rocm;
  if (from_name) return *from_name;
  return {0, -1, "unknown"};
}

RtcVersion hiprtc_version(const DynamicLibrary& library, const rtc_api::Functions&) {
  const DiscoveredLibrary& runtime = process_runtime_library(RuntimeLibrary::hip_runtime);
  return hiprtc_rocm_version_impl(library, runtime.library && !runtime.refused ? &*runtime.library : nullptr);
}

std::vector<std::string> hiprtc_base_options(const std::string& target) {
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

const RtcVendor& hiprtc_vendor() {
  // ROCm 5's comgr says "CompileSource" in its log instead of our file name, and keeps
  // process-global state while compiling (so one compile at a time below ROCm 6). gfx12 (RDNA4)
  // needs ROCm >= 6.4: older comgr does not know the target, and Debian's 5.2 even aborts the
  // process (heap corruption) instead of failing.
  static const RtcVendor vendor{
      .kind = CompilerKind::hiprtc, .target_vendor = Vendor::amd, .name = "hiprtc", .display = "hipRTC",
      .code_noun = "code object", .source_extension = ".hip",
      .log_alias = "CompileSource", .library = RuntimeLibrary::hiprtc, .read_version = hiprtc_version,
      .base_options = hiprtc_base_options,
      .option_env_vars = {"HIPRTC_COMPILE_OPTIONS_APPEND"}, .family_floor = RtcFamilyFloor{"gfx12", 6, 4, "ROCm"},
      .serial_below_major = 6, .symbols = symbols_of(CompilerKind::hiprtc)};
  return vendor;
}

}  // namespace

RtcVersion hiprtc_rocm_version(const DynamicLibrary& hiprtc, const DynamicLibrary* hip_runtime) {
  return hiprtc_rocm_version_impl(hiprtc, hip_runtime);
}

const Compiler& nvrtc_compiler() {
  static const auto* outcome = new LoadedLibrary<Compiler>(load_rtc_compiler(nvrtc_vendor()));  // process lifetime
  return outcome->get();
}

const Compiler& hiprtc_compiler() {
  static const auto* outcome = new LoadedLibrary<Compiler>(load_rtc_compiler(hiprtc_vendor()));  // process lifetime
  return outcome->get();
}

}  // namespace sagejit
