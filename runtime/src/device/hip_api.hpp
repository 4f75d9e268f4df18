#pragma once
// The HIP runtime entry points and values only HIP has (the shared ones are in driver_api.hpp),
// restated so the build needs no ROCm headers; libamdhip64 is dlopen'ed at run time.
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

#include "device/driver_api.hpp"

namespace sagejit::hip_api {

using driver_api::Result;

// hipDeviceAttribute_t values used here (identical in ROCm 5.2 and ROCm >= 6).
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
  const char* (*hipGetErrorName)(Result error) = nullptr;
  const char* (*hipGetErrorString)(Result error) = nullptr;
  Result (*hipGetDevice)(int* ordinal) = nullptr;
  Result (*hipSetDevice)(int ordinal) = nullptr;
  // Either hipGetDevicePropertiesR0600 (ROCm >= 6) or the ROCm 5 layout; see props_is_r0600.
  Result (*hipGetDeviceProperties)(void* properties, int ordinal) = nullptr;
  bool props_is_r0600 = false;
  Result (*hipMemcpy)(void* dst, const void* src, std::size_t bytes, int kind) = nullptr;
  Result (*hipMemsetAsync)(void* dst, int value, std::size_t bytes, driver_api::Stream stream) = nullptr;
  Result (*hipEventCreate)(driver_api::Event* event) = nullptr;
};

}  // namespace sagejit::hip_api
