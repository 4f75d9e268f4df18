// The ISA cost report's counter and model (runtime/src/dev/isa_key_loop.cpp, rdna4_cost_model.cpp)
// on small hand-written llvm-objdump listings whose answers are worked out by hand below. No
// performance threshold: these check the arithmetic of the report, not the kernel.
#include <doctest/doctest.h>

#include <cstdio>
#include <sstream>
#include <string>
#include <string_view>

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

// An llvm-objdump listing of a kernel `k` at `base`: one instruction per line of `program` (4 bytes
// each, blank lines and "// ..." comments skipped); "text -> 0x30" branches to <k+0x30>.
std::string listing(unsigned base, std::string_view program) {
  char header[64];
  std::snprintf(header, sizeof header, "%016x <k>:\n", base);
  std::string out = header;
  unsigned address = base;
  std::istringstream lines{std::string(program)};
  for (std::string text; std::getline(lines, text);) {
    text = text.substr(0, text.find("//"));
    const std::size_t arrow = text.find(" -> ");
    const int target = arrow == std::string::npos ? -1 : std::stoi(text.substr(arrow + 4), nullptr, 16);
    text = text.substr(0, arrow);
    const std::size_t first = text.find_first_not_of(' '), last = text.find_last_not_of(' ');
    if (first == std::string::npos) continue;
    out += line(address, text.substr(first, last - first + 1), target);
    address += 4;
  }
  return out;
}

KeyLoop key_loop_of(unsigned base, std::string_view program) {
  return find_key_loop(parse_objdump(listing(base, program)), modeled_cycles);
}

// A key loop at k+0x10 .. k+0x44 (every instruction 4 bytes):
//   header: 2 iu8 WMMA, v_cvt, s_cmp, s_cbranch_scc1 over the mask block
//   mask:   v_cmp, v_cndmask x2                               (skipped on a full tile)
//   join:   v_exp x2, v_dual, v_max, 2 fp8 WMMA, ds_load_b128, global_load_b128, s_wait, s_add,
//           s_cmp, s_cbranch_scc1 back to the header
std::string sample_loop() {
  return listing(0x1000, R"(
    s_load_b128 s[0:3], s[0:1], 0x0
    v_mov_b32_e32 v1, 0
    s_mov_b32 s4, 0
    s_nop 0
    v_wmma_i32_16x16x16_iu8 v[0:7], v[8:9], v[10:11], v[0:7] neg_lo:[1,1,0]
    v_wmma_i32_16x16x16_iu8 v[0:7], v[12:13], v[14:15], v[0:7] neg_lo:[1,1,0]
    v_cvt_f32_i32_e32 v16, v0
    s_cmp_lg_u32 s5, 0
    s_cbranch_scc1 3 -> 0x30
    v_cmp_gt_i32_e32 vcc_lo, s6, v17
    v_cndmask_b32_e32 v16, 0xff800000, v16, vcc_lo
    v_cndmask_b32_e32 v18, 0xff800000, v18, vcc_lo
    v_exp_f32_e32 v16, v16
    v_exp_f32_e32 v18, v18
    v_dual_max_num_f32 v20, v16, v18 :: v_dual_add_f32 v21, v16, v18
    v_max_num_f32_e32 v22, v20, v21
    v_wmma_f32_16x16x16_fp8_fp8 v[24:31], v[32:33], v[34:35], v[24:31]
    v_wmma_f32_16x16x16_fp8_fp8 v[24:31], v[36:37], v[38:39], v[24:31]
    ds_load_b128 v[40:43], v44
    global_load_b128 v[48:51], v52, s[0:1]
    s_wait_loadcnt 0x0
    s_add_co_i32 s4, s4, 1
    s_cmp_lt_i32 s4, s7
    s_cbranch_scc1 65516 -> 0x10
    global_store_b128 v52, v[24:27], s[2:3]
    s_endpgm
  )");
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
  const KeyLoop loop = key_loop_of(0x2000, R"(
    s_mov_b32 s4, 0
    v_wmma_i32_16x16x16_iu8 v[0:7], v[8:9], v[10:11], v[0:7]  // H
    s_branch 6 -> 0x24  // -> S
    s_endpgm
    v_wmma_f32_16x16x16_fp8_fp8 v[24:31], v[32:33], v[34:35], v[24:31]  // J
    s_add_co_i32 s4, s4, 1
    s_cmp_lt_i32 s4, s7
    s_cbranch_scc1 65529 -> 0x04  // J -> H
    s_endpgm
    v_exp_f32_e32 v1, v1  // S
    s_cmp_eq_u32 s5, 0
    s_cbranch_scc1 65528 -> 0x10  // S -> J (full tile)
    v_cndmask_b32_e32 v1, 0, v1, vcc_lo  // mask
    s_branch 65527 -> 0x10  // -> J
  )");
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
  const KeyLoop none = key_loop_of(0x3000, "v_add_f32_e32 v1, v1, v2\ns_endpgm");
  CHECK_FALSE(none.found);
  CHECK(none.problem.find("no WMMA") != std::string::npos);
  const KeyLoop unlooped = key_loop_of(0x3000, "v_wmma_i32_16x16x16_iu8 v[0:7], v[8:9], v[10:11], v[0:7]\ns_endpgm");
  CHECK_FALSE(unlooped.found);
  CHECK(unlooped.problem.find("no loop") != std::string::npos);
  // A loop inside the key loop (the kernel unrolls everything inside it).
  const KeyLoop inner = key_loop_of(0x4000, R"(
    v_wmma_i32_16x16x16_iu8 v[0:7], v[8:9], v[10:11], v[0:7]
    v_add_f32_e32 v1, v1, v2
    s_cbranch_scc1 65534 -> 0x4
    s_cbranch_scc0 65532 -> 0x0
    s_endpgm
  )");
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
