#pragma once
// The few HIP runtime types and entry points sagejit uses, restated so the build needs no ROCm
// headers; libamdhip64 is dlopen'ed at run time.
//
// ABI notes (why the device properties are read the way they are):
// - hipDeviceProp_t changed layout in ROCm 6.0: the header maps hipGetDeviceProperties to
//   hipGetDevicePropertiesR0600 (new struct) while the old layout stays behind
//   hipGetDevicePropertiesR0000 / the unversioned symbol of ROCm 5. We therefore take every number
//   from hipDeviceGetAttribute (whose enum values are the same in ROCm 5.2 and 6.x/7.x for the
//   attributes below) and read only gcnArchName from the struct, at the offset of whichever layout
//   the symbol we called belongs to: 1160 bytes for R0600, 396 bytes for the ROCm 5 layout.
// - The struct is filled into a buffer larger than either layout (zeroed), so a newer runtime that
//   appends fields cannot write past our memory.
#include <cstddef>

namespace sagejit::hip_api {

using hipError_t = int;
using hipDevice_t = int;
struct ihipModule_t;
struct ihipModuleSymbol_t;
struct ihipStream_t;
struct ihipEvent_t;
using hipModule_t = ihipModule_t*;
using hipFunction_t = ihipModuleSymbol_t*;
using hipStream_t = ihipStream_t*;
using hipEvent_t = ihipEvent_t*;

inline constexpr hipError_t hipSuccess = 0;
inline constexpr hipError_t hipErrorNoDevice = 100;

// hipDeviceAttribute_t values used here (identical in ROCm 5.2 and ROCm >= 6).
inline constexpr int hipDeviceAttributeComputeCapabilityMajor = 23;
inline constexpr int hipDeviceAttributeComputeCapabilityMinor = 61;
inline constexpr int hipDeviceAttributeMultiprocessorCount = 63;
inline constexpr int hipDeviceAttributeMaxSharedMemoryPerBlock = 74;
inline constexpr int hipDeviceAttributeWarpSize = 87;

// hipMemcpyKind
inline constexpr int hipMemcpyHostToDevice = 1;
inline constexpr int hipMemcpyDeviceToHost = 2;

// gcnArchName inside the two hipDeviceProp_t layouts (see the note above).
inline constexpr std::size_t kArchNameOffsetR0600 = 1160;
inline constexpr std::size_t kArchNameOffsetR0000 = 396;
inline constexpr std::size_t kArchNameLength = 256;
inline constexpr std::size_t kDevicePropBufferBytes = 8192;  // > sizeof either layout (1472 / 792)

struct Functions {
  hipError_t (*hipInit)(unsigned flags) = nullptr;
  hipError_t (*hipRuntimeGetVersion)(int* version) = nullptr;
  const char* (*hipGetErrorName)(hipError_t error) = nullptr;
  const char* (*hipGetErrorString)(hipError_t error) = nullptr;
  hipError_t (*hipGetDeviceCount)(int* count) = nullptr;
  hipError_t (*hipGetDevice)(int* ordinal) = nullptr;
  hipError_t (*hipSetDevice)(int ordinal) = nullptr;
  hipError_t (*hipDeviceGetAttribute)(int* value, int attribute, int ordinal) = nullptr;
  hipError_t (*hipDeviceGetName)(char* name, int length, hipDevice_t device) = nullptr;
  hipError_t (*hipDeviceTotalMem)(std::size_t* bytes, hipDevice_t device) = nullptr;
  // Either hipGetDevicePropertiesR0600 (ROCm >= 6) or the ROCm 5 layout; see props_is_r0600.
  hipError_t (*hipGetDeviceProperties)(void* properties, int ordinal) = nullptr;
  bool props_is_r0600 = false;
  hipError_t (*hipModuleLoadData)(hipModule_t* module, const void* image) = nullptr;
  hipError_t (*hipModuleUnload)(hipModule_t module) = nullptr;
  hipError_t (*hipModuleGetFunction)(hipFunction_t* function, hipModule_t module, const char* name) = nullptr;
  hipError_t (*hipModuleLaunchKernel)(hipFunction_t function, unsigned grid_x, unsigned grid_y, unsigned grid_z,
                                      unsigned block_x, unsigned block_y, unsigned block_z, unsigned shared_bytes,
                                      hipStream_t stream, void** params, void** extra) = nullptr;
  hipError_t (*hipMalloc)(void** pointer, std::size_t bytes) = nullptr;
  hipError_t (*hipFree)(void* pointer) = nullptr;
  hipError_t (*hipMemcpy)(void* dst, const void* src, std::size_t bytes, int kind) = nullptr;
  hipError_t (*hipMemsetAsync)(void* dst, int value, std::size_t bytes, hipStream_t stream) = nullptr;
  hipError_t (*hipStreamSynchronize)(hipStream_t stream) = nullptr;
  hipError_t (*hipEventCreate)(hipEvent_t* event) = nullptr;
  hipError_t (*hipEventDestroy)(hipEvent_t event) = nullptr;
  hipError_t (*hipEventRecord)(hipEvent_t event, hipStream_t stream) = nullptr;
  hipError_t (*hipEventSynchronize)(hipEvent_t event) = nullptr;
  hipError_t (*hipEventElapsedTime)(float* milliseconds, hipEvent_t start, hipEvent_t stop) = nullptr;
};

}  // namespace sagejit::hip_api
