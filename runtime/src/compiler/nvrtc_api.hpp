#pragma once
// The NVRTC entry points sagejit uses, restated from nvrtc.h (CUDA 12/13) so the build needs no CUDA
// headers; libnvrtc is dlopen'ed at run time.
#include <cstddef>

namespace sagejit::nvrtc_api {

using nvrtcResult = int;
struct _nvrtcProgram;
using nvrtcProgram = _nvrtcProgram*;

inline constexpr nvrtcResult NVRTC_SUCCESS = 0;
inline constexpr nvrtcResult NVRTC_ERROR_COMPILATION = 6;

struct Functions {
  const char* (*nvrtcGetErrorString)(nvrtcResult result) = nullptr;
  nvrtcResult (*nvrtcVersion)(int* major, int* minor) = nullptr;
  nvrtcResult (*nvrtcCreateProgram)(nvrtcProgram* program, const char* source, const char* name, int header_count,
                                    const char* const* headers, const char* const* include_names) = nullptr;
  nvrtcResult (*nvrtcDestroyProgram)(nvrtcProgram* program) = nullptr;
  nvrtcResult (*nvrtcCompileProgram)(nvrtcProgram program, int option_count, const char* const* options) = nullptr;
  nvrtcResult (*nvrtcGetProgramLogSize)(nvrtcProgram program, std::size_t* size) = nullptr;
  nvrtcResult (*nvrtcGetProgramLog)(nvrtcProgram program, char* log) = nullptr;
  nvrtcResult (*nvrtcGetCUBINSize)(nvrtcProgram program, std::size_t* size) = nullptr;
  nvrtcResult (*nvrtcGetCUBIN)(nvrtcProgram program, char* cubin) = nullptr;
};

}  // namespace sagejit::nvrtc_api
