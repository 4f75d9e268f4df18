// Sources of the numbers (also listed in docs/RDNA4.md, "ISA cost report"):
//  [gpuopen]  AMD GPUOpen, "Using the Matrix Cores of AMD RDNA 4 architecture GPUs": per CU per clock
//             1024 FP16/BF16 and 2048 INT8 (and FP8) dense ops on the RX 9070 XT. A 16x16x16 WMMA is
//             8192 ops; a CU has 2 SIMD32s, so 8-bit WMMA takes 8192 / 1024 = 8 cycles of a SIMD and
//             16-bit WMMA 16 cycles. AMD's matrix instruction calculator (docs/RDNA4.md, "gfx12 WMMA") gives
//             the same 4096 ops per WGP per cycle for iu8/fp8.
//  [isa]      AMD "RDNA4 Instruction Set Architecture" reference guide (doc 70651, 2025): wave32 VALU
//             on a 32-lane SIMD issues one instruction per cycle; VOPD (v_dual_*) issues two
//             operations in one instruction; s_delay_alu's TRANS32_DEP class and the separate
//             transcendental dependency tracking show transcendentals run beside the main VALU.
//  [llvm]     LLVM AMDGPU scheduling model (llvm/lib/Target/AMDGPU/SISchedule.td): "F16 or F32
//             transcendental instructions (these are quarter rate)" (WriteTrans32); GFX12SpeedModel
//             gives 32-bit VALU a 5-cycle and trans a 9-cycle latency (latencies only: hidden by waves
//             here). It has no WMMA throughput for gfx12 (llvm-mca prices a WMMA at 1 cycle), hence
//             [gpuopen] for WMMA.
//  [spec]     RX 9070 XT: 64 CUs, boost 2970 MHz, 1557 peak INT4-sparse TOPS (= 64 x 8192 x 2.97 GHz);
//             Radeon AI PRO R9700: 64 CUs, 1531 peak TOPS, i.e. a 2920 MHz boost clock; RX 9060 XT
//             (gfx1200): 32 CUs, boost 3130 MHz (AMD product pages, as listed on Wikipedia "RDNA 4").
//  [occupancy] 1536 VGPRs per SIMD lane in wave32, allocation granule 24, 16 waves max, 128 KiB LDS per
//             WGP: LLVM AMDGPUBaseInfo (FeatureGFX11FullVGPRs) and the compiler's own "; Occupancy"
//             figures for these kernels (docs/RDNA4.md table).
//  [lds]      RDNA whitepaper: the LDS serves 128 bytes per clock per CU (assumed unchanged on RDNA4).
#include "dev/rdna4_cost_model.hpp"

#include <algorithm>

namespace sagejit::isa {

ModeledCost model_cost(const ClassCounts& c, const Rdna4CostModel& m) {
  ModeledCost cost;
  cost.wmma_cycles = (c[InstrClass::wmma_iu8] + c[InstrClass::wmma_fp8]) * m.wmma_8bit_cycles +
                     c[InstrClass::wmma_16bit] * m.wmma_16bit_cycles + c[InstrClass::wmma_iu4] * m.wmma_iu4_cycles;
  cost.valu_issue_cycles = c[InstrClass::valu] * m.valu_cycles + c[InstrClass::vopd] * m.vopd_cycles +
                           c[InstrClass::trans] * m.trans_issue_cycles + c[InstrClass::valu_f64] * m.valu_f64_cycles;
  cost.trans_unit_cycles = c[InstrClass::trans] * m.trans_unit_cycles;
  cost.simd_cycles = cost.wmma_cycles + std::max(cost.valu_issue_cycles, cost.trans_unit_cycles);
  cost.lds_cycles = c.lds_bytes_per_lane * 32.0 / m.lds_bytes_per_cycle;
  cost.cycles = std::max(cost.simd_cycles, cost.lds_cycles);
  cost.wmma_share = cost.cycles > 0 ? cost.wmma_cycles / cost.cycles : 0.0;
  return cost;
}

double modeled_cycles(const ClassCounts& counts) { return model_cost(counts).cycles; }

int waves_per_simd(int vgprs, int lds_bytes, int waves_per_group) {
  constexpr int kVgprsPerSimd = 1536, kGranule = 24, kMaxWaves = 16, kLdsPerWgp = 128 * 1024, kSimdsPerWgp = 4;
  const int allocated = std::max(kGranule, (vgprs + kGranule - 1) / kGranule * kGranule);
  const int by_vgprs = std::min(kMaxWaves, kVgprsPerSimd / allocated);
  // Whole workgroups per WGP, limited by LDS and by the VGPR-bound waves of its 4 SIMDs.
  int groups = waves_per_group > 0 ? by_vgprs * kSimdsPerWgp / waves_per_group : 0;
  if (lds_bytes > 0) groups = std::min(groups, kLdsPerWgp / lds_bytes);
  return std::min(by_vgprs, groups * waves_per_group / kSimdsPerWgp);
}

double Rdna4Device::peak_tops() const { return compute_units * 2 * 1024.0 * boost_ghz * 1e9 / 1e12; }

const std::vector<Rdna4Device>& rdna4_devices() {
  static const std::vector<Rdna4Device> devices{
      {"Radeon AI PRO R9700 (gfx1201)", 64, 2.92},
      {"Radeon RX 9070 XT (gfx1201)", 64, 2.97},
      {"Radeon RX 9060 XT (gfx1200)", 32, 3.13},
  };
  return devices;
}

double predicted_tops(double ops_per_tile, double cycles_per_tile, const Rdna4Device& device) {
  if (cycles_per_tile <= 0) return 0;
  const double simds = device.compute_units * 2.0;
  return ops_per_tile / cycles_per_tile * simds * device.boost_ghz * 1e9 / 1e12;
}

}  // namespace sagejit::isa
