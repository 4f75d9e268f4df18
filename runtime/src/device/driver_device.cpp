// The one Device: over the CUDA driver API or the HIP module API, whose calls match one to one
// (driver_api.hpp); the vendor's table (driver_vendors.cpp) says which library and symbols. What
// the two do differently, beyond data, is in the "vendor differences" section below.
// Every call that acts on one device makes it current for the call and restores the caller's
// state afterwards, so a framework's (e.g. PyTorch's) current device or context is left as it was:
// CUDA shares each device's *primary* context with the CUDA runtime (and so with PyTorch), so the
// kernels we load and launch live in the same context as the caller's tensors and streams, which a
// private context would not; HIP switches with hipSetDevice and switches back.
#include <algorithm>
#include <cstring>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.hpp"
#include "core/log.hpp"
#include "device/driver_api.hpp"

namespace sagejit {
namespace {

using namespace driver_api;

class DriverDevice;

class DriverModule final : public LoadedModule {
 public:
  DriverModule(const DriverDevice& device, int ordinal, Module module) : device_(device), ordinal_(ordinal), module_(module) {}
  ~DriverModule() override;
  void* function(const std::string& name) override;

 private:
  const DriverDevice& device_;
  int ordinal_;
  Module module_;
};

class DriverDevice final : public Device {
  // What was current before a call switched to its device; restored when the call ends.
  struct Previous {
    CUcontext context = nullptr;  // CUDA: the caller's context
    int ordinal = 0;              // HIP: the caller's device
    bool restore = false;
  };

 public:
  DriverDevice(DynamicLibrary library, const VendorTable& vendor, const Calls& calls)
      : library_(std::move(library)), vendor_(vendor), api_(calls) {
    int version = 0;
    if (api_.driver_version(&version) == kSuccess)
      version_ = format_version(version);
    else
      version_ = fmt::format("{} (version unknown)", vendor_.api);
    // A machine with the library but no usable GPU (no device, no kernel driver, driver mismatch;
    // e.g. Debian's libamdhip64 on a build machine) is "0 devices" with the reason, not a failure to
    // load: default_device() then moves on and reports why.
    const Result init = api_.init(0);
    if (init != kSuccess) {
      init_error_ = fmt::format("{} failed: {}", api_.init.name, error_name(init));
      log::info("{} backend: {} ({}); treating as 0 devices", vendor_.name, init_error_, library_.path());
      return;
    }
    int count = 0;
    const Result counted = api_.device_count(&count);
    if (counted != kSuccess) {
      init_error_ = fmt::format("{} failed: {}", api_.device_count.name, error_name(counted));
      log::info("{} backend: {}; treating as 0 devices", vendor_.name, init_error_);
      return;
    }
    count_ = std::max(count, 0);
  }

  Vendor vendor() const override { return vendor_.vendor; }
  std::string runtime_version() const override { return version_; }
  std::string library_path() const override { return library_.path(); }
  int device_count() const override { return count_; }
  std::string no_device_reason() const override { return count_ == 0 ? describe_no_device() : std::string(); }

  DeviceInfo info(int ordinal) const override {
    check_ordinal(ordinal);
    const int device = device_handle(ordinal);
    DeviceInfo result;
    result.ordinal = ordinal;
    result.vendor = vendor();
    char name[256] = {};
    call(api_.device_name, name, static_cast<int>(sizeof(name) - 1), device);
    result.name = name;
    read_target(result, device);
    result.compute_units = attribute(vendor_.compute_units_attribute, device);
    result.shared_memory_per_block = static_cast<std::size_t>(attribute(vendor_.shared_memory_per_block_attribute, device));
    result.shared_memory_per_block_optin =
        vendor_.shared_memory_per_block_optin_attribute < 0
            ? result.shared_memory_per_block
            : static_cast<std::size_t>(attribute(vendor_.shared_memory_per_block_optin_attribute, device));
    result.warp_size = attribute(vendor_.warp_size_attribute, device);
    call(api_.device_total_memory, &result.total_memory, device);
    return result;
  }

  int current_device() const override {
    if (count_ == 0) fail(ErrorCode::runtime_not_found, "{}: no device ({})", vendor_.name, describe_no_device());
    if (!cuda()) {
      int ordinal = 0;
      call(api_.hip_get_device, &ordinal);
      return ordinal;
    }
    CUcontext context = nullptr;
    call(api_.cu_context_get_current, &context);
    if (context == nullptr) return 0;  // nothing current yet: CUDA's own default is device 0
    int device = 0;
    call(api_.cu_context_get_device, &device);
    return device;
  }

  std::unique_ptr<LoadedModule> load_module(int ordinal, std::span<const std::byte> code_object) override {
    if (code_object.empty()) fail(ErrorCode::invalid_argument, "load_module: code_object is empty");
    const Scope scope(*this, ordinal);
    Module module = nullptr;
    call(api_.module_load_data, &module, code_object.data());
    return std::make_unique<DriverModule>(*this, ordinal, module);
  }

  void launch(int ordinal, void* function, const LaunchGeometry& geometry, Stream stream, void** args) override {
    if (function == nullptr) fail(ErrorCode::invalid_argument, "launch: function is null");
    const Scope scope(*this, ordinal);
    // CUDA's static shared-memory limit is 48 KiB; beyond it the function must opt in (up to
    // shared_memory_per_block_optin). LDS has no opt-in on AMD: the launch asks for what it needs.
    if (cuda() && geometry.dynamic_shared_bytes > 48u * 1024u)
      call(api_.cu_function_set_attribute, function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
           static_cast<int>(geometry.dynamic_shared_bytes));
    call(api_.launch_kernel, function, geometry.grid[0], geometry.grid[1], geometry.grid[2], geometry.block[0],
         geometry.block[1], geometry.block[2], geometry.dynamic_shared_bytes, stream, args, nullptr);
  }

  void* allocate(int ordinal, std::size_t bytes) override {
    if (bytes == 0) fail(ErrorCode::invalid_argument, "allocate: bytes must be > 0");
    const Scope scope(*this, ordinal);
    DevicePointer pointer = nullptr;
    call(api_.mem_alloc, &pointer, bytes);
    return pointer;
  }

  void free(int ordinal, void* pointer) noexcept override {
    if (pointer == nullptr) return;
    release_quietly(ordinal, "free", api_.mem_free, pointer);
  }

  void copy_to_device(int ordinal, void* dst, const void* src, std::size_t bytes) override {
    const Scope scope(*this, ordinal);
    if (cuda())
      call(api_.cu_memcpy_htod, reinterpret_cast<CUdeviceptr>(dst), src, bytes);
    else
      call(api_.hip_memcpy, dst, src, bytes, hipMemcpyHostToDevice);
  }

  void copy_to_host(int ordinal, void* dst, const void* src, std::size_t bytes) override {
    const Scope scope(*this, ordinal);
    if (cuda())
      call(api_.cu_memcpy_dtoh, dst, reinterpret_cast<CUdeviceptr>(src), bytes);
    else
      call(api_.hip_memcpy, dst, src, bytes, hipMemcpyDeviceToHost);
  }

  void memset(int ordinal, void* dst, int value, std::size_t bytes, Stream stream) override {
    const Scope scope(*this, ordinal);
    if (cuda())
      call(api_.cu_memset_d8_async, reinterpret_cast<CUdeviceptr>(dst), static_cast<unsigned char>(value), bytes, stream);
    else
      call(api_.hip_memset_async, dst, value, bytes, stream);
  }

  void synchronize(int ordinal, Stream stream) override {
    const Scope scope(*this, ordinal);
    call(api_.stream_synchronize, stream);
  }

  bool stream_is_capturing(int ordinal, Stream stream) override {
    const Scope scope(*this, ordinal);
    int status = 0;
    call(api_.stream_is_capturing, stream, &status);
    return status != 0;  // active, or invalidated: still inside a capture sequence either way
  }

  void* create_event(int ordinal) override {
    const Scope scope(*this, ordinal);
    Event event = nullptr;
    if (cuda())
      call(api_.cu_event_create, &event, CU_EVENT_DEFAULT);
    else
      call(api_.hip_event_create, &event);
    return event;
  }

  void destroy_event(int ordinal, void* event) noexcept override {
    if (event == nullptr) return;
    release_quietly(ordinal, "destroy_event", api_.event_destroy, event);
  }

  void record_event(int ordinal, void* event, Stream stream) override {
    const Scope scope(*this, ordinal);
    call(api_.event_record, event, stream);
  }

  float elapsed_ms(int ordinal, void* start, void* stop) override {
    const Scope scope(*this, ordinal);
    call(api_.event_synchronize, stop);
    float milliseconds = 0.0f;
    call(api_.event_elapsed_time, &milliseconds, start, stop);
    return milliseconds;
  }

  // Tensor maps are a host-side encoding: no device or context involved.
  void encode_tensor_map(const TensorMapRequest& request, void* map) const override {
    if (!cuda()) return Device::encode_tensor_map(request, map);
    if (!api_.cu_tensor_map_encode_tiled.bound())
      fail(ErrorCode::unsupported, "encode_tensor_map: this CUDA driver has no cuTensorMapEncodeTiled (CUDA 12.0+)");
    if (request.rank < 1 || request.rank > 5)
      fail(ErrorCode::invalid_argument, "encode_tensor_map: rank {} is not one of 1..5", request.rank);
    const int swizzle = request.swizzle_bytes == 0     ? 0
                        : request.swizzle_bytes == 32  ? 1
                        : request.swizzle_bytes == 64  ? 2
                        : request.swizzle_bytes == 128 ? 3
                                                       : -1;
    if (swizzle < 0)
      fail(ErrorCode::invalid_argument, "encode_tensor_map: swizzle_bytes {} is not one of 0, 32, 64, 128",
           request.swizzle_bytes);
    const unsigned element_strides[5] = {1, 1, 1, 1, 1};
    const Result result = api_.cu_tensor_map_encode_tiled(
        map, CU_TENSOR_MAP_DATA_TYPE_UINT8, static_cast<unsigned>(request.rank), const_cast<void*>(request.base),
        request.sizes.data(), request.strides.data(), request.box.data(), element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
        swizzle, CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (result != kSuccess)
      fail(ErrorCode::invalid_argument,
           "cuTensorMapEncodeTiled rejected the map (rank {}, sizes [{}], byte strides [{}], box [{}], swizzle {}): {}",
           request.rank, fmt::join(std::span(request.sizes).first(request.rank), ", "),
           fmt::join(std::span(request.strides).first(request.rank - 1), ", "),
           fmt::join(std::span(request.box).first(request.rank), ", "), request.swizzle_bytes, error_name(result));
  }

  const VendorTable& table() const noexcept { return vendor_; }
  const Calls& api() const noexcept { return api_; }

  // Calls `symbol`; throws Error(device_error) "<api> call <symbol> failed: <error_name>" unless it succeeds.
  template <typename Signature, typename... Args>
  void call(const Symbol<Signature>& symbol, Args... args) const {
    const Result result = symbol(args...);
    if (result != kSuccess) fail(ErrorCode::device_error, "{} call {} failed: {}", vendor_.api, symbol.name, error_name(result));
  }

  // Validates the ordinal and makes its device current on this thread for one call.
  class Scope {
   public:
    Scope(const DriverDevice& device, int ordinal) : device_(device) {
      device.check_ordinal(ordinal);
      previous_ = device.make_current(ordinal);
    }
    ~Scope() { device_.restore(previous_); }
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    const DriverDevice& device_;
    Previous previous_;
  };

  // ---- vendor differences ----

  // "CUDA_ERROR_INVALID_VALUE (invalid argument)"; the number when the library cannot name it.
  std::string error_name(Result result) const {
    const char* name = nullptr;
    const char* text = nullptr;
    if (cuda()) {
      if (api_.cu_error_name(result, &name) != kSuccess) name = nullptr;
      if (name != nullptr && api_.cu_error_string(result, &text) != kSuccess) text = nullptr;
    } else {
      name = api_.hip_error_name(result);
      text = api_.hip_error_string(result);
    }
    if (name == nullptr) return fmt::format("{} {}", vendor_.result_type, result);
    if (text == nullptr) return name;
    return fmt::format("{} ({})", name, text);
  }

 private:
  bool cuda() const noexcept { return vendor_.vendor == Vendor::nvidia; }

  // "CUDA driver 13.0" / "HIP 6.4.1" from what driver_version answered.
  std::string format_version(int version) const {
    if (cuda()) return fmt::format("CUDA driver {}.{}", version / 1000, (version % 1000) / 10);
    // HIP_VERSION = major * 10'000'000 + minor * 100'000 + patch
    return fmt::format("HIP {}.{}.{}", version / 10000000, (version / 100000) % 100, version % 100000);
  }

  // The handle device queries take for a (validated) ordinal; HIP's take the ordinal itself.
  int device_handle(int ordinal) const {
    if (!cuda()) return ordinal;
    int device = 0;
    call(api_.cu_device_get, &device, ordinal);
    return device;
  }

  // DeviceInfo.target (arch) and .full_target (as reported, feature suffixes kept).
  void read_target(DeviceInfo& info, int device) const {
    if (cuda()) {
      const int major = attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device);
      const int minor = attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device);
      info.target = fmt::format("sm_{}{}", major, minor);
      info.full_target = info.target;
      return;
    }
    info.full_target = hip_arch_name(device);
    info.target = std::string(target_arch(info.full_target));
  }

  // gcnArchName with its feature suffixes, read from whichever hipDeviceProp_t layout we called.
  std::string hip_arch_name(int ordinal) const {
    const bool r0600 = api_.hip_device_properties.newer_bound;
    std::vector<unsigned char> buffer(kDevicePropBufferBytes, 0);
    const Result result = api_.hip_device_properties(buffer.data(), ordinal);
    if (result != kSuccess)
      fail(ErrorCode::device_error, "{} call {} failed: {}", vendor_.api,
           r0600 ? api_.hip_device_properties.newer : api_.hip_device_properties.name, error_name(result));
    const char* text = reinterpret_cast<const char*>(buffer.data() + (r0600 ? kArchNameOffsetR0600 : kArchNameOffsetR0000));
    const std::string arch(text, ::strnlen(text, kArchNameLength));
    if (!is_amd_target(arch))
      fail(ErrorCode::device_error,
           "HIP device {}: gcnArchName '{}' is not a gfx target ({} layout, {}); this HIP runtime's "
           "hipDeviceProp_t layout is not one sagejit knows",
           ordinal, arch, r0600 ? "R0600" : "ROCm 5", version_);
    return arch;
  }

  // CUDA: a different context that the caller had current is restored afterwards; when none was
  // current, the primary context stays current, which is exactly what the CUDA runtime would have done.
  Previous make_current(int ordinal) const {
    Previous previous;
    if (!cuda()) {
      call(api_.hip_get_device, &previous.ordinal);
      if (previous.ordinal != ordinal) {
        call(api_.hip_set_device, ordinal);
        previous.restore = true;
      }
      return previous;
    }
    const CUcontext wanted = primary_context(ordinal);
    call(api_.cu_context_get_current, &previous.context);
    if (previous.context != wanted) {
      call(api_.cu_context_set_current, wanted);
      previous.restore = previous.context != nullptr;
    }
    return previous;
  }

  void restore(const Previous& previous) const noexcept {
    if (!previous.restore) return;
    const Result result =
        cuda() ? api_.cu_context_set_current(previous.context) : api_.hip_set_device(previous.ordinal);
    if (result != kSuccess) log::warn("restoring the caller's {} failed: {}", vendor_.current, error_name(result));
  }

  // Retained once per device for the life of the process (never released: PyTorch and others keep
  // using it, and releasing at exit races the driver's own teardown).
  CUcontext primary_context(int ordinal) const {
    const int device = device_handle(ordinal);
    std::lock_guard lock(context_mutex_);
    if (contexts_.size() <= static_cast<std::size_t>(ordinal)) contexts_.resize(static_cast<std::size_t>(ordinal) + 1);
    CUcontext& context = contexts_[static_cast<std::size_t>(ordinal)];
    if (context == nullptr) call(api_.cu_primary_context_retain, &context, device);
    return context;
  }

  // ---- the same for both ----

  // free and destroy_event are noexcept (destructors call them): a failure is logged, not thrown.
  template <typename Signature>
  void release_quietly(int ordinal, const char* what, const Symbol<Signature>& release, void* handle) noexcept {
    try {
      const Scope scope(*this, ordinal);
      const Result result = release(handle);
      if (result != kSuccess) log::warn("{} failed: {}", release.name, error_name(result));
    } catch (const std::exception& error) {
      log::warn("{} on {} device {}: {}", what, vendor_.name, ordinal, error.what());
    }
  }

  std::string describe_no_device() const {
    return init_error_.empty() ? fmt::format("{} ({}) reports 0 devices", vendor_.runtime_noun, library_.path())
                               : init_error_;
  }

  void check_ordinal(int ordinal) const {
    if (ordinal < 0 || ordinal >= count_)
      fail(ErrorCode::invalid_argument, "{} device ordinal {} is out of range: {} device(s) present{}", vendor_.name,
           ordinal, count_, count_ == 0 ? fmt::format(" ({})", describe_no_device()) : std::string());
  }

  int attribute(int which, int device) const {
    int value = 0;
    call(api_.device_attribute, &value, which, device);
    return value;
  }

  DynamicLibrary library_;
  const VendorTable& vendor_;
  Calls api_;
  std::string version_;
  std::string init_error_;
  int count_ = 0;
  mutable std::mutex context_mutex_;
  mutable std::vector<CUcontext> contexts_;  // CUDA: each device's primary context, once retained
};

DriverModule::~DriverModule() {
  try {
    const DriverDevice::Scope scope(device_, ordinal_);
    const Result result = device_.api().module_unload(module_);
    if (result != kSuccess) log::debug("{} failed: {}", device_.api().module_unload.name, device_.error_name(result));
  } catch (const std::exception& error) {
    log::debug("unloading a {} module: {}", device_.table().name, error.what());
  }
}

void* DriverModule::function(const std::string& name) {
  const DriverDevice::Scope scope(device_, ordinal_);
  Function function = nullptr;
  const Result result = device_.api().module_get_function(&function, module_, name.c_str());
  if (result != kSuccess)
    fail(ErrorCode::device_error, "{} call {}(\"{}\") failed: {}", device_.table().api,
         device_.api().module_get_function.name, name, device_.error_name(result));
  return function;
}

}  // namespace

LoadedLibrary<Device> load_driver_device(const VendorTable& vendor) {
  return load_library<Device, DriverDevice>(vendor.open(), vendor);
}

}  // namespace sagejit
