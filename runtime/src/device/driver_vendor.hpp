#pragma once
// What one GPU vendor's driver-level API does differently, behind the one Device implementation
// (driver_device.cpp): error naming, how a device is made current for a call, how the target is
// read, and the few calls whose signatures differ (copies, memset, event creation). Implemented by
// cuda_driver.cpp (CUDA driver API) and hip_driver.cpp (HIP module API).
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/target.hpp"
#include "device/device.hpp"
#include "device/driver_api.hpp"
#include "platform/dynlib.hpp"
#include "platform/library_loader.hpp"

namespace sagejit {

// hipDeviceAttribute_t / CUdevice_attribute values of the attributes DeviceInfo reports.
struct DriverAttributes {
  int compute_units;
  int shared_memory_per_block;
  int shared_memory_per_block_optin;  // < 0: no opt-in (AMD), the plain limit is reported
  int warp_size;
};

struct DriverLabels {
  Vendor vendor;
  std::string_view name;          // "CUDA": "CUDA device ordinal 3 is out of range", "CUDA backend: ..."
  std::string_view api;           // "CUDA driver": "CUDA driver call X failed", "CUDA driver 13.0"
  std::string_view runtime_noun;  // "the CUDA driver": "<noun> (<path>) reports 0 devices"
};

class DriverVendor {
 public:
  DriverVendor(const DynamicLibrary& library, const DriverLabels& labels, const driver_api::Names& names,
               const DriverAttributes& attributes);
  virtual ~DriverVendor() = default;
  DriverVendor(const DriverVendor&) = delete;
  DriverVendor& operator=(const DriverVendor&) = delete;

  const DriverLabels& labels() const noexcept { return labels_; }
  const driver_api::Names& names() const noexcept { return names_; }
  const driver_api::Functions& api() const noexcept { return api_; }
  const DriverAttributes& attributes() const noexcept { return attributes_; }

  // "CUDA_ERROR_INVALID_VALUE (invalid argument)"; the number when the library cannot name it.
  virtual std::string error_name(driver_api::Result result) const = 0;
  // Throws Error(device_error) "<api> call <call> failed: <error_name>" unless result is success.
  void check(driver_api::Result result, std::string_view call) const;

  // "CUDA driver 13.0" from what driver_version answered.
  virtual std::string format_version(int version) const = 0;
  // The handle device queries take for a (validated) ordinal.
  virtual int device_handle(int ordinal) const = 0;
  // DeviceInfo.target (arch) and .full_target (as reported, feature suffixes kept).
  virtual void read_target(DeviceInfo& info, int device) const = 0;
  // The ordinal current on the calling thread; there is at least one device.
  virtual int current_device() const = 0;

  // What was current before a call switched to its device; restored when the call ends.
  struct Previous {
    void* context = nullptr;  // CUDA: the caller's context
    int ordinal = 0;          // HIP: the caller's device
    bool restore = false;
  };
  virtual Previous make_current(int ordinal) const = 0;
  virtual void restore(const Previous& previous) const noexcept = 0;

  // Called with the device current, before every launch (CUDA: opt in to large shared memory).
  virtual void prepare_launch(driver_api::Function function, unsigned dynamic_shared_bytes) const = 0;
  virtual void copy_to_device(void* dst, const void* src, std::size_t bytes) const = 0;
  virtual void copy_to_host(void* dst, const void* src, std::size_t bytes) const = 0;
  virtual void memset(void* dst, int value, std::size_t bytes, driver_api::Stream stream) const = 0;
  virtual driver_api::Event create_event() const = 0;
  // Device::encode_tensor_map; this default has none (HIP).
  virtual void encode_tensor_map(const TensorMapRequest& request, void* map) const;

 private:
  DriverLabels labels_;
  const driver_api::Names& names_;
  driver_api::Functions api_;
  DriverAttributes attributes_;
};

// One vendor's library: how to open it and how to wrap it once loaded.
struct DriverLibrary {
  OpenedLibrary (*open)();  // the library, or why there is none
  std::shared_ptr<DriverVendor> (*make_vendor)(const DynamicLibrary& library);  // throws Error naming a missing symbol
};

// Opens the library and builds the Device over it (driver_device.cpp); a failure is kept with its
// reason (see platform/library_loader.hpp).
LoadedLibrary<Device> load_driver_device(const DriverLibrary& library);

}  // namespace sagejit
