#pragma once
// sagejit-selftest's measurement of the fp8 WMMA's effective accumulator precision on a gfx12 GPU:
// runs kernel_src/probe_gfx12.hip's sj_probe_gfx12_fp8_accumulation on the cases of
// dev/fp8_accumulation and analyses what the GPU wrote. The attention kernel's one-level PV
// accumulation (pv_into_output) is exact to the numerics contract only when both widths are fp32's.
#include "cache/code_cache.hpp"
#include "dev/fp8_accumulation.hpp"
#include "device/device.hpp"

namespace sagejit::tools {

// Throws Error(unsupported) for a device that is no gfx12.
Fp8AccumulationPrecision measure_fp8_accumulation(Device& device, int ordinal, CodeCache& cache);

}  // namespace sagejit::tools
