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

CallDevice resolve_device(int ordinal) {
  Device& backend = default_device();
  // Device properties do not change while the process runs; query each ordinal once.
  static std::mutex mutex;
  static std::map<std::pair<Device*, int>, DeviceInfo> infos;
  CallDevice result{&backend, {}};
  {
    std::lock_guard lock(mutex);
    const auto found = infos.find({&backend, ordinal});
    if (found != infos.end()) {
      result.info = found->second;
    } else {
      const int count = backend.device_count();
      if (ordinal < 0 || ordinal >= count)
        fail(ErrorCode::invalid_argument, "device {} is out of range: the {} runtime has {} device(s) (0..{})",
             ordinal, to_string(backend.vendor()), count, count - 1);
      result.info = backend.info(ordinal);
      check_arch_has_kernels(result.info.target);
      infos.emplace(std::pair{&backend, ordinal}, result.info);
    }
  }
  return result;
}

}  // namespace sagejit
