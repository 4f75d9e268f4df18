// The ISA cost report's counter and model (runtime/src/dev/isa_key_loop.cpp, rdna4_cost_model.cpp)
// on small hand-written llvm-objdump listings whose answers are worked out by hand below. No
// performance threshold: these check the arithmetic of the report, not the kernel.
#include <doctest/doctest.h>

#include <string>

#include "dev/isa_key_loop.hpp"
#include "dev/rdna4_cost_model.hpp"

using namespace sagejit::isa;

namespace {

// One listing line in llvm-objdump's format; `target` names a branch target offset in <k+0x..>.
std::string line(unsigned address, const std::string& text, int target = -1) {
  char buffer[128];
  std::snprintf(buffer, sizeof buffer, "\t%-50s // %012X: BF800000", text.c_str(), address);
  std::string out = buffer;
  if (target >= 0) {
    std::snprintf(buffer, sizeof buffer, " <k+0x%x>", static_cast<unsigned>(target));
    out += buffer;
  }
  return out + "\n";
}

// A key loop at k+0x10 .. k+0x44 (every instruction 4 bytes):
//   header: 2 iu8 WMMA, v_cvt, s_cmp, s_cbranch_scc1 over the mask block
//   mask:   v_cmp, v_cndmask x2                               (skipped on a full tile)
//   join:   v_exp x2, v_dual, v_max, 2 fp8 WMMA, ds_load_b128, global_load_b128, s_wait, s_add,
//           s_cmp, s_cbranch_scc1 back to the header
std::string sample_loop() {
  const unsigned base = 0x1000;
  std::string s = "0000000000001000 <k>:\n";
  s += line(base + 0x00, "s_load_b128 s[0:3], s[0:1], 0x0");
  s += line(base + 0x04, "v_mov_b32_e32 v1, 0");
  s += line(base + 0x08, "s_mov_b32 s4, 0");
  s += line(base + 0x0c, "s_nop 0");
  s += line(base + 0x10, "v_wmma_i32_16x16x16_iu8 v[0:7], v[8:9], v[10:11], v[0:7] neg_lo:[1,1,0]");
  s += line(base + 0x14, "v_wmma_i32_16x16x16_iu8 v[0:7], v[12:13], v[14:15], v[0:7] neg_lo:[1,1,0]");
  s += line(base + 0x18, "v_cvt_f32_i32_e32 v16, v0");
  s += line(base + 0x1c, "s_cmp_lg_u32 s5, 0");
  s += line(base + 0x20, "s_cbranch_scc1 3", 0x30);
  s += line(base + 0x24, "v_cmp_gt_i32_e32 vcc_lo, s6, v17");
  s += line(base + 0x28, "v_cndmask_b32_e32 v16, 0xff800000, v16, vcc_lo");
  s += line(base + 0x2c, "v_cndmask_b32_e32 v18, 0xff800000, v18, vcc_lo");
  s += line(base + 0x30, "v_exp_f32_e32 v16, v16");
  s += line(base + 0x34, "v_exp_f32_e32 v18, v18");
  s += line(base + 0x38, "v_dual_max_num_f32 v20, v16, v18 :: v_dual_add_f32 v21, v16, v18");
  s += line(base + 0x3c, "v_max_num_f32_e32 v22, v20, v21");
  s += line(base + 0x40, "v_wmma_f32_16x16x16_fp8_fp8 v[24:31], v[32:33], v[34:35], v[24:31]");
  s += line(base + 0x44, "v_wmma_f32_16x16x16_fp8_fp8 v[24:31], v[36:37], v[38:39], v[24:31]");
  s += line(base + 0x48, "ds_load_b128 v[40:43], v44");
  s += line(base + 0x4c, "global_load_b128 v[48:51], v52, s[0:1]");
  s += line(base + 0x50, "s_wait_loadcnt 0x0");
  s += line(base + 0x54, "s_add_co_i32 s4, s4, 1");
  s += line(base + 0x58, "s_cmp_lt_i32 s4, s7");
  s += line(base + 0x5c, "s_cbranch_scc1 65516", 0x10);
  s += line(base + 0x60, "global_store_b128 v52, v[24:27], s[2:3]");
  s += line(base + 0x64, "s_endpgm");
  return s;
}

}  // namespace

TEST_CASE("isa classes: WMMA kinds, VOPD, transcendental, scalar, memory, waits") {
  CHECK(classify("v_wmma_i32_16x16x16_iu8") == InstrClass::wmma_iu8);
  CHECK(classify("v_wmma_f32_16x16x16_fp8_fp8") == InstrClass::wmma_fp8);
  CHECK(classify("v_wmma_f32_16x16x16_bf8_fp8") == InstrClass::wmma_fp8);
  CHECK(classify("v_wmma_f32_16x16x16_bf16") == InstrClass::wmma_16bit);
  CHECK(classify("v_wmma_i32_16x16x32_iu4") == InstrClass::wmma_iu4);
  CHECK(classify("v_dual_mul_f32") == InstrClass::vopd);
  CHECK(classify("v_exp_f32_e32") == InstrClass::trans);
  CHECK(classify("v_rcp_f32_e32") == InstrClass::trans);
  CHECK(classify("v_fma_f64") == InstrClass::valu_f64);
  CHECK(classify("v_cvt_pk_fp8_f32") == InstrClass::valu);
  CHECK(classify("v_permlanex16_b32") == InstrClass::valu);
  CHECK(classify("v_minimum_f32") == InstrClass::valu);
  CHECK(classify("s_add_co_i32") == InstrClass::salu);
  CHECK(classify("s_load_b64") == InstrClass::smem);
  CHECK(classify("ds_load_b128") == InstrClass::lds);
  CHECK(classify("global_load_b128") == InstrClass::vmem);
  CHECK(classify("s_wait_loadcnt") == InstrClass::wait);
  CHECK(classify("s_waitcnt") == InstrClass::wait);
  CHECK(classify("s_wait_alu") == InstrClass::wait);
  CHECK(classify("s_barrier_signal") == InstrClass::barrier);
  CHECK(classify("s_cbranch_execz") == InstrClass::branch);
  CHECK(classify("s_delay_alu") == InstrClass::hint);
  CHECK(access_bytes_per_lane("ds_load_b128") == 16);
  CHECK(access_bytes_per_lane("ds_store_b64") == 8);
  CHECK(access_bytes_per_lane("global_load_b32") == 4);
  CHECK(access_bytes_per_lane("ds_load_2addr_b64") == 16);
}

TEST_CASE("isa key loop: parse, find the loop, count the steady and the heaviest trip") {
  const std::vector<Instruction> instructions = parse_objdump(sample_loop());
  REQUIRE(instructions.size() == 26);
  CHECK(instructions[8].is_branch);
  CHECK(instructions[8].conditional);
  REQUIRE(instructions[8].target.has_value());
  CHECK(*instructions[8].target == 0x1030);
  CHECK(instructions[8].mnemonic == "s_cbranch_scc1");
  CHECK(instructions[14].mnemonic == "v_dual_max_num_f32");

  const KeyLoop loop = find_key_loop(instructions, modeled_cycles);
  REQUIRE_MESSAGE(loop.found, loop.problem);
  CHECK(loop.begin == 0x1010);
  CHECK(loop.end == 0x105c);
  CHECK(loop.wmma_total == 4);

  // Steady trip: skips the mask block.
  const ClassCounts& s = loop.steady.counts;
  CHECK(s[InstrClass::wmma_iu8] == 2);
  CHECK(s[InstrClass::wmma_fp8] == 2);
  CHECK(s[InstrClass::valu] == 2);  // v_cvt, v_max
  CHECK(s[InstrClass::vopd] == 1);
  CHECK(s[InstrClass::trans] == 2);
  CHECK(s[InstrClass::salu] == 3);  // s_cmp_lg, s_add, s_cmp_lt
  CHECK(s[InstrClass::branch] == 2);
  CHECK(s[InstrClass::lds] == 1);
  CHECK(s[InstrClass::vmem] == 1);
  CHECK(s[InstrClass::wait] == 1);
  CHECK(s.lds_bytes_per_lane == 16);
  CHECK(s.instructions == 17);
  // Model: WMMA 4 x 8 = 32; VALU issue 2 + 1 + 2 (trans issue) = 5 < trans unit 2 x 4 = 8;
  // 32 + 8 = 40 cycles; LDS 16 B x 32 lanes / 64 B per cycle = 8 < 40.
  const ModeledCost steady = model_cost(s);
  CHECK(steady.wmma_cycles == doctest::Approx(32));
  CHECK(steady.valu_issue_cycles == doctest::Approx(5));
  CHECK(steady.trans_unit_cycles == doctest::Approx(8));
  CHECK(steady.lds_cycles == doctest::Approx(8));
  CHECK(steady.cycles == doctest::Approx(40));
  CHECK(steady.wmma_share == doctest::Approx(0.8));
  CHECK(loop.steady.modeled_cycles == doctest::Approx(40));

  // Heaviest trip: through the mask block (3 more VALU): issue 8 = trans 8, still 40 cycles... so
  // it is the same cost; the path differs by its counts.
  const ClassCounts& h = loop.heaviest.counts;
  CHECK(h[InstrClass::valu] == 5);
  CHECK(h.instructions == 20);
  CHECK(model_cost(h).cycles == doctest::Approx(40));

  // One more VALU on the heavy path tips it over the transcendental unit: 32 + 9.
  ClassCounts heavier = h;
  ++heavier[InstrClass::valu];
  CHECK(model_cost(heavier).cycles == doctest::Approx(41));
}

TEST_CASE("isa key loop: a join block placed before its predecessor is no loop; listings without a key loop") {
  // Layout as clang emits the key loop: header H (0x04), the QK WMMA, a branch forward to the
  // softmax S (0x20); S jumps *back* to the join J (0x10) that holds the PV WMMA, and J branches
  // back to H. Only J -> H is a back edge; S -> J is a forward edge of the control flow.
  const unsigned base = 0x2000;
  std::string s = "0000000000002000 <k>:\n";
  s += line(base + 0x00, "s_mov_b32 s4, 0");
  s += line(base + 0x04, "v_wmma_i32_16x16x16_iu8 v[0:7], v[8:9], v[10:11], v[0:7]");  // H
  s += line(base + 0x08, "s_branch 6", 0x24);                                            // -> S
  s += line(base + 0x0c, "s_endpgm");
  s += line(base + 0x10, "v_wmma_f32_16x16x16_fp8_fp8 v[24:31], v[32:33], v[34:35], v[24:31]");  // J
  s += line(base + 0x14, "s_add_co_i32 s4, s4, 1");
  s += line(base + 0x18, "s_cmp_lt_i32 s4, s7");
  s += line(base + 0x1c, "s_cbranch_scc1 65529", 0x04);                                  // J -> H
  s += line(base + 0x20, "s_endpgm");
  s += line(base + 0x24, "v_exp_f32_e32 v1, v1");                                        // S
  s += line(base + 0x28, "s_cmp_eq_u32 s5, 0");
  s += line(base + 0x2c, "s_cbranch_scc1 65528", 0x10);                                  // S -> J (full tile)
  s += line(base + 0x30, "v_cndmask_b32_e32 v1, 0, v1, vcc_lo");                        // mask
  s += line(base + 0x34, "s_branch 65527", 0x10);                                        // -> J
  const KeyLoop loop = find_key_loop(parse_objdump(s), modeled_cycles);
  REQUIRE_MESSAGE(loop.found, loop.problem);
  CHECK(loop.begin == 0x2004);
  CHECK(loop.end == 0x2034);
  CHECK(loop.steady.counts.wmma() == 2);
  CHECK(loop.steady.counts[InstrClass::trans] == 1);
  CHECK(loop.steady.counts[InstrClass::valu] == 0);
  CHECK(loop.heaviest.counts[InstrClass::valu] == 1);
  // 2 WMMA x 8 + max(issue 1, trans unit 4) = 20; with the mask: max(2, 4) = 4 -> 20, longer trip.
  CHECK(loop.steady.modeled_cycles == doctest::Approx(20));
  CHECK(loop.heaviest.modeled_cycles == doctest::Approx(20));
  CHECK(loop.heaviest.counts.instructions == loop.steady.counts.instructions + 2);

  // No WMMA at all, and WMMAs outside any loop.
  std::string flat = "0000000000003000 <k>:\n";
  flat += line(0x3000, "v_add_f32_e32 v1, v1, v2");
  flat += line(0x3004, "s_endpgm");
  const KeyLoop none = find_key_loop(parse_objdump(flat), modeled_cycles);
  CHECK_FALSE(none.found);
  CHECK(none.problem.find("no WMMA") != std::string::npos);
  std::string straight = "0000000000003000 <k>:\n";
  straight += line(0x3000, "v_wmma_i32_16x16x16_iu8 v[0:7], v[8:9], v[10:11], v[0:7]");
  straight += line(0x3004, "s_endpgm");
  const KeyLoop unlooped = find_key_loop(parse_objdump(straight), modeled_cycles);
  CHECK_FALSE(unlooped.found);
  CHECK(unlooped.problem.find("no loop") != std::string::npos);
  // A loop inside the key loop (the kernel unrolls everything inside it).
  std::string nested = "0000000000004000 <k>:\n";
  nested += line(0x4000, "v_wmma_i32_16x16x16_iu8 v[0:7], v[8:9], v[10:11], v[0:7]");
  nested += line(0x4004, "v_add_f32_e32 v1, v1, v2");
  nested += line(0x4008, "s_cbranch_scc1 65534", 0x4004 - 0x4000);
  nested += line(0x400c, "s_cbranch_scc0 65532", 0);
  nested += line(0x4010, "s_endpgm");
  const KeyLoop inner = find_key_loop(parse_objdump(nested), modeled_cycles);
  CHECK_FALSE(inner.found);
  CHECK(inner.problem.find("inside the key loop") != std::string::npos);
}

TEST_CASE("rdna4 model: occupancy, device peaks and predicted TOPS") {
  // VGPRs in granules of 24 of 1536; LDS 128 KiB per WGP; whole workgroups over 4 SIMDs.
  CHECK(waves_per_simd(252, 21504, 4) == 5);   // 264 -> 5 by VGPRs; LDS allows 6 groups
  CHECK(waves_per_simd(145, 21504, 4) == 6);   // 168 -> 9 by VGPRs; LDS: 6 groups of 4 waves
  CHECK(waves_per_simd(96, 5632, 4) == 16);    // 96 -> 16 by VGPRs; LDS 23 groups
  CHECK(waves_per_simd(242, 21504, 8) == 4);   // 5 by VGPRs, but only 2 whole 8-wave groups fit
  CHECK(waves_per_simd(256, 0, 1) == 5);

  const auto& devices = rdna4_devices();
  REQUIRE(devices.size() == 3);
  CHECK(devices[0].compute_units == 64);
  CHECK(devices[0].peak_tops() == doctest::Approx(382.7).epsilon(0.001));
  CHECK(devices[1].peak_tops() == doctest::Approx(389.3).epsilon(0.001));
  CHECK(devices[2].compute_units == 32);
  // A loop that is all WMMA reaches the peak: 4*32*32*128 ops in 64 WMMAs x 8 cycles.
  CHECK(predicted_tops(4.0 * 32 * 32 * 128, 512, devices[0]) == doctest::Approx(devices[0].peak_tops()));
  CHECK(predicted_tops(4.0 * 32 * 32 * 128, 1024, devices[0]) == doctest::Approx(devices[0].peak_tops() / 2));
  CHECK(predicted_tops(1, 0, devices[0]) == 0);
}
