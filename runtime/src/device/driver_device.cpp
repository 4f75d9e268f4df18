// The Device over a driver-level API: the CUDA driver API or the HIP module API, whose calls match
// one to one (driver_api.hpp); what differs is the DriverVendor (cuda_driver.cpp, hip_driver.cpp).
// Every call that acts on one device makes it current for the call and restores the caller's
// state afterwards, so a framework's (e.g. PyTorch's) current device or context is left as it was.
#include <algorithm>
#include <memory>
#include <string>
#include <utility>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/log.hpp"
#include "device/driver_vendor.hpp"

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
 public:
  DriverDevice(DynamicLibrary library, std::shared_ptr<DriverVendor> vendor)
      : library_(std::move(library)), vendor_(std::move(vendor)), api_(vendor_->api()), names_(vendor_->names()) {
    const auto& labels = vendor_->labels();
    int version = 0;
    if (api_.driver_version(&version) == kSuccess)
      version_ = vendor_->format_version(version);
    else
      version_ = fmt::format("{} (version unknown)", labels.api);
    // A machine with the library but no usable GPU (no device, no kernel driver, driver mismatch;
    // e.g. Debian's libamdhip64 on a build machine) is "0 devices" with the reason, not a failure to
    // load: default_device() then moves on and reports why.
    const Result init = api_.init(0);
    if (init != kSuccess) {
      init_error_ = fmt::format("{} failed: {}", names_.init, vendor_->error_name(init));
      log::info("{} backend: {} ({}); treating as 0 devices", labels.name, init_error_, library_.path());
      return;
    }
    int count = 0;
    const Result counted = api_.device_count(&count);
    if (counted != kSuccess) {
      init_error_ = fmt::format("{} failed: {}", names_.device_count, vendor_->error_name(counted));
      log::info("{} backend: {}; treating as 0 devices", labels.name, init_error_);
      return;
    }
    count_ = std::max(count, 0);
  }

  Vendor vendor() const override { return vendor_->labels().vendor; }
  std::string runtime_version() const override { return version_; }
  std::string library_path() const override { return library_.path(); }
  int device_count() const override { return count_; }
  std::string no_device_reason() const override { return count_ == 0 ? describe_no_device() : std::string(); }

  DeviceInfo info(int ordinal) const override {
    check_ordinal(ordinal);
    const int device = vendor_->device_handle(ordinal);
    const auto& ids = vendor_->attributes();
    DeviceInfo result;
    result.ordinal = ordinal;
    result.vendor = vendor();
    char name[256] = {};
    check(api_.device_name(name, static_cast<int>(sizeof(name) - 1), device), names_.device_name);
    result.name = name;
    vendor_->read_target(result, device);
    result.compute_units = attribute(ids.compute_units, device);
    result.shared_memory_per_block = static_cast<std::size_t>(attribute(ids.shared_memory_per_block, device));
    result.shared_memory_per_block_optin = ids.shared_memory_per_block_optin < 0
                                               ? result.shared_memory_per_block
                                               : static_cast<std::size_t>(attribute(ids.shared_memory_per_block_optin, device));
    result.warp_size = attribute(ids.warp_size, device);
    check(api_.device_total_memory(&result.total_memory, device), names_.device_total_memory);
    return result;
  }

  int current_device() const override {
    if (count_ == 0) fail(ErrorCode::runtime_not_found, "{}: no device ({})", vendor_->labels().name, describe_no_device());
    return vendor_->current_device();
  }

  std::unique_ptr<LoadedModule> load_module(int ordinal, std::span<const std::byte> code_object) override {
    if (code_object.empty()) fail(ErrorCode::invalid_argument, "load_module: code_object is empty");
    const Scope scope(*this, ordinal);
    Module module = nullptr;
    check(api_.module_load_data(&module, code_object.data()), names_.module_load_data);
    return std::make_unique<DriverModule>(*this, ordinal, module);
  }

  void launch(int ordinal, void* function, const LaunchGeometry& geometry, Stream stream, void** args) override {
    if (function == nullptr) fail(ErrorCode::invalid_argument, "launch: function is null");
    const Scope scope(*this, ordinal);
    vendor_->prepare_launch(function, geometry.dynamic_shared_bytes);
    check(api_.launch_kernel(function, geometry.grid[0], geometry.grid[1], geometry.grid[2], geometry.block[0],
                             geometry.block[1], geometry.block[2], geometry.dynamic_shared_bytes, stream, args, nullptr),
          names_.launch_kernel);
  }

  void* allocate(int ordinal, std::size_t bytes) override {
    if (bytes == 0) fail(ErrorCode::invalid_argument, "allocate: bytes must be > 0");
    const Scope scope(*this, ordinal);
    DevicePointer pointer = nullptr;
    check(api_.mem_alloc(&pointer, bytes), names_.mem_alloc);
    return pointer;
  }

  void free(int ordinal, void* pointer) noexcept override {
    if (pointer == nullptr) return;
    release_quietly(ordinal, "free", names_.mem_free, [&] { return api_.mem_free(pointer); });
  }

  void copy_to_device(int ordinal, void* dst, const void* src, std::size_t bytes) override {
    const Scope scope(*this, ordinal);
    vendor_->copy_to_device(dst, src, bytes);
  }

  void copy_to_host(int ordinal, void* dst, const void* src, std::size_t bytes) override {
    const Scope scope(*this, ordinal);
    vendor_->copy_to_host(dst, src, bytes);
  }

  void memset(int ordinal, void* dst, int value, std::size_t bytes, Stream stream) override {
    const Scope scope(*this, ordinal);
    vendor_->memset(dst, value, bytes, stream);
  }

  void synchronize(int ordinal, Stream stream) override {
    const Scope scope(*this, ordinal);
    check(api_.stream_synchronize(stream), names_.stream_synchronize);
  }

  bool stream_is_capturing(int ordinal, Stream stream) override {
    const Scope scope(*this, ordinal);
    int status = 0;
    check(api_.stream_is_capturing(stream, &status), names_.stream_is_capturing);
    return status != 0;  // active, or invalidated: still inside a capture sequence either way
  }

  void* create_event(int ordinal) override {
    const Scope scope(*this, ordinal);
    return vendor_->create_event();
  }

  void destroy_event(int ordinal, void* event) noexcept override {
    if (event == nullptr) return;
    release_quietly(ordinal, "destroy_event", names_.event_destroy, [&] { return api_.event_destroy(event); });
  }

  void record_event(int ordinal, void* event, Stream stream) override {
    const Scope scope(*this, ordinal);
    check(api_.event_record(event, stream), names_.event_record);
  }

  float elapsed_ms(int ordinal, void* start, void* stop) override {
    const Scope scope(*this, ordinal);
    check(api_.event_synchronize(stop), names_.event_synchronize);
    float milliseconds = 0.0f;
    check(api_.event_elapsed_time(&milliseconds, start, stop), names_.event_elapsed_time);
    return milliseconds;
  }

  void encode_tensor_map(const TensorMapRequest& request, void* map) const override {
    vendor_->encode_tensor_map(request, map);  // a host-side encoding: no device or context involved
  }

  const DriverVendor& driver() const noexcept { return *vendor_; }

  // Validates the ordinal and makes its device current on this thread for one call.
  class Scope {
   public:
    Scope(const DriverDevice& device, int ordinal) : vendor_(*device.vendor_) {
      device.check_ordinal(ordinal);
      previous_ = vendor_.make_current(ordinal);
    }
    ~Scope() { vendor_.restore(previous_); }
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    const DriverVendor& vendor_;
    DriverVendor::Previous previous_;
  };

 private:
  void check(Result result, const char* call) const { vendor_->check(result, call); }

  // free and destroy_event are noexcept (destructors call them): a failure is logged, not thrown.
  template <typename Release>
  void release_quietly(int ordinal, const char* what, const char* call, Release release) noexcept {
    try {
      const Scope scope(*this, ordinal);
      const Result result = release();
      if (result != kSuccess) log::warn("{} failed: {}", call, vendor_->error_name(result));
    } catch (const std::exception& error) {
      log::warn("{} on {} device {}: {}", what, vendor_->labels().name, ordinal, error.what());
    }
  }

  std::string describe_no_device() const {
    return init_error_.empty() ? fmt::format("{} ({}) reports 0 devices", vendor_->labels().runtime_noun, library_.path())
                               : init_error_;
  }

  void check_ordinal(int ordinal) const {
    if (ordinal < 0 || ordinal >= count_)
      fail(ErrorCode::invalid_argument, "{} device ordinal {} is out of range: {} device(s) present{}",
           vendor_->labels().name, ordinal, count_, count_ == 0 ? fmt::format(" ({})", describe_no_device()) : std::string());
  }

  int attribute(int which, int device) const {
    int value = 0;
    check(api_.device_attribute(&value, which, device), names_.device_attribute);
    return value;
  }

  DynamicLibrary library_;
  std::shared_ptr<DriverVendor> vendor_;
  const Functions& api_;
  const Names& names_;
  std::string version_;
  std::string init_error_;
  int count_ = 0;
};

DriverModule::~DriverModule() {
  const DriverVendor& driver = device_.driver();
  try {
    const DriverDevice::Scope scope(device_, ordinal_);
    const Result result = driver.api().module_unload(module_);
    if (result != kSuccess) log::debug("{} failed: {}", driver.names().module_unload, driver.error_name(result));
  } catch (const std::exception& error) {
    log::debug("unloading a {} module: {}", driver.labels().name, error.what());
  }
}

void* DriverModule::function(const std::string& name) {
  const DriverVendor& driver = device_.driver();
  const DriverDevice::Scope scope(device_, ordinal_);
  Function function = nullptr;
  const Result result = driver.api().module_get_function(&function, module_, name.c_str());
  if (result != kSuccess)
    fail(ErrorCode::device_error, "{} call {}(\"{}\") failed: {}", driver.labels().api,
         driver.names().module_get_function, name, driver.error_name(result));
  return function;
}

}  // namespace

LoadedLibrary<Device> load_driver_device(const DriverLibrary& library) {
  auto loaded = load_library<DriverDevice>(library.open(), library.make_vendor);
  return {std::move(loaded.loaded), std::move(loaded.error)};
}

}  // namespace sagejit
