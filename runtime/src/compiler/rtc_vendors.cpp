// What distinguishes NVRTC from hipRTC (libraries, symbols, versions, options, limits) and the
// process-wide instances nvrtc_compiler() / hiprtc_compiler(); the compiling is rtc_compiler.cpp.
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "compiler/rtc_compiler.hpp"

namespace sagejit {
namespace {

// ---- NVRTC ----

const RtcVendor& nvrtc_vendor();

RtcVersion nvrtc_version(const DynamicLibrary& library, const rtc_api::Functions& api) {
  rtc_api::Result (*version)(int* major, int* minor) = nullptr;
  library.resolve(version, "nvrtcVersion");
  RtcVersion result;
  check_rtc_call(nvrtc_vendor(), api, version(&result.major, &result.minor), "nvrtcVersion");
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
      .prefix = "nvrtc", .code_getter = "CUBIN", .code_noun = "cubin", .source_extension = ".cu", .log_alias = "",
      .library = RuntimeLibrary::nvrtc, .read_version = nvrtc_version, .base_options = nvrtc_base_options, .option_env_vars = {},
      .family_floor = std::nullopt, .serial_below_major = 0};
  return vendor;
}

// ---- hipRTC ----

// "libhiprtc.so.6.4.60401" -> "6.4.60401"; empty when the file name carries no version.
std::string soname_version(const std::string& path) {
  const std::string file = std::filesystem::path(path).filename().string();
  const std::size_t at = file.find(".so.");
  return at == std::string::npos ? std::string() : file.substr(at + 4);
}

RtcVersion hiprtc_version(const DynamicLibrary& library, const rtc_api::Functions&) {
  // hiprtcVersion() is no help: ROCm's implementation answers a fixed 9.0. The ROCm version comes
  // from hipRuntimeGetVersion where hipRTC lives inside libamdhip64 (ROCm 5), else from the
  // library file's version (libhiprtc.so.6.4.60401).
  RtcVersion result;
  int runtime_version = 0;
  auto* get_runtime_version = reinterpret_cast<int (*)(int*)>(library.optional_symbol("hipRuntimeGetVersion"));
  if (get_runtime_version != nullptr && get_runtime_version(&runtime_version) == 0 && runtime_version > 0) {
    // HIP_VERSION = major * 10'000'000 + minor * 100'000 + patch
    result.major = runtime_version / 10000000;
    result.minor = (runtime_version / 100000) % 100;
    result.text = fmt::format("{}.{}.{}", result.major, result.minor, runtime_version % 100000);
    return result;
  }
  result.text = soname_version(library.path());
  if (std::sscanf(result.text.c_str(), "%d.%d", &result.major, &result.minor) != 2) result = {0, 0, "unknown"};
  return result;
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
      .prefix = "hiprtc", .code_getter = "Code", .code_noun = "code object", .source_extension = ".hip",
      .log_alias = "CompileSource", .library = RuntimeLibrary::hiprtc, .read_version = hiprtc_version,
      .base_options = hiprtc_base_options,
      .option_env_vars = {"HIPRTC_COMPILE_OPTIONS_APPEND"}, .family_floor = RtcFamilyFloor{"gfx12", 6, 4, "ROCm"},
      .serial_below_major = 6};
  return vendor;
}

}  // namespace

const Compiler& nvrtc_compiler() {
  static const auto* outcome = new LoadedLibrary<Compiler>(load_rtc_compiler(nvrtc_vendor()));  // process lifetime
  return outcome->get();
}

const Compiler& hiprtc_compiler() {
  static const auto* outcome = new LoadedLibrary<Compiler>(load_rtc_compiler(hiprtc_vendor()));  // process lifetime
  return outcome->get();
}

}  // namespace sagejit
