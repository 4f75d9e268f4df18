#pragma once
// The entry points the CUDA driver API (libcuda) and the HIP module API (libamdhip64) have in
// common, restated so the build needs neither toolkit's headers. HIP's module API mirrors the
// driver API call for call, so one table lists each call once with both vendors' symbol names;
// what only one vendor has is in cuda_api.hpp / hip_api.hpp.
//
// Types are the vendors' own where they agree (results and device handles are int). Module,
// function, stream and event handles are pointers to opaque structs in both (CUmodule, hipModule_t,
// ...): void* here. Device memory is CUdeviceptr (unsigned long long) in CUDA and void* in HIP;
// both are one 64-bit integer-class argument on the LP64 ABIs sagejit supports, so void* serves.
#include <cstddef>
#include <type_traits>

namespace sagejit::driver_api {

using Result = int;  // CUresult / hipError_t
using Module = void*;
using Function = void*;
using Stream = void*;
using Event = void*;
using DevicePointer = void*;

inline constexpr Result kSuccess = 0;  // CUDA_SUCCESS / hipSuccess

// X(member, CUDA driver symbol, HIP symbol, signature)
#define SAGEJIT_DRIVER_CALLS(X)                                                                                     \
  X(init, "cuInit", "hipInit", Result(unsigned flags))                                                             \
  X(driver_version, "cuDriverGetVersion", "hipRuntimeGetVersion", Result(int* version))                            \
  X(device_count, "cuDeviceGetCount", "hipGetDeviceCount", Result(int* count))                                     \
  X(device_name, "cuDeviceGetName", "hipDeviceGetName", Result(char* name, int length, int device))               \
  X(device_attribute, "cuDeviceGetAttribute", "hipDeviceGetAttribute", Result(int* value, int attribute, int device)) \
  X(device_total_memory, "cuDeviceTotalMem_v2", "hipDeviceTotalMem", Result(std::size_t* bytes, int device))      \
  X(module_load_data, "cuModuleLoadData", "hipModuleLoadData", Result(Module* module, const void* image))         \
  X(module_unload, "cuModuleUnload", "hipModuleUnload", Result(Module module))                                     \
  X(module_get_function, "cuModuleGetFunction", "hipModuleGetFunction",                                            \
    Result(Function* function, Module module, const char* name))                                                   \
  X(launch_kernel, "cuLaunchKernel", "hipModuleLaunchKernel",                                                      \
    Result(Function function, unsigned grid_x, unsigned grid_y, unsigned grid_z, unsigned block_x, unsigned block_y, \
           unsigned block_z, unsigned shared_bytes, Stream stream, void** params, void** extra))                   \
  X(mem_alloc, "cuMemAlloc_v2", "hipMalloc", Result(DevicePointer* pointer, std::size_t bytes))                    \
  X(mem_free, "cuMemFree_v2", "hipFree", Result(DevicePointer pointer))                                            \
  X(stream_synchronize, "cuStreamSynchronize", "hipStreamSynchronize", Result(Stream stream))                      \
  /* status: CUstreamCaptureStatus / hipStreamCaptureStatus (0 none, 1 active, 2 invalidated) */                   \
  X(stream_is_capturing, "cuStreamIsCapturing", "hipStreamIsCapturing", Result(Stream stream, int* status))       \
  X(event_destroy, "cuEventDestroy_v2", "hipEventDestroy", Result(Event event))                                    \
  X(event_record, "cuEventRecord", "hipEventRecord", Result(Event event, Stream stream))                            \
  X(event_synchronize, "cuEventSynchronize", "hipEventSynchronize", Result(Event event))                           \
  X(event_elapsed_time, "cuEventElapsedTime", "hipEventElapsedTime", Result(float* milliseconds, Event start, Event stop))

#define SAGEJIT_DRIVER_MEMBER(member, cuda, hip, signature) std::add_pointer_t<signature> member = nullptr;
#define SAGEJIT_DRIVER_NAME(member, cuda, hip, signature) const char* member;
#define SAGEJIT_DRIVER_CUDA_NAME(member, cuda, hip, signature) cuda,
#define SAGEJIT_DRIVER_HIP_NAME(member, cuda, hip, signature) hip,

struct Functions {
  SAGEJIT_DRIVER_CALLS(SAGEJIT_DRIVER_MEMBER)
};

// One vendor's symbol name for each member of Functions, for resolving and for error messages.
struct Names {
  SAGEJIT_DRIVER_CALLS(SAGEJIT_DRIVER_NAME)
};

// Newer versions of a call with the same signature, used instead when the library exports them:
// cuEventElapsedTime_v2 (CUDA >= 12.8). Errors keep naming the call as listed above.
struct NewerSymbol {
  const char* name;
  const char* newer;
};
inline constexpr NewerSymbol kNewerSymbols[] = {{"cuEventElapsedTime", "cuEventElapsedTime_v2"}};

inline constexpr Names kCudaNames{SAGEJIT_DRIVER_CALLS(SAGEJIT_DRIVER_CUDA_NAME)};
inline constexpr Names kHipNames{SAGEJIT_DRIVER_CALLS(SAGEJIT_DRIVER_HIP_NAME)};

}  // namespace sagejit::driver_api
