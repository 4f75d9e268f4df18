// HIP backend over the HIP runtime (libamdhip64), loaded at run time. Calls that act on one device
// switch to it for the call and switch back, so the caller's (e.g. PyTorch's) current device is
// left as it was.
#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "core/env.hpp"
#include "core/error.hpp"
#include "core/log.hpp"
#include "device/device.hpp"
#include "platform/dynlib.hpp"
#include "platform/library_loader.hpp"
#include "device/hip_api.hpp"
#include "platform/toolkit_dirs.hpp"

namespace sagejit {
namespace {

using namespace hip_api;

std::string error_name(const Functions& api, hipError_t result) {
  const char* name = api.hipGetErrorName != nullptr ? api.hipGetErrorName(result) : nullptr;
  const char* text = api.hipGetErrorString != nullptr ? api.hipGetErrorString(result) : nullptr;
  if (name == nullptr) return fmt::format("hipError_t {}", result);
  if (text == nullptr) return name;
  return fmt::format("{} ({})", name, text);
}

void check(const Functions& api, hipError_t result, const char* call) {
  if (result != hipSuccess) fail(ErrorCode::device_error, "HIP call {} failed: {}", call, error_name(api, result));
}

#define SAGEJIT_HIP(api, call, ...) check(api, api.call(__VA_ARGS__), #call)

// "gfx1201:sramecc-:xnack-" -> "gfx1201"
std::string base_target(const std::string& full_target) { return full_target.substr(0, full_target.find(':')); }

// Makes `ordinal` the current HIP device for one call and restores the caller's afterwards.
class DeviceScope {
 public:
  DeviceScope(const Functions& api, int ordinal) : api_(api) {
    SAGEJIT_HIP(api_, hipGetDevice, &previous_);
    if (previous_ != ordinal) {
      SAGEJIT_HIP(api_, hipSetDevice, ordinal);
      restore_ = true;
    }
  }
  ~DeviceScope() {
    if (restore_) {
      const hipError_t result = api_.hipSetDevice(previous_);
      if (result != hipSuccess) log::warn("restoring the caller's HIP device failed: {}", error_name(api_, result));
    }
  }
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;

 private:
  const Functions& api_;
  int previous_ = 0;
  bool restore_ = false;
};

class HipModule final : public LoadedModule {
 public:
  HipModule(const Functions& api, int ordinal, hipModule_t module) : api_(api), ordinal_(ordinal), module_(module) {}
  ~HipModule() override {
    try {
      DeviceScope scope(api_, ordinal_);
      const hipError_t result = api_.hipModuleUnload(module_);
      if (result != hipSuccess) log::debug("hipModuleUnload failed: {}", error_name(api_, result));
    } catch (const std::exception& error) {
      log::debug("unloading a HIP module: {}", error.what());
    }
  }
  void* function(const std::string& name) override {
    DeviceScope scope(api_, ordinal_);
    hipFunction_t function = nullptr;
    const hipError_t result = api_.hipModuleGetFunction(&function, module_, name.c_str());
    if (result != hipSuccess)
      fail(ErrorCode::device_error, "HIP call hipModuleGetFunction(\"{}\") failed: {}", name, error_name(api_, result));
    return function;
  }

 private:
  const Functions& api_;
  int ordinal_;
  hipModule_t module_;
};

class HipDevice final : public Device {
 public:
  HipDevice(DynamicLibrary library, const Functions& api) : library_(std::move(library)), api_(api) {
    int version = 0;
    if (api_.hipRuntimeGetVersion(&version) == hipSuccess)
      // HIP_VERSION = major * 10'000'000 + minor * 100'000 + patch
      version_ = fmt::format("HIP {}.{}.{}", version / 10000000, (version / 100000) % 100, version % 100000);
    else
      version_ = "HIP (version unknown)";
    // The runtime without a GPU or kernel driver (e.g. Debian's libamdhip64 on a build machine)
    // is "0 devices", reported with the reason, never a failure to load.
    const hipError_t init = api_.hipInit(0);
    if (init != hipSuccess) {
      init_error_ = fmt::format("hipInit failed: {}", error_name(api_, init));
      log::info("HIP backend: {} ({}); treating as 0 devices", init_error_, library_.path());
      return;
    }
    int count = 0;
    const hipError_t counted = api_.hipGetDeviceCount(&count);
    if (counted != hipSuccess) {
      init_error_ = fmt::format("hipGetDeviceCount failed: {}", error_name(api_, counted));
      log::info("HIP backend: {}; treating as 0 devices", init_error_);
      return;
    }
    count_ = std::max(count, 0);
  }

  Vendor vendor() const override { return Vendor::amd; }
  std::string runtime_version() const override { return version_; }
  std::string library_path() const override { return library_.path(); }
  int device_count() const override { return count_; }

  DeviceInfo info(int ordinal) const override {
    check_ordinal(ordinal);
    DeviceInfo result;
    result.ordinal = ordinal;
    result.vendor = Vendor::amd;
    char name[256] = {};
    SAGEJIT_HIP(api_, hipDeviceGetName, name, static_cast<int>(sizeof(name) - 1), ordinal);
    result.name = name;
    result.full_target = arch_name(ordinal);
    result.target = base_target(result.full_target);
    result.compute_units = attribute(hipDeviceAttributeMultiprocessorCount, ordinal);
    result.shared_memory_per_block = static_cast<std::size_t>(attribute(hipDeviceAttributeMaxSharedMemoryPerBlock, ordinal));
    result.shared_memory_per_block_optin = result.shared_memory_per_block;  // no opt-in on AMD
    result.warp_size = attribute(hipDeviceAttributeWarpSize, ordinal);
    SAGEJIT_HIP(api_, hipDeviceTotalMem, &result.total_memory, ordinal);
    return result;
  }

  int current_device() const override {
    if (count_ == 0) fail(ErrorCode::runtime_not_found, "HIP: no device ({})", describe_no_device());
    int ordinal = 0;
    SAGEJIT_HIP(api_, hipGetDevice, &ordinal);
    return ordinal;
  }

  std::unique_ptr<LoadedModule> load_module(int ordinal, std::span<const std::byte> code_object) override {
    if (code_object.empty()) fail(ErrorCode::invalid_argument, "load_module: code_object is empty");
    check_ordinal(ordinal);
    DeviceScope scope(api_, ordinal);
    hipModule_t module = nullptr;
    SAGEJIT_HIP(api_, hipModuleLoadData, &module, code_object.data());
    return std::make_unique<HipModule>(api_, ordinal, module);
  }

  void launch(int ordinal, void* function, const LaunchGeometry& geometry, Stream stream, void** args) override {
    if (function == nullptr) fail(ErrorCode::invalid_argument, "launch: function is null");
    check_ordinal(ordinal);
    DeviceScope scope(api_, ordinal);
    SAGEJIT_HIP(api_, hipModuleLaunchKernel, static_cast<hipFunction_t>(function), geometry.grid[0], geometry.grid[1],
                geometry.grid[2], geometry.block[0], geometry.block[1], geometry.block[2], geometry.dynamic_shared_bytes,
                static_cast<hipStream_t>(stream), args, nullptr);
  }

  void* allocate(int ordinal, std::size_t bytes) override {
    if (bytes == 0) fail(ErrorCode::invalid_argument, "allocate: bytes must be > 0");
    check_ordinal(ordinal);
    DeviceScope scope(api_, ordinal);
    void* pointer = nullptr;
    SAGEJIT_HIP(api_, hipMalloc, &pointer, bytes);
    return pointer;
  }

  void free(int ordinal, void* pointer) noexcept override {
    if (pointer == nullptr) return;
    try {
      DeviceScope scope(api_, ordinal);
      const hipError_t result = api_.hipFree(pointer);
      if (result != hipSuccess) log::warn("hipFree failed: {}", error_name(api_, result));
    } catch (const std::exception& error) {
      log::warn("free on HIP device {}: {}", ordinal, error.what());
    }
  }

  void copy_to_device(int ordinal, void* dst, const void* src, std::size_t bytes) override {
    check_ordinal(ordinal);
    DeviceScope scope(api_, ordinal);
    SAGEJIT_HIP(api_, hipMemcpy, dst, src, bytes, hipMemcpyHostToDevice);
  }

  void copy_to_host(int ordinal, void* dst, const void* src, std::size_t bytes) override {
    check_ordinal(ordinal);
    DeviceScope scope(api_, ordinal);
    SAGEJIT_HIP(api_, hipMemcpy, dst, src, bytes, hipMemcpyDeviceToHost);
  }

  void memset(int ordinal, void* dst, int value, std::size_t bytes, Stream stream) override {
    check_ordinal(ordinal);
    DeviceScope scope(api_, ordinal);
    SAGEJIT_HIP(api_, hipMemsetAsync, dst, value, bytes, static_cast<hipStream_t>(stream));
  }

  void synchronize(int ordinal, Stream stream) override {
    check_ordinal(ordinal);
    DeviceScope scope(api_, ordinal);
    SAGEJIT_HIP(api_, hipStreamSynchronize, static_cast<hipStream_t>(stream));
  }

  void* create_event(int ordinal) override {
    check_ordinal(ordinal);
    DeviceScope scope(api_, ordinal);
    hipEvent_t event = nullptr;
    SAGEJIT_HIP(api_, hipEventCreate, &event);
    return event;
  }

  void destroy_event(int ordinal, void* event) noexcept override {
    if (event == nullptr) return;
    try {
      DeviceScope scope(api_, ordinal);
      const hipError_t result = api_.hipEventDestroy(static_cast<hipEvent_t>(event));
      if (result != hipSuccess) log::warn("hipEventDestroy failed: {}", error_name(api_, result));
    } catch (const std::exception& error) {
      log::warn("destroy_event on HIP device {}: {}", ordinal, error.what());
    }
  }

  void record_event(int ordinal, void* event, Stream stream) override {
    check_ordinal(ordinal);
    DeviceScope scope(api_, ordinal);
    SAGEJIT_HIP(api_, hipEventRecord, static_cast<hipEvent_t>(event), static_cast<hipStream_t>(stream));
  }

  float elapsed_ms(int ordinal, void* start, void* stop) override {
    check_ordinal(ordinal);
    DeviceScope scope(api_, ordinal);
    SAGEJIT_HIP(api_, hipEventSynchronize, static_cast<hipEvent_t>(stop));
    float milliseconds = 0.0f;
    SAGEJIT_HIP(api_, hipEventElapsedTime, &milliseconds, static_cast<hipEvent_t>(start), static_cast<hipEvent_t>(stop));
    return milliseconds;
  }

 private:
  std::string describe_no_device() const {
    return init_error_.empty() ? fmt::format("the HIP runtime ({}) reports 0 devices", library_.path()) : init_error_;
  }

  void check_ordinal(int ordinal) const {
    if (ordinal < 0 || ordinal >= count_)
      fail(ErrorCode::invalid_argument, "HIP device ordinal {} is out of range: {} device(s) present{}", ordinal, count_,
           count_ == 0 ? fmt::format(" ({})", describe_no_device()) : std::string());
  }

  int attribute(int which, int ordinal) const {
    int value = 0;
    check(api_, api_.hipDeviceGetAttribute(&value, which, ordinal), "hipDeviceGetAttribute");
    return value;
  }

  // gcnArchName with its feature suffixes, read from whichever hipDeviceProp_t layout we called.
  std::string arch_name(int ordinal) const {
    std::vector<unsigned char> buffer(kDevicePropBufferBytes, 0);
    check(api_, api_.hipGetDeviceProperties(buffer.data(), ordinal),
          api_.props_is_r0600 ? "hipGetDevicePropertiesR0600" : "hipGetDeviceProperties");
    const std::size_t offset = api_.props_is_r0600 ? kArchNameOffsetR0600 : kArchNameOffsetR0000;
    const char* text = reinterpret_cast<const char*>(buffer.data() + offset);
    const std::string arch(text, ::strnlen(text, kArchNameLength));
    if (arch.rfind("gfx", 0) != 0)
      fail(ErrorCode::device_error,
           "HIP device {}: gcnArchName '{}' does not start with 'gfx' ({} layout, {}); this HIP runtime's "
           "hipDeviceProp_t layout is not one sagejit knows",
           ordinal, arch, api_.props_is_r0600 ? "R0600" : "ROCm 5", version_);
    return arch;
  }

  DynamicLibrary library_;
  Functions api_;
  std::string version_;
  std::string init_error_;
  int count_ = 0;
};

Functions resolve_functions(const DynamicLibrary& library) {
  Functions api;
  library.resolve(api.hipInit, "hipInit");
  library.resolve(api.hipRuntimeGetVersion, "hipRuntimeGetVersion");
  library.resolve(api.hipGetErrorName, "hipGetErrorName");
  library.resolve(api.hipGetErrorString, "hipGetErrorString");
  library.resolve(api.hipGetDeviceCount, "hipGetDeviceCount");
  library.resolve(api.hipGetDevice, "hipGetDevice");
  library.resolve(api.hipSetDevice, "hipSetDevice");
  library.resolve(api.hipDeviceGetAttribute, "hipDeviceGetAttribute");
  library.resolve(api.hipDeviceGetName, "hipDeviceGetName");
  library.resolve(api.hipDeviceTotalMem, "hipDeviceTotalMem");
  library.resolve_optional(api.hipGetDeviceProperties, "hipGetDevicePropertiesR0600");
  api.props_is_r0600 = api.hipGetDeviceProperties != nullptr;
  if (!api.props_is_r0600) library.resolve(api.hipGetDeviceProperties, "hipGetDeviceProperties");
  library.resolve(api.hipModuleLoadData, "hipModuleLoadData");
  library.resolve(api.hipModuleUnload, "hipModuleUnload");
  library.resolve(api.hipModuleGetFunction, "hipModuleGetFunction");
  library.resolve(api.hipModuleLaunchKernel, "hipModuleLaunchKernel");
  library.resolve(api.hipMalloc, "hipMalloc");
  library.resolve(api.hipFree, "hipFree");
  library.resolve(api.hipMemcpy, "hipMemcpy");
  library.resolve(api.hipMemsetAsync, "hipMemsetAsync");
  library.resolve(api.hipStreamSynchronize, "hipStreamSynchronize");
  library.resolve(api.hipEventCreate, "hipEventCreate");
  library.resolve(api.hipEventDestroy, "hipEventDestroy");
  library.resolve(api.hipEventRecord, "hipEventRecord");
  library.resolve(api.hipEventSynchronize, "hipEventSynchronize");
  library.resolve(api.hipEventElapsedTime, "hipEventElapsedTime");
  return api;
}

std::vector<std::string> hip_candidates() {
  // ROCm installs under /opt/rocm (or $ROCM_PATH) without registering with the dynamic linker.
  return library_candidates({"libamdhip64.so.7", "libamdhip64.so.6", "libamdhip64.so.5", "libamdhip64.so"},
                            rocm_library_dirs());
}

}  // namespace

Device& hip_device() {
  // Loaded once; a failure is remembered so every call reports the same, complete reason. Never
  // destroyed: unloading the HIP runtime during static destruction races its own teardown.
  static const auto* outcome = new LoadedLibrary<HipDevice>(
      load_library<HipDevice>(hip_candidates(), "hipInit", "the HIP runtime library", resolve_functions));
  return outcome->get();
}

}  // namespace sagejit
