#pragma once
// The matrix-instruction layout probe of sagejit-selftest: runs kernel_src/probe_gfx12.hip (RDNA4
// WMMA iu8 + fp8) or kernel_src/probe_sm80.cu (mma.sync s8, e4m3, f16) on known random inputs and
// checks every lane's accumulators against what the kernels' fragment index functions
// (arch/mma_gfx12.h, arch/mma_sm80.h) say they hold. A mismatch means the attention kernels would
// compute garbage on this GPU/driver, so it is checked before anything else.
#include <string>
#include <vector>

#include "cache/code_cache.hpp"
#include "device/device.hpp"

namespace sagejit::tools {

struct ProbeCheck {
  std::string instruction;  // "wmma iu8 16x16x16", "mma.sync m16n8k32 s8", ...
  bool passed = false;
  std::string detail;       // first mismatch: lane, register, expected, got
};

// Throws Error(unsupported) when no probe exists for the device's target.
std::vector<ProbeCheck> run_mma_probe(Device& device, int ordinal, CodeCache& cache, unsigned seed);

}  // namespace sagejit::tools
