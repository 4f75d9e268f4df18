// What distinguishes the CUDA driver from the HIP runtime as data (names, attributes, symbols,
// where the library comes from) and the process-wide instances cuda_device() / hip_device(); the
// Device over either is driver_device.cpp.
#include "device/device.hpp"
#include "device/driver_api.hpp"
#include "platform/runtime_discovery.hpp"

namespace sagejit {
namespace {

using namespace driver_api;

const VendorTable& cuda_vendor() {
  static const VendorTable vendor{
      .vendor = Vendor::nvidia, .name = "CUDA", .api = "CUDA driver", .runtime_noun = "the CUDA driver",
      .result_type = "CUresult", .current = "CUDA context",
      .compute_units_attribute = CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
      .shared_memory_per_block_attribute = CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK,
      .shared_memory_per_block_optin_attribute = CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
      .warp_size_attribute = CU_DEVICE_ATTRIBUTE_WARP_SIZE,
      .symbols = {.init = {"cuInit"}, .driver_version = {"cuDriverGetVersion"}, .device_count = {"cuDeviceGetCount"},
                  .device_name = {"cuDeviceGetName"}, .device_attribute = {"cuDeviceGetAttribute"},
                  .device_total_memory = {"cuDeviceTotalMem_v2"}, .module_load_data = {"cuModuleLoadData"},
                  .module_unload = {"cuModuleUnload"}, .module_get_function = {"cuModuleGetFunction"},
                  .launch_kernel = {"cuLaunchKernel"}, .mem_alloc = {"cuMemAlloc_v2"}, .mem_free = {"cuMemFree_v2"},
                  .stream_synchronize = {"cuStreamSynchronize"}, .stream_is_capturing = {"cuStreamIsCapturing"},
                  .event_destroy = {"cuEventDestroy_v2"}, .event_record = {"cuEventRecord"},
                  .event_synchronize = {"cuEventSynchronize"},
                  // cuEventElapsedTime_v2 (CUDA >= 12.8) when exported; errors name the call as listed.
                  .event_elapsed_time = {"cuEventElapsedTime", "cuEventElapsedTime_v2"},
                  .cu_error_name = {"cuGetErrorName"}, .cu_error_string = {"cuGetErrorString"},
                  .cu_device_get = {"cuDeviceGet"}, .cu_primary_context_retain = {"cuDevicePrimaryCtxRetain"},
                  .cu_context_get_current = {"cuCtxGetCurrent"}, .cu_context_set_current = {"cuCtxSetCurrent"},
                  .cu_context_get_device = {"cuCtxGetDevice"}, .cu_function_set_attribute = {"cuFuncSetAttribute"},
                  .cu_memcpy_htod = {"cuMemcpyHtoD_v2"}, .cu_memcpy_dtoh = {"cuMemcpyDtoH_v2"},
                  .cu_memset_d8_async = {"cuMemsetD8Async"}, .cu_event_create = {"cuEventCreate"}},
      // libcuda ships with the driver, not the toolkit: the .so.1 soname is the stable one.
      .open = [] { return open_first_candidate({"libcuda.so.1", "libcuda.so"}, "cuInit", "the CUDA driver library"); }};
  return vendor;
}

const VendorTable& hip_vendor() {
  static const VendorTable vendor{
      .vendor = Vendor::amd, .name = "HIP", .api = "HIP", .runtime_noun = "the HIP runtime",
      .result_type = "hipError_t", .current = "HIP device",
      .compute_units_attribute = hipDeviceAttributeMultiprocessorCount,
      .shared_memory_per_block_attribute = hipDeviceAttributeMaxSharedMemoryPerBlock,
      .shared_memory_per_block_optin_attribute = -1,  // no opt-in on AMD
      .warp_size_attribute = hipDeviceAttributeWarpSize,
      .symbols = {.init = {"hipInit"}, .driver_version = {"hipRuntimeGetVersion"}, .device_count = {"hipGetDeviceCount"},
                  .device_name = {"hipDeviceGetName"}, .device_attribute = {"hipDeviceGetAttribute"},
                  .device_total_memory = {"hipDeviceTotalMem"}, .module_load_data = {"hipModuleLoadData"},
                  .module_unload = {"hipModuleUnload"}, .module_get_function = {"hipModuleGetFunction"},
                  .launch_kernel = {"hipModuleLaunchKernel"}, .mem_alloc = {"hipMalloc"}, .mem_free = {"hipFree"},
                  .stream_synchronize = {"hipStreamSynchronize"}, .stream_is_capturing = {"hipStreamIsCapturing"},
                  .event_destroy = {"hipEventDestroy"}, .event_record = {"hipEventRecord"},
                  .event_synchronize = {"hipEventSynchronize"}, .event_elapsed_time = {"hipEventElapsedTime"},
                  .hip_error_name = {"hipGetErrorName"}, .hip_error_string = {"hipGetErrorString"},
                  .hip_get_device = {"hipGetDevice"}, .hip_set_device = {"hipSetDevice"},
                  .hip_device_properties = {"hipGetDeviceProperties", "hipGetDevicePropertiesR0600"},
                  .hip_memcpy = {"hipMemcpy"}, .hip_memset_async = {"hipMemsetAsync"},
                  .hip_event_create = {"hipEventCreate"}},
      // Which HIP runtime is platform/runtime_discovery's rule: one per process, the one already loaded first.
      .open = [] { return open_runtime_library(RuntimeLibrary::hip_runtime); }};
  return vendor;
}

}  // namespace

// Loaded once; a failure is remembered so every call reports the same, complete reason. Never
// destroyed: CUDA's primary contexts stay retained (PyTorch and others keep using them, and
// releasing at exit races the driver's own teardown), and unloading the HIP runtime during static
// destruction races its own teardown.
Device& cuda_device() {
  static const auto* outcome = new LoadedLibrary<Device>(load_driver_device(cuda_vendor()));
  return outcome->get();
}

Device& hip_device() {
  static const auto* outcome = new LoadedLibrary<Device>(load_driver_device(hip_vendor()));
  return outcome->get();
}

}  // namespace sagejit
