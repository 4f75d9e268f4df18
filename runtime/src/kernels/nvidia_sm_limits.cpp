#include "kernels/nvidia_sm_limits.hpp"

#include <algorithm>
#include <iterator>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace sagejit {
namespace {

constexpr unsigned KiB = 1024;

// NVIDIA's CUDA C++ Programming Guide, "Technical Specifications per Compute Capability": shared
// memory per block (opt-in) and per SM, the 1 KB reserved per block, resident warps per SM, registers
// per SM. sm_120 (consumer Blackwell) has sm_89's shared memory and warps, not sm_100's.
constexpr SmLimits sm_limits[] = {
    // sm, shared per block, shared per SM, reserved per block, warps per SM, registers per SM
    {80, 163 * KiB, 164 * KiB, KiB, 64, 65536},
    {86, 99 * KiB, 100 * KiB, KiB, 48, 65536},
    {87, 163 * KiB, 164 * KiB, KiB, 48, 65536},
    {89, 99 * KiB, 100 * KiB, KiB, 48, 65536},
    {90, 227 * KiB, 228 * KiB, KiB, 64, 65536},
    {100, 227 * KiB, 228 * KiB, KiB, 64, 65536},
    {103, 227 * KiB, 228 * KiB, KiB, 64, 65536},
    {120, 99 * KiB, 100 * KiB, KiB, 48, 65536},
};

}  // namespace

const SmLimits* find_sm_limits(const Target& target) {
  if (!target.is_nvidia()) return nullptr;
  const auto row = std::find_if(std::begin(sm_limits), std::end(sm_limits),
                                [&](const SmLimits& limits) { return limits.sm == target.sm; });
  return row == std::end(sm_limits) ? nullptr : row;
}

std::string missing_sm_limits(const Target& target) {
  std::vector<std::string> listed;
  for (const SmLimits& limits : sm_limits) listed.push_back(fmt::format("sm_{}", limits.sm));
  return fmt::format("no shared-memory, warp and register limits are listed for {} (listed: {}; "
                     "runtime/src/kernels/nvidia_sm_limits.cpp)",
                     target.arch, fmt::join(listed, ", "));
}

}  // namespace sagejit
