#pragma once
// A throughput model of one RDNA4 (gfx12) SIMD running an attention key loop, and the device figures
// that turn it into TOPS. Every number carries its source in docs/RDNA4.md ("ISA cost report") and in
// the comments of rdna4_cost_model.cpp; the model is deliberately simple (issue-slot accounting, no
// latencies: enough waves are assumed to hide them) so that a change of the ISA moves the figure for
// a reason one can read off the instruction counts.
#include <string>
#include <vector>

#include "dev/isa_key_loop.hpp"

namespace sagejit::isa {

struct Rdna4CostModel {
  double wmma_8bit_cycles = 8;    // v_wmma 16x16x16 iu8 / fp8 / bf8: 8192 ops at 1024 ops/clk/SIMD
  double wmma_16bit_cycles = 16;  // f16 / bf16: 512 FLOPs/clk/SIMD
  double wmma_iu4_cycles = 8;     // iu4 16x16x32 (same 8-cycle pass as iu8), swmmac
  double valu_cycles = 1;         // one wave32 VALU instruction on a SIMD32 (VOP1/2/3/3P, v_cmp, ...)
  double vopd_cycles = 1;         // v_dual_*: two operations in one issue
  double trans_issue_cycles = 1;  // a transcendental takes one VALU issue slot ...
  double trans_unit_cycles = 4;   // ... and keeps the quarter-rate transcendental unit busy 4 cycles
  double valu_f64_cycles = 32;    // FP64 at 1/32 of the FP32 rate
  double lds_bytes_per_cycle = 64;  // per SIMD: 128 B/clk LDS bandwidth per CU shared by its 2 SIMDs
};

// SIMD cycles of one wave's instruction counts: WMMA passes + max(VALU issue slots, transcendental
// unit). SALU, SMEM, LDS, VMEM, branches and waits issue from other arbiters in parallel and cost
// no SIMD cycles (they are reported, and LDS has its own bandwidth bound below).
struct ModeledCost {
  double wmma_cycles = 0, valu_issue_cycles = 0, trans_unit_cycles = 0, simd_cycles = 0;
  double lds_cycles = 0;      // LDS bandwidth bound of the same work
  double cycles = 0;          // max(simd_cycles, lds_cycles)
  double wmma_share = 0;      // wmma_cycles / cycles
};
ModeledCost model_cost(const ClassCounts& counts, const Rdna4CostModel& model = {});
double modeled_cycles(const ClassCounts& counts);  // model_cost(counts).cycles with the default model

// Resident waves per SIMD of a kernel (wave32): VGPRs allocated in granules of 24 out of 1536 per
// SIMD lane, at most 16 waves; LDS 128 KiB per WGP (4 SIMDs), whole workgroups of `waves_per_group`.
int waves_per_simd(int vgprs, int lds_bytes, int waves_per_group);

struct Rdna4Device {
  std::string name;
  int compute_units = 0;
  double boost_ghz = 0;
  // Dense INT8/FP8 WMMA peak: CUs x 2 SIMDs x 1024 ops/clk x clock.
  double peak_tops() const;
};
const std::vector<Rdna4Device>& rdna4_devices();  // R9700, RX 9070 XT (gfx1201), RX 9060 XT (gfx1200)

// TOPS of the attention math (4 * rows * keys * D ops per tile per wave) if every SIMD runs the
// modeled key loop back to back.
double predicted_tops(double ops_per_tile, double cycles_per_tile, const Rdna4Device& device);

}  // namespace sagejit::isa
