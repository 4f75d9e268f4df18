#pragma once
// The in-process runtime compilers (NVRTC, hipRTC) are one implementation (rtc_compiler.cpp) over
// a per-vendor table (rtc_vendors.cpp): the APIs have the same shape, and everything that differs
// between the two is a field here.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/compiler.hpp"
#include "compiler/rtc_api.hpp"
#include "core/target.hpp"
#include "platform/dynlib.hpp"
#include "platform/library_loader.hpp"
#include "platform/runtime_discovery.hpp"

namespace sagejit {

struct RtcVersion {
  int major = 0;   // 0: unknown
  int minor = 0;   // -1: unknown (a file name that carries only the major version)
  std::string text;  // as it appears in the identity: "13.0", "5.2.21153"
};

// A target family this compiler can handle only from some release of its toolkit on; refused
// before the call because older compilers may crash on it rather than fail.
struct RtcFamilyFloor {
  std::string_view family;   // Target::amd_family(): "gfx12"
  int major = 0;             // the first release that knows it
  int minor = 0;
  std::string_view toolkit;  // "ROCm", for the message
};

struct RtcVendor {
  CompilerKind kind;
  Vendor target_vendor;          // which targets it accepts
  std::string_view name;         // "nvrtc": the identity's first word, the target check's label, "nvrtcResult 7"
  std::string_view display;      // "NVRTC": in "NVRTC call nvrtcCompileProgram failed"
  std::string_view code_noun;    // "cubin": what an empty result is called in the error
  std::string_view source_extension;  // ".cu": the file name the compiler (and its log) sees
  std::string_view log_alias;    // another name the log may use for the source (comgr's), or empty
  RuntimeLibrary library;        // which library: chosen by platform/runtime_discovery's rule
  RtcVersion (*read_version)(const DynamicLibrary& library, const rtc_api::Functions& api);
  std::vector<std::string> (*base_options)(const std::string& target);  // target already checked
  std::vector<std::string> option_env_vars;  // read by the library itself; they change the code
  std::optional<RtcFamilyFloor> family_floor;
  int serial_below_major = 0;  // releases below this keep process-global state: one compile at a time
  rtc_api::Functions symbols;  // names only ("nvrtcCreateProgram"); bind_symbols fills in the addresses
};

// Throws Error(compile_error) "<display> call <call> failed: <error string>" unless result is success.
void check_rtc_call(const RtcVendor& vendor, const rtc_api::Functions& api, rtc_api::Result result,
                    std::string_view call);

// The ROCm version of a hipRTC library (rtc_vendors.cpp has the order of the sources it reads);
// `hip_runtime`: the HIP runtime of the process, or null. major 0: unknown; minor -1: unknown.
RtcVersion hiprtc_rocm_version(const DynamicLibrary& hiprtc, const DynamicLibrary* hip_runtime);

// Opens this process's vendor.library and builds its compiler; a failure is kept with its reason (see platform/library_loader.hpp).
LoadedLibrary<Compiler> load_rtc_compiler(const RtcVendor& vendor);

}  // namespace sagejit
