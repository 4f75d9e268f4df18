#pragma once
// Host half of the matrix-instruction layout probes (kernel_src/probe_gfx12.hip, probe_sm80.cu; run by
// sagejit-selftest through tools/support/mma_probe.cpp): the probe's input buffers, sized as the probe
// kernels read them, and the accumulators each lane must hold if the fragment index functions of
// arch/mma_gfx12.h / arch/mma_sm80.h describe the hardware. Kept apart from the launch so a host test
// (tests/test_mma_probe_reference.cpp) runs it on every layout with or without a GPU.
#include <cstdint>
#include <random>
#include <vector>

namespace sagejit {

// gfx12 probe buffers (row-major), as probe_gfx12.hip documents them. Key block 0 of the S^T
// accumulator and of the V^T operand spans a whole aligned group of 32 keys (sj_g12_key_slot puts
// rows 8-15 at keys 16-23), so the K and V^T buffers hold 32 keys.
inline constexpr int gfx12_probe_keys = 32;      // K rows, V rows, P columns
inline constexpr int gfx12_probe_queries = 16;   // Q rows, P rows
inline constexpr int gfx12_probe_channels = 32;  // K and Q columns (two WMMA steps' worth; step 0 is used)
inline constexpr int gfx12_probe_v_channels = 16;

struct Gfx12ProbeData {
  std::vector<std::int8_t> k8;  // [gfx12_probe_keys][gfx12_probe_channels]
  std::vector<std::int8_t> q8;  // [gfx12_probe_queries][gfx12_probe_channels]
  std::vector<std::uint8_t> v8;  // E4M3 [gfx12_probe_keys][gfx12_probe_v_channels]
  std::vector<std::uint8_t> p8;  // E4M3 [gfx12_probe_queries][gfx12_probe_keys]
  std::vector<int> s_expected;   // [32 lanes][8 VGPRs]: S^T accumulator of step 0, key block 0
  std::vector<float> o_expected;  // [32 lanes][8 VGPRs]: O^T accumulator of channel block 0, key block 0
};

struct Sm80ProbeData {
  std::vector<std::int8_t> a8, b8;       // [16][32], [32][8]
  std::vector<std::uint8_t> ae, be;      // E4M3 [16][32], [32][8]
  std::vector<std::uint16_t> a16, b16;   // fp16 [16][16], [16][8]
  std::vector<int> s8_expected;          // [32 lanes][4]
  std::vector<float> e4m3_expected, f16_expected;
};

// Random inputs (small values, so every fp32 sum is exact) and the expected accumulators. Every
// buffer index the reference forms is bounds-checked: an index function that reaches past a probe
// buffer throws Error(internal) naming the buffer instead of reading past it.
Gfx12ProbeData gfx12_probe_data(std::mt19937& rng);
Sm80ProbeData sm80_probe_data(std::mt19937& rng);

}  // namespace sagejit
