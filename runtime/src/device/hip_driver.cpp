// The HIP side of the driver-API Device (driver_device.cpp), and hip_device(). A call switches to
// its device with hipSetDevice and switches back, so the caller's current device is left as it was.
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/log.hpp"
#include "device/driver_vendor.hpp"
#include "device/hip_api.hpp"
#include "platform/runtime_discovery.hpp"

namespace sagejit {
namespace {

using namespace hip_api;

class HipRuntime final : public DriverVendor {
 public:
  explicit HipRuntime(const DynamicLibrary& library)
      : DriverVendor(library, {.vendor = Vendor::amd, .name = "HIP", .api = "HIP", .runtime_noun = "the HIP runtime"},
                     driver_api::kHipNames,
                     {hipDeviceAttributeMultiprocessorCount, hipDeviceAttributeMaxSharedMemoryPerBlock,
                      -1 /* no opt-in on AMD */, hipDeviceAttributeWarpSize}) {
    library.resolve(hip_.hipGetErrorName, "hipGetErrorName");
    library.resolve(hip_.hipGetErrorString, "hipGetErrorString");
    library.resolve(hip_.hipGetDevice, "hipGetDevice");
    library.resolve(hip_.hipSetDevice, "hipSetDevice");
    library.resolve_optional(hip_.hipGetDeviceProperties, "hipGetDevicePropertiesR0600");
    hip_.props_is_r0600 = hip_.hipGetDeviceProperties != nullptr;
    if (!hip_.props_is_r0600) library.resolve(hip_.hipGetDeviceProperties, "hipGetDeviceProperties");
    library.resolve(hip_.hipMemcpy, "hipMemcpy");
    library.resolve(hip_.hipMemsetAsync, "hipMemsetAsync");
    library.resolve(hip_.hipEventCreate, "hipEventCreate");
  }

  std::string error_name(driver_api::Result result) const override {
    const char* name = hip_.hipGetErrorName != nullptr ? hip_.hipGetErrorName(result) : nullptr;
    const char* text = hip_.hipGetErrorString != nullptr ? hip_.hipGetErrorString(result) : nullptr;
    if (name == nullptr) return fmt::format("hipError_t {}", result);
    if (text == nullptr) return name;
    return fmt::format("{} ({})", name, text);
  }

  std::string format_version(int version) const override {
    // HIP_VERSION = major * 10'000'000 + minor * 100'000 + patch
    return fmt::format("HIP {}.{}.{}", version / 10000000, (version / 100000) % 100, version % 100000);
  }

  // HIP's device queries take the ordinal itself.
  int device_handle(int ordinal) const override { return ordinal; }

  void read_target(DeviceInfo& info, int device) const override {
    info.full_target = arch_name(device);
    info.target = std::string(target_arch(info.full_target));
  }

  int current_device() const override {
    int ordinal = 0;
    check(hip_.hipGetDevice(&ordinal), "hipGetDevice");
    return ordinal;
  }

  Previous make_current(int ordinal) const override {
    Previous previous;
    check(hip_.hipGetDevice(&previous.ordinal), "hipGetDevice");
    if (previous.ordinal != ordinal) {
      check(hip_.hipSetDevice(ordinal), "hipSetDevice");
      previous.restore = true;
    }
    return previous;
  }

  void restore(const Previous& previous) const noexcept override {
    if (!previous.restore) return;
    const driver_api::Result result = hip_.hipSetDevice(previous.ordinal);
    if (result != driver_api::kSuccess) log::warn("restoring the caller's HIP device failed: {}", error_name(result));
  }

  // LDS has no opt-in on AMD: the launch asks for what it needs.
  void prepare_launch(driver_api::Function, unsigned) const override {}

  void copy_to_device(void* dst, const void* src, std::size_t bytes) const override {
    check(hip_.hipMemcpy(dst, src, bytes, hipMemcpyHostToDevice), "hipMemcpy");
  }

  void copy_to_host(void* dst, const void* src, std::size_t bytes) const override {
    check(hip_.hipMemcpy(dst, src, bytes, hipMemcpyDeviceToHost), "hipMemcpy");
  }

  void memset(void* dst, int value, std::size_t bytes, driver_api::Stream stream) const override {
    check(hip_.hipMemsetAsync(dst, value, bytes, stream), "hipMemsetAsync");
  }

  driver_api::Event create_event() const override {
    driver_api::Event event = nullptr;
    check(hip_.hipEventCreate(&event), "hipEventCreate");
    return event;
  }

 private:
  // gcnArchName with its feature suffixes, read from whichever hipDeviceProp_t layout we called.
  std::string arch_name(int ordinal) const {
    std::vector<unsigned char> buffer(kDevicePropBufferBytes, 0);
    check(hip_.hipGetDeviceProperties(buffer.data(), ordinal),
          hip_.props_is_r0600 ? "hipGetDevicePropertiesR0600" : "hipGetDeviceProperties");
    const std::size_t offset = hip_.props_is_r0600 ? kArchNameOffsetR0600 : kArchNameOffsetR0000;
    const char* text = reinterpret_cast<const char*>(buffer.data() + offset);
    const std::string arch(text, ::strnlen(text, kArchNameLength));
    if (!is_amd_target(arch)) {
      int version = 0;
      const std::string runtime = api().driver_version(&version) == driver_api::kSuccess ? format_version(version)
                                                                                          : "HIP (version unknown)";
      fail(ErrorCode::device_error,
           "HIP device {}: gcnArchName '{}' is not a gfx target ({} layout, {}); this HIP runtime's "
           "hipDeviceProp_t layout is not one sagejit knows",
           ordinal, arch, hip_.props_is_r0600 ? "R0600" : "ROCm 5", runtime);
    }
    return arch;
  }

  hip_api::Functions hip_;
};

}  // namespace

Device& hip_device() {
  // Loaded once; a failure is remembered so every call reports the same, complete reason. Never
  // destroyed: unloading the HIP runtime during static destruction races its own teardown.
  // Which HIP runtime is platform/runtime_discovery's rule: one per process, the one already loaded first.
  static const auto* outcome = new LoadedLibrary<Device>(load_driver_device(
      {[] { return open_runtime_library(RuntimeLibrary::hip_runtime); },
       [](const DynamicLibrary& library) -> std::shared_ptr<DriverVendor> { return std::make_shared<HipRuntime>(library); }}));
  return outcome->get();
}

}  // namespace sagejit
