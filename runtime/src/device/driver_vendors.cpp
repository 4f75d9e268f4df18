// What distinguishes the CUDA driver from the HIP runtime as data (names, attributes, symbols,
// where the library comes from) and the process-wide instances cuda_device() / hip_device(); the
// Device over either is driver_device.cpp.
#include "device/device.hpp"
#include "device/driver_api.hpp"
#include "platform/runtime_discovery.hpp"

namespace sagejit {
namespace {

using namespace driver_api;

// Each call's symbol in the CUDA driver and in the HIP runtime, side by side (nullptr: that vendor has
// no such call); `{listed, newer}`: the newer symbol is used when the library exports it.
Calls symbols_of(Vendor vendor) {
  const auto in = [vendor](const char* cuda, const char* hip) { return vendor == Vendor::nvidia ? cuda : hip; };
  const auto cuda = [&in](const char* symbol) { return in(symbol, nullptr); };
  const auto hip = [&in](const char* symbol) { return in(nullptr, symbol); };
  return {
      .init = in("cuInit", "hipInit"),
      .driver_version = in("cuDriverGetVersion", "hipRuntimeGetVersion"),
      .device_count = in("cuDeviceGetCount", "hipGetDeviceCount"),
      .device_name = in("cuDeviceGetName", "hipDeviceGetName"),
      .device_attribute = in("cuDeviceGetAttribute", "hipDeviceGetAttribute"),
      .device_total_memory = in("cuDeviceTotalMem_v2", "hipDeviceTotalMem"),
      .module_load_data = in("cuModuleLoadData", "hipModuleLoadData"),
      .module_unload = in("cuModuleUnload", "hipModuleUnload"),
      .module_get_function = in("cuModuleGetFunction", "hipModuleGetFunction"),
      .launch_kernel = in("cuLaunchKernel", "hipModuleLaunchKernel"),
      .mem_alloc = in("cuMemAlloc_v2", "hipMalloc"),
      .mem_free = in("cuMemFree_v2", "hipFree"),
      .stream_synchronize = in("cuStreamSynchronize", "hipStreamSynchronize"),
      .stream_is_capturing = in("cuStreamIsCapturing", "hipStreamIsCapturing"),
      .event_destroy = in("cuEventDestroy_v2", "hipEventDestroy"),
      .event_record = in("cuEventRecord", "hipEventRecord"),
      .event_synchronize = in("cuEventSynchronize", "hipEventSynchronize"),
      // cuEventElapsedTime_v2: CUDA >= 12.8; errors name the call as listed.
      .event_elapsed_time = {in("cuEventElapsedTime", "hipEventElapsedTime"), cuda("cuEventElapsedTime_v2")},
      // CUDA only: error names, primary contexts, the shared-memory opt-in, copies, memset, events.
      .cu_error_name = cuda("cuGetErrorName"), .cu_error_string = cuda("cuGetErrorString"),
      .cu_device_get = cuda("cuDeviceGet"), .cu_primary_context_retain = cuda("cuDevicePrimaryCtxRetain"),
      .cu_context_get_current = cuda("cuCtxGetCurrent"), .cu_context_set_current = cuda("cuCtxSetCurrent"),
      .cu_context_get_device = cuda("cuCtxGetDevice"), .cu_function_set_attribute = cuda("cuFuncSetAttribute"),
      .cu_memcpy_htod = cuda("cuMemcpyHtoD_v2"), .cu_memcpy_dtoh = cuda("cuMemcpyDtoH_v2"),
      .cu_memset_d8_async = cuda("cuMemsetD8Async"), .cu_event_create = cuda("cuEventCreate"),
      .cu_tensor_map_encode_tiled = {cuda("cuTensorMapEncodeTiled"), nullptr, /*optional=*/true},
      // HIP only: error names, the current device, the device properties, copies, memset, events.
      .hip_error_name = hip("hipGetErrorName"), .hip_error_string = hip("hipGetErrorString"),
      .hip_get_device = hip("hipGetDevice"), .hip_set_device = hip("hipSetDevice"),
      // hipGetDevicePropertiesR0600: ROCm >= 6, the layout its header maps the name to (driver_api.hpp).
      .hip_device_properties = {hip("hipGetDeviceProperties"), hip("hipGetDevicePropertiesR0600")},
      .hip_memcpy = hip("hipMemcpy"), .hip_memset_async = hip("hipMemsetAsync"), .hip_event_create = hip("hipEventCreate"),
  };
}

const VendorTable& cuda_vendor() {
  static const VendorTable vendor{
      .vendor = Vendor::nvidia, .name = "CUDA", .api = "CUDA driver", .runtime_noun = "the CUDA driver",
      .result_type = "CUresult", .current = "CUDA context",
      // CU_DEVICE_ATTRIBUTE_: MULTIPROCESSOR_COUNT, MAX_SHARED_MEMORY_PER_BLOCK(_OPTIN), WARP_SIZE
      .compute_units_attribute = 16, .shared_memory_per_block_attribute = 8,
      .shared_memory_per_block_optin_attribute = 97, .warp_size_attribute = 10,
      .symbols = symbols_of(Vendor::nvidia),
      // libcuda ships with the driver, not the toolkit: the .so.1 soname is the stable one.
      .open = [] { return open_first_candidate({"libcuda.so.1", "libcuda.so"}, "cuInit", "the CUDA driver library"); }};
  return vendor;
}

const VendorTable& hip_vendor() {
  static const VendorTable vendor{
      .vendor = Vendor::amd, .name = "HIP", .api = "HIP", .runtime_noun = "the HIP runtime",
      .result_type = "hipError_t", .current = "HIP device",
      // hipDeviceAttribute: MultiprocessorCount, MaxSharedMemoryPerBlock, (no opt-in on AMD), WarpSize;
      // the same values in ROCm 5.2 and ROCm >= 6.
      .compute_units_attribute = 63, .shared_memory_per_block_attribute = 74,
      .shared_memory_per_block_optin_attribute = -1, .warp_size_attribute = 87,
      .symbols = symbols_of(Vendor::amd),
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
