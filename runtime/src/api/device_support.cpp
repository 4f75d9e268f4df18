#include "api/device_support.hpp"

#include <algorithm>
#include <map>
#include <mutex>

#include <fmt/ranges.h>

#include "core/error.hpp"
#include "kernels/registry.hpp"
#include "tuning/problem_key.hpp"
#include "tuning/tuning_table.hpp"

namespace sagejit {
namespace {

bool has_table(const std::string& arch) {
  const std::vector<std::string> archs = tuning_tables().archs();
  return std::find(archs.begin(), archs.end(), arch) != archs.end();
}

}  // namespace

std::vector<std::string> attention_archs() {
  std::vector<std::string> result;
  for (const std::string& arch : tuning_tables().archs())
    if (family_supports("attention", arch) && family_supports("prepare", arch)) result.push_back(arch);
  return result;
}

void check_arch_has_kernels(const std::string& target) {
  const std::string arch(target_arch(target));
  if (has_table(arch) && family_supports("attention", arch) && family_supports("prepare", arch)) return;
  fail(ErrorCode::unsupported, "device arch {} has no sagejit attention kernels; supported archs: [{}]", arch,
       fmt::join(attention_archs(), ", "));
}

namespace {

// Device properties do not change while the process runs: each ordinal is queried and checked once.
struct CheckedDevices {
  std::mutex mutex;
  std::map<std::pair<Device*, int>, DeviceInfo> infos;
};

CheckedDevices& checked_devices() {
  static CheckedDevices devices;
  return devices;
}

// The checked info of `ordinal` on `backend`, checking it on first use; the caller holds the mutex.
const DeviceInfo& checked_info(CheckedDevices& devices, Device& backend, int ordinal) {
  const auto found = devices.infos.find({&backend, ordinal});
  if (found != devices.infos.end()) return found->second;
  const int count = backend.device_count();
  if (ordinal < 0 || ordinal >= count)
    fail(ErrorCode::invalid_argument, "device {} is out of range: the {} runtime has {} device(s) (0..{})", ordinal,
         to_string(backend.vendor()), count, count - 1);
  DeviceInfo info = backend.info(ordinal);
  check_arch_has_kernels(info.target);
  return devices.infos.emplace(std::pair{&backend, ordinal}, std::move(info)).first->second;
}

}  // namespace

Device& checked_backend(int ordinal) {
  Device& backend = default_device();
  CheckedDevices& devices = checked_devices();
  const std::lock_guard lock(devices.mutex);
  checked_info(devices, backend, ordinal);
  return backend;
}

CallDevice resolve_device(int ordinal) {
  Device& backend = default_device();
  CheckedDevices& devices = checked_devices();
  const std::lock_guard lock(devices.mutex);
  return {&backend, checked_info(devices, backend, ordinal)};
}

}  // namespace sagejit
