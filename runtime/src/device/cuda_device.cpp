// CUDA backend over the driver API. It shares the device's *primary* context with the CUDA runtime
// (and so with PyTorch): kernels we load and launch live in the same context as the caller's
// tensors and streams, which a private context would not.
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "core/env.hpp"
#include "core/error.hpp"
#include "core/log.hpp"
#include "device/cuda_api.hpp"
#include "device/device.hpp"
#include "platform/dynlib.hpp"
#include "platform/library_loader.hpp"

namespace sagejit {
namespace {

using namespace cuda_api;

class CudaDevice;

std::string error_name(const Functions& api, CUresult result) {
  const char* name = nullptr;
  if (api.cuGetErrorName == nullptr || api.cuGetErrorName(result, &name) != CUDA_SUCCESS || name == nullptr)
    return fmt::format("CUresult {}", result);
  const char* text = nullptr;
  if (api.cuGetErrorString != nullptr && api.cuGetErrorString(result, &text) == CUDA_SUCCESS && text != nullptr)
    return fmt::format("{} ({})", name, text);
  return name;
}

void check(const Functions& api, CUresult result, const char* call) {
  if (result != CUDA_SUCCESS) fail(ErrorCode::device_error, "CUDA driver call {} failed: {}", call, error_name(api, result));
}

#define SAGEJIT_CU(api, call, ...) check(api, api.call(__VA_ARGS__), #call)

class CudaModule final : public LoadedModule {
 public:
  CudaModule(const CudaDevice& device, int ordinal, CUmodule module) : device_(device), ordinal_(ordinal), module_(module) {}
  ~CudaModule() override;
  void* function(const std::string& name) override;

 private:
  const CudaDevice& device_;
  int ordinal_;
  CUmodule module_;
};

class CudaDevice final : public Device {
 public:
  CudaDevice(DynamicLibrary library, const Functions& api) : library_(std::move(library)), api_(api) {
    int version = 0;
    if (api_.cuDriverGetVersion(&version) == CUDA_SUCCESS)
      version_ = fmt::format("CUDA driver {}.{}", version / 1000, (version % 1000) / 10);
    else
      version_ = "CUDA driver (version unknown)";
    // A machine with libcuda but no usable GPU (no device, driver mismatch) is "0 devices", not an
    // error: default_device() then moves on to HIP and reports why.
    const CUresult init = api_.cuInit(0);
    if (init != CUDA_SUCCESS) {
      init_error_ = fmt::format("cuInit failed: {}", error_name(api_, init));
      log::info("CUDA backend: {} ({}); treating as 0 devices", init_error_, library_.path());
      return;
    }
    int count = 0;
    const CUresult counted = api_.cuDeviceGetCount(&count);
    if (counted != CUDA_SUCCESS) {
      init_error_ = fmt::format("cuDeviceGetCount failed: {}", error_name(api_, counted));
      log::info("CUDA backend: {}; treating as 0 devices", init_error_);
      return;
    }
    contexts_.assign(static_cast<std::size_t>(count), nullptr);
  }

  Vendor vendor() const override { return Vendor::nvidia; }
  std::string runtime_version() const override { return version_; }
  std::string library_path() const override { return library_.path(); }
  int device_count() const override { return static_cast<int>(contexts_.size()); }

  DeviceInfo info(int ordinal) const override {
    const CUdevice device = handle(ordinal);
    DeviceInfo result;
    result.ordinal = ordinal;
    result.vendor = Vendor::nvidia;
    char name[256] = {};
    SAGEJIT_CU(api_, cuDeviceGetName, name, static_cast<int>(sizeof(name) - 1), device);
    result.name = name;
    const int major = attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device);
    const int minor = attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device);
    result.target = fmt::format("sm_{}{}", major, minor);
    result.full_target = result.target;
    result.compute_units = attribute(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, device);
    result.shared_memory_per_block = static_cast<std::size_t>(attribute(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, device));
    result.shared_memory_per_block_optin =
        static_cast<std::size_t>(attribute(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, device));
    result.warp_size = attribute(CU_DEVICE_ATTRIBUTE_WARP_SIZE, device);
    SAGEJIT_CU(api_, cuDeviceTotalMem_v2, &result.total_memory, device);
    return result;
  }

  int current_device() const override {
    if (device_count() == 0) fail(ErrorCode::runtime_not_found, "CUDA: no device ({})", describe_no_device());
    CUcontext context = nullptr;
    SAGEJIT_CU(api_, cuCtxGetCurrent, &context);
    if (context == nullptr) return 0;  // nothing current yet: CUDA's own default is device 0
    CUdevice device = 0;
    SAGEJIT_CU(api_, cuCtxGetDevice, &device);
    return static_cast<int>(device);
  }

  std::unique_ptr<LoadedModule> load_module(int ordinal, std::span<const std::byte> code_object) override {
    if (code_object.empty()) fail(ErrorCode::invalid_argument, "load_module: code_object is empty");
    ContextScope scope(*this, ordinal);
    CUmodule module = nullptr;
    SAGEJIT_CU(api_, cuModuleLoadData, &module, code_object.data());
    return std::make_unique<CudaModule>(*this, ordinal, module);
  }

  void launch(int ordinal, void* function, const LaunchGeometry& geometry, Stream stream, void** args) override {
    if (function == nullptr) fail(ErrorCode::invalid_argument, "launch: function is null");
    ContextScope scope(*this, ordinal);
    auto* cu_function = static_cast<CUfunction>(function);
    // Static limit is 48 KiB; beyond it the function must opt in (up to shared_memory_per_block_optin).
    if (geometry.dynamic_shared_bytes > 48u * 1024u)
      SAGEJIT_CU(api_, cuFuncSetAttribute, cu_function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                 static_cast<int>(geometry.dynamic_shared_bytes));
    SAGEJIT_CU(api_, cuLaunchKernel, cu_function, geometry.grid[0], geometry.grid[1], geometry.grid[2], geometry.block[0],
               geometry.block[1], geometry.block[2], geometry.dynamic_shared_bytes, static_cast<CUstream>(stream), args,
               nullptr);
  }

  void* allocate(int ordinal, std::size_t bytes) override {
    if (bytes == 0) fail(ErrorCode::invalid_argument, "allocate: bytes must be > 0");
    ContextScope scope(*this, ordinal);
    CUdeviceptr pointer = 0;
    SAGEJIT_CU(api_, cuMemAlloc_v2, &pointer, bytes);
    return reinterpret_cast<void*>(pointer);
  }

  void free(int ordinal, void* pointer) noexcept override {
    if (pointer == nullptr) return;
    try {
      ContextScope scope(*this, ordinal);
      const CUresult result = api_.cuMemFree_v2(reinterpret_cast<CUdeviceptr>(pointer));
      if (result != CUDA_SUCCESS) log::warn("cuMemFree failed: {}", error_name(api_, result));
    } catch (const std::exception& error) {
      log::warn("free on CUDA device {}: {}", ordinal, error.what());
    }
  }

  void copy_to_device(int ordinal, void* dst, const void* src, std::size_t bytes) override {
    ContextScope scope(*this, ordinal);
    SAGEJIT_CU(api_, cuMemcpyHtoD_v2, reinterpret_cast<CUdeviceptr>(dst), src, bytes);
  }

  void copy_to_host(int ordinal, void* dst, const void* src, std::size_t bytes) override {
    ContextScope scope(*this, ordinal);
    SAGEJIT_CU(api_, cuMemcpyDtoH_v2, dst, reinterpret_cast<CUdeviceptr>(src), bytes);
  }

  void memset(int ordinal, void* dst, int value, std::size_t bytes, Stream stream) override {
    ContextScope scope(*this, ordinal);
    SAGEJIT_CU(api_, cuMemsetD8Async, reinterpret_cast<CUdeviceptr>(dst), static_cast<unsigned char>(value), bytes,
               static_cast<CUstream>(stream));
  }

  void synchronize(int ordinal, Stream stream) override {
    ContextScope scope(*this, ordinal);
    SAGEJIT_CU(api_, cuStreamSynchronize, static_cast<CUstream>(stream));
  }

  void* create_event(int ordinal) override {
    ContextScope scope(*this, ordinal);
    CUevent event = nullptr;
    SAGEJIT_CU(api_, cuEventCreate, &event, CU_EVENT_DEFAULT);
    return event;
  }

  void destroy_event(int ordinal, void* event) noexcept override {
    if (event == nullptr) return;
    try {
      ContextScope scope(*this, ordinal);
      const CUresult result = api_.cuEventDestroy_v2(static_cast<CUevent>(event));
      if (result != CUDA_SUCCESS) log::warn("cuEventDestroy failed: {}", error_name(api_, result));
    } catch (const std::exception& error) {
      log::warn("destroy_event on CUDA device {}: {}", ordinal, error.what());
    }
  }

  void record_event(int ordinal, void* event, Stream stream) override {
    ContextScope scope(*this, ordinal);
    SAGEJIT_CU(api_, cuEventRecord, static_cast<CUevent>(event), static_cast<CUstream>(stream));
  }

  float elapsed_ms(int ordinal, void* start, void* stop) override {
    ContextScope scope(*this, ordinal);
    SAGEJIT_CU(api_, cuEventSynchronize, static_cast<CUevent>(stop));
    float milliseconds = 0.0f;
    SAGEJIT_CU(api_, cuEventElapsedTime, &milliseconds, static_cast<CUevent>(start), static_cast<CUevent>(stop));
    return milliseconds;
  }

  const Functions& api() const noexcept { return api_; }

  // Makes the device's primary context current on this thread for one call. A different context
  // that the caller had current is restored afterwards; when none was current, the primary context
  // stays current, which is exactly what the CUDA runtime would have done.
  class ContextScope {
   public:
    ContextScope(const CudaDevice& device, int ordinal) : api_(device.api_) {
      CUcontext wanted = device.primary_context(ordinal);
      SAGEJIT_CU(api_, cuCtxGetCurrent, &previous_);
      if (previous_ != wanted) {
        SAGEJIT_CU(api_, cuCtxSetCurrent, wanted);
        restore_ = previous_ != nullptr;
      }
    }
    ~ContextScope() {
      if (restore_) {
        const CUresult result = api_.cuCtxSetCurrent(previous_);
        if (result != CUDA_SUCCESS) log::warn("restoring the caller's CUDA context failed: {}", error_name(api_, result));
      }
    }
    ContextScope(const ContextScope&) = delete;
    ContextScope& operator=(const ContextScope&) = delete;

   private:
    const Functions& api_;
    CUcontext previous_ = nullptr;
    bool restore_ = false;
  };

 private:
  std::string describe_no_device() const {
    return init_error_.empty() ? fmt::format("the CUDA driver ({}) reports 0 devices", library_.path()) : init_error_;
  }

  CUdevice handle(int ordinal) const {
    if (ordinal < 0 || ordinal >= device_count())
      fail(ErrorCode::invalid_argument, "CUDA device ordinal {} is out of range: {} device(s) present{}", ordinal,
           device_count(), device_count() == 0 ? fmt::format(" ({})", describe_no_device()) : std::string());
    CUdevice device = 0;
    SAGEJIT_CU(api_, cuDeviceGet, &device, ordinal);
    return device;
  }

  int attribute(int which, CUdevice device) const {
    int value = 0;
    check(api_, api_.cuDeviceGetAttribute(&value, which, device), "cuDeviceGetAttribute");
    return value;
  }

  // Retained once per device for the life of the process (never released: PyTorch and others keep
  // using it, and releasing at exit races the driver's own teardown).
  CUcontext primary_context(int ordinal) const {
    const CUdevice device = handle(ordinal);
    std::lock_guard lock(context_mutex_);
    CUcontext& context = contexts_[static_cast<std::size_t>(ordinal)];
    if (context == nullptr) SAGEJIT_CU(api_, cuDevicePrimaryCtxRetain, &context, device);
    return context;
  }

  DynamicLibrary library_;
  Functions api_;
  std::string version_;
  std::string init_error_;
  mutable std::mutex context_mutex_;
  mutable std::vector<CUcontext> contexts_;
};

CudaModule::~CudaModule() {
  try {
    CudaDevice::ContextScope scope(device_, ordinal_);
    const CUresult result = device_.api().cuModuleUnload(module_);
    if (result != CUDA_SUCCESS) log::debug("cuModuleUnload failed: {}", error_name(device_.api(), result));
  } catch (const std::exception& error) {
    log::debug("unloading a CUDA module: {}", error.what());
  }
}

void* CudaModule::function(const std::string& name) {
  CudaDevice::ContextScope scope(device_, ordinal_);
  CUfunction function = nullptr;
  const CUresult result = device_.api().cuModuleGetFunction(&function, module_, name.c_str());
  if (result != CUDA_SUCCESS)
    fail(ErrorCode::device_error, "CUDA driver call cuModuleGetFunction(\"{}\") failed: {}", name,
         error_name(device_.api(), result));
  return function;
}

Functions resolve_functions(const DynamicLibrary& library) {
  Functions api;
  library.resolve(api.cuInit, "cuInit");
  library.resolve(api.cuDriverGetVersion, "cuDriverGetVersion");
  library.resolve(api.cuGetErrorName, "cuGetErrorName");
  library.resolve(api.cuGetErrorString, "cuGetErrorString");
  library.resolve(api.cuDeviceGetCount, "cuDeviceGetCount");
  library.resolve(api.cuDeviceGet, "cuDeviceGet");
  library.resolve(api.cuDeviceGetName, "cuDeviceGetName");
  library.resolve(api.cuDeviceGetAttribute, "cuDeviceGetAttribute");
  library.resolve(api.cuDeviceTotalMem_v2, "cuDeviceTotalMem_v2");
  library.resolve(api.cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
  library.resolve(api.cuCtxGetCurrent, "cuCtxGetCurrent");
  library.resolve(api.cuCtxSetCurrent, "cuCtxSetCurrent");
  library.resolve(api.cuCtxGetDevice, "cuCtxGetDevice");
  library.resolve(api.cuModuleLoadData, "cuModuleLoadData");
  library.resolve(api.cuModuleUnload, "cuModuleUnload");
  library.resolve(api.cuModuleGetFunction, "cuModuleGetFunction");
  library.resolve(api.cuFuncSetAttribute, "cuFuncSetAttribute");
  library.resolve(api.cuLaunchKernel, "cuLaunchKernel");
  library.resolve(api.cuMemAlloc_v2, "cuMemAlloc_v2");
  library.resolve(api.cuMemFree_v2, "cuMemFree_v2");
  library.resolve(api.cuMemcpyHtoD_v2, "cuMemcpyHtoD_v2");
  library.resolve(api.cuMemcpyDtoH_v2, "cuMemcpyDtoH_v2");
  library.resolve(api.cuMemsetD8Async, "cuMemsetD8Async");
  library.resolve(api.cuStreamSynchronize, "cuStreamSynchronize");
  library.resolve(api.cuEventCreate, "cuEventCreate");
  library.resolve(api.cuEventDestroy_v2, "cuEventDestroy_v2");
  library.resolve(api.cuEventRecord, "cuEventRecord");
  library.resolve(api.cuEventSynchronize, "cuEventSynchronize");
  library.resolve_optional(api.cuEventElapsedTime, "cuEventElapsedTime_v2");
  if (api.cuEventElapsedTime == nullptr) library.resolve(api.cuEventElapsedTime, "cuEventElapsedTime");
  return api;
}

}  // namespace

Device& cuda_device() {
  // Loaded once; a failure is remembered so every call reports the same, complete reason. libcuda
  // ships with the driver, not the toolkit: the .so.1 soname is the stable one.
  static const auto* outcome = new LoadedLibrary<CudaDevice>(  // never destroyed: see primary_context
      load_library<CudaDevice>({"libcuda.so.1", "libcuda.so"}, "cuInit", "the CUDA driver library", resolve_functions));
  return outcome->get();
}

}  // namespace sagejit
