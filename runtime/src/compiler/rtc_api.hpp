#pragma once
// The runtime-compiler entry points sagejit uses, restated from nvrtc.h (CUDA 12/13) and hiprtc.h
// (ROCm 5.2 .. 7.x) so the build needs neither toolkit's headers. hipRTC copies NVRTC's API one to
// one: the same calls, result codes and argument lists under another prefix ("nvrtcCompileProgram",
// "hiprtcCompileProgram"), except the code getter (nvrtcGetCUBIN, hiprtcGetCode). So one table of
// entry points serves both (symbol names: RtcVendor in compiler/rtc_compiler.hpp).
#include <cstddef>

namespace sagejit::rtc_api {

using Result = int;  // nvrtcResult / hiprtcResult
struct Program_;
using Program = Program_*;  // nvrtcProgram / hiprtcProgram

inline constexpr Result kSuccess = 0;           // NVRTC_SUCCESS / HIPRTC_SUCCESS
inline constexpr Result kErrorCompilation = 6;  // NVRTC_ERROR_COMPILATION / HIPRTC_ERROR_COMPILATION

// hiprtc.h declares the header arrays as `const char**`, nvrtc.h as `const char* const*`: the same
// pointer in the ABI, so one signature calls both.
struct Functions {
  const char* (*get_error_string)(Result result) = nullptr;
  Result (*create_program)(Program* program, const char* source, const char* name, int header_count,
                           const char* const* headers, const char* const* include_names) = nullptr;
  Result (*destroy_program)(Program* program) = nullptr;
  Result (*compile_program)(Program program, int option_count, const char* const* options) = nullptr;
  Result (*get_program_log_size)(Program program, std::size_t* size) = nullptr;
  Result (*get_program_log)(Program program, char* log) = nullptr;
  Result (*get_code_size)(Program program, std::size_t* size) = nullptr;
  Result (*get_code)(Program program, char* code) = nullptr;
};

}  // namespace sagejit::rtc_api
