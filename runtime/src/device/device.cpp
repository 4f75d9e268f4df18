#include "device/device.hpp"

#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.hpp"

namespace sagejit {

namespace {

// Returns the backend when it loads and has a device; otherwise appends why not to `reasons`.
Device* usable_backend(Device& (*backend)(), const char* label, std::vector<std::string>& reasons) {
  try {
    Device& device = backend();
    if (device.device_count() > 0) return &device;
    reasons.push_back(fmt::format("{}: {} loaded from {} but reports 0 devices", label, device.runtime_version(),
                                  device.library_path()));
  } catch (const Error& error) {
    reasons.push_back(fmt::format("{}: {}", label, error.what()));
  }
  return nullptr;
}

}  // namespace

void Device::encode_tensor_map(const TensorMapRequest&, void*) const {
  fail(ErrorCode::unsupported, "encode_tensor_map: the {} runtime ({}) has no tensor maps", to_string(vendor()),
       runtime_version());
}

Device& default_device() {
  std::vector<std::string> reasons;
  if (Device* cuda = usable_backend(&cuda_device, "CUDA", reasons)) return *cuda;
  if (Device* hip = usable_backend(&hip_device, "HIP", reasons)) return *hip;
  fail(ErrorCode::runtime_not_found, "no GPU runtime with a device was found (CUDA, then HIP). {}",
       fmt::join(reasons, ". "));
}

}  // namespace sagejit
