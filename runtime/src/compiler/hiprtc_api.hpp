#pragma once
// The hipRTC entry points sagejit uses, restated from hiprtc.h (ROCm 5.2 .. 7.x) so the build needs
// no ROCm headers. They live in libhiprtc.so.6/.7 from ROCm 6 on, and in libamdhip64.so.5 before.
#include <cstddef>

namespace sagejit::hiprtc_api {

using hiprtcResult = int;
struct _hiprtcProgram;
using hiprtcProgram = _hiprtcProgram*;

inline constexpr hiprtcResult HIPRTC_SUCCESS = 0;
inline constexpr hiprtcResult HIPRTC_ERROR_COMPILATION = 6;

struct Functions {
  const char* (*hiprtcGetErrorString)(hiprtcResult result) = nullptr;
  hiprtcResult (*hiprtcCreateProgram)(hiprtcProgram* program, const char* source, const char* name, int header_count,
                                      const char** headers, const char** include_names) = nullptr;
  hiprtcResult (*hiprtcDestroyProgram)(hiprtcProgram* program) = nullptr;
  hiprtcResult (*hiprtcCompileProgram)(hiprtcProgram program, int option_count, const char** options) = nullptr;
  hiprtcResult (*hiprtcGetProgramLogSize)(hiprtcProgram program, std::size_t* size) = nullptr;
  hiprtcResult (*hiprtcGetProgramLog)(hiprtcProgram program, char* log) = nullptr;
  hiprtcResult (*hiprtcGetCodeSize)(hiprtcProgram program, std::size_t* size) = nullptr;
  hiprtcResult (*hiprtcGetCode)(hiprtcProgram program, char* code) = nullptr;
};

}  // namespace sagejit::hiprtc_api
