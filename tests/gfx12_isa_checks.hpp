#pragma once
// The ISA checks of gfx12 code objects, written once for every compiler that builds them: the
// offline clang (tests/test_gfx12_isa.cpp compiles and checks in one go) and ROCm's hipRTC (run
// inside a ROCm root by tests/scripts/hiprtc_root_test.sh; tests/hiprtc_objects_check.cpp checks the
// objects it emitted). A code object is read with llvm-readelf --notes and llvm-objdump -d (run and
// parsed by dev/isa_key_loop, as the ISA report does):
//  - v_wmma_i32_16x16x16_iu8 and v_wmma_f32_16x16x16_fp8_fp8 present, all executed by one trip of
//    the key-tile loop (the smallest natural loop holding every WMMA, dev/isa_key_loop), exactly rows/16 * keys/16 * D/16 each
//    (the algorithmic minimum per key tile per wave); no v_med3 there (a NaN p must not become -448);
//  - no scratch: private segment 0, no scratch_* instruction, no VGPR or SGPR spill;
//  - LDS as the descriptor computes it and <= 64 KiB; VGPRs <= 256 and <= the descriptor's estimate.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstddef>
#include <filesystem>
#include <fstream>
#include <optional>
#include <regex>
#include <cstdint>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include "dev/isa_key_loop.hpp"
#include "dev/rdna4_cost_model.hpp"
#include "kernels/attention_gfx12_desc.hpp"

namespace sagejit::gfx12_isa {

inline std::string tool_path(const char* configured) { return configured != nullptr ? std::string(configured) : std::string(); }

inline bool executable_exists(const std::string& path) { return !path.empty() && std::filesystem::exists(path); }

struct Tools {
  std::string objdump, readelf;
  bool found() const { return executable_exists(objdump) && executable_exists(readelf); }
};

// The LLVM tools found at configure time (SAGEJIT_TEST_OBJDUMP / SAGEJIT_TEST_READELF).
inline Tools configured_tools() { return {tool_path(SAGEJIT_TEST_OBJDUMP), tool_path(SAGEJIT_TEST_READELF)}; }

struct IsaFigures {
  bool ok = false;
  std::string error;
  double compile_seconds = 0;
  long vgprs = -1, vgpr_spills = -1, sgpr_spills = -1, private_bytes = -1, lds_bytes = -1;
  int qk_wmma = 0, pv_wmma = 0, scratch_instructions = 0;
  int qk_wmma_in_loop = 0, pv_wmma_in_loop = 0;
  int med3_in_loop = 0;  // v_med3_* in the key loop: must be 0 (a NaN p must not become -448)
  bool loop_found = false;
};

inline long note_value(const std::string& notes, const std::string& key) {
  const std::regex pattern("\\." + key + ":\\s+(-?[0-9]+)");
  std::smatch match;
  if (std::regex_search(notes, match, pattern)) return std::stol(match[1]);
  return -1;
}

// Parses `llvm-objdump -d` output: WMMA and scratch counts, and the key-tile loop as the ISA report
// finds it (dev/isa_key_loop: the smallest natural loop of the control-flow graph that holds every
// WMMA; hipRTC places blocks of the loop after its back edge, so an address range is not enough):
// the WMMAs one trip of it executes, and the v_med3 between its header and its last instruction.
inline void parse_disassembly(const std::string& text, IsaFigures& figures) {
  const std::vector<isa::Instruction> instructions = isa::parse_objdump(text);
  std::vector<std::uint64_t> med3;
  for (const isa::Instruction& instruction : instructions) {
    const isa::InstrClass kind = isa::classify(instruction.mnemonic);
    figures.qk_wmma += kind == isa::InstrClass::wmma_iu8;
    figures.pv_wmma += kind == isa::InstrClass::wmma_fp8;
    if (instruction.mnemonic.rfind("scratch_", 0) == 0) ++figures.scratch_instructions;
    if (instruction.mnemonic.rfind("v_med3_", 0) == 0) med3.push_back(instruction.address);
  }
  if (figures.qk_wmma == 0 || figures.pv_wmma == 0) return;
  const isa::KeyLoop loop = isa::find_key_loop(instructions, isa::modeled_cycles);
  if (!loop.found) {
    figures.error = "key loop not found: " + loop.problem;
    return;
  }
  figures.loop_found = true;
  figures.qk_wmma_in_loop = loop.steady.counts[isa::InstrClass::wmma_iu8];
  figures.pv_wmma_in_loop = loop.steady.counts[isa::InstrClass::wmma_fp8];
  figures.med3_in_loop = static_cast<int>(
      std::count_if(med3.begin(), med3.end(), [&](std::uint64_t a) { return a >= loop.begin && a <= loop.end; }));
}

// Reads the figures of the code object at `object` (disassembled for `target`).
inline IsaFigures inspect_object(const std::filesystem::path& object, const std::string& target, const Tools& tools) {
  IsaFigures figures;
  std::string notes, disassembly;
  try {
    notes = isa::tool_output({tools.readelf, "--notes", object.string()});
    disassembly = isa::disassemble(tools.objdump, object.string(), target);
  } catch (const std::exception& error) {
    figures.error = error.what();
    return figures;
  }
  figures.vgprs = note_value(notes, "vgpr_count");
  figures.vgpr_spills = note_value(notes, "vgpr_spill_count");
  figures.sgpr_spills = note_value(notes, "sgpr_spill_count");
  figures.private_bytes = note_value(notes, "private_segment_fixed_size");
  figures.lds_bytes = note_value(notes, "group_segment_fixed_size");
  parse_disassembly(disassembly, figures);
  figures.ok = true;
  return figures;
}

// Writes `code` to `object` and inspects it.
inline IsaFigures inspect_code(std::span<const std::byte> code, const std::filesystem::path& object,
                               const std::string& target, const Tools& tools) {
  {
    std::ofstream out(object, std::ios::binary);
    out.write(reinterpret_cast<const char*>(code.data()), static_cast<std::streamsize>(code.size()));
  }
  return inspect_object(object, target, tools);
}

// No scratch of any kind and VGPRs within the hardware limit: what every gfx12 kernel must satisfy.
inline void check_no_scratch(const IsaFigures& got) {
  CHECK(got.private_bytes == 0);
  CHECK(got.scratch_instructions == 0);
  CHECK(got.vgpr_spills == 0);
  CHECK(got.sgpr_spills == 0);
  CHECK(got.vgprs > 0);
  CHECK(got.vgprs <= gfx12_vgpr_limit);
}

inline std::string describe(const IsaFigures& got, const Gfx12AttentionFigures& expected) {
  std::ostringstream text;
  text << "VGPRs " << got.vgprs << " (estimate " << expected.vgpr_estimate << "), spills " << got.vgpr_spills << "/"
       << got.sgpr_spills << ", private " << got.private_bytes << " B, scratch instructions " << got.scratch_instructions
       << ", LDS " << got.lds_bytes << " B (expected " << expected.lds_bytes << "), WMMA iu8 " << got.qk_wmma << " ("
       << got.qk_wmma_in_loop << " in loop, expected " << expected.qk_wmma_per_tile << "), fp8 " << got.pv_wmma << " ("
       << got.pv_wmma_in_loop << " in loop, expected " << expected.pv_wmma_per_tile << ")";
  return text.str();
}

// The attention kernel's checks against the descriptor's figures of its config and head dim.
inline void check_attention(const IsaFigures& got, const Gfx12AttentionFigures& expected) {
  INFO(describe(got, expected));
  CHECK(got.qk_wmma > 0);
  CHECK(got.pv_wmma > 0);
  CHECK(got.loop_found);
  CHECK(got.qk_wmma == expected.qk_wmma_per_tile);
  CHECK(got.pv_wmma == expected.pv_wmma_per_tile);
  CHECK(got.qk_wmma_in_loop == got.qk_wmma);
  CHECK(got.pv_wmma_in_loop == got.pv_wmma);
  CHECK(got.med3_in_loop == 0);  // docs/NUMERICS.md, non-finite inputs: v_med3 turns a NaN p into -448
  check_no_scratch(got);
  CHECK(got.lds_bytes == static_cast<long>(expected.lds_bytes));
  CHECK(got.lds_bytes <= static_cast<long>(gfx12_lds_limit_bytes));
  CHECK(got.vgprs <= expected.vgpr_estimate);
}

}  // namespace sagejit::gfx12_isa
