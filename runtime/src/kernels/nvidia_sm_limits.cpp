#include "kernels/nvidia_sm_limits.hpp"

#include <algorithm>
#include <iterator>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace sagejit {
namespace {

constexpr unsigned KiB = 1024;

// Public figures: NVIDIA's CUDA C++ Programming Guide, "Technical Specifications per Compute
// Capability" (shared memory per block with opt-in and per SM, the 1 KB the system reserves per block,
// resident warps and registers per SM), and for sm_100/sm_120 the Blackwell Tuning Guide (sm_100: 227
// KB per block, 64 warps; sm_120, consumer Blackwell: 99 KB per block, 48 warps, like sm_89, not
// sm_100). sm_120's per-SM figure is the 100 KB its devices report usable as shared memory (the guide's
// 128 KB is the combined L1/shared capacity); no check of an sm_120 kernel reads it today.
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
