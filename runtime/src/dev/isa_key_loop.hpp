#pragma once
// Reading an AMDGPU kernel's key loop from `llvm-objdump -d` text: the instructions, their classes,
// the innermost loop that holds every WMMA, and the two paths of one trip through it that the cost
// report prices (docs/RDNA4.md, "ISA cost report"). The reading is pure text processing: tests feed
// it small hand-written listings with known answers; `disassemble` makes the listing of a real code
// object, the one way the tool sagejit-isa-report and the ISA tests (tests/gfx12_isa_checks.hpp) do.
#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sagejit::isa {

// What an instruction costs is decided by its class (rdna4_cost_model.hpp).
enum class InstrClass : int {
  wmma_iu8,    // v_wmma_i32_16x16x16_iu8
  wmma_fp8,    // v_wmma_f32_16x16x16_{fp8,bf8}_{fp8,bf8}
  wmma_16bit,  // v_wmma_* on f16/bf16 operands
  wmma_iu4,    // v_wmma_i32_16x16x{16,32}_iu4, v_swmmac_*
  vopd,        // v_dual_*: two VALU operations in one instruction
  trans,       // v_exp/log/rcp/rsq/sqrt/sin/cos (f32, f16): the transcendental unit
  valu_f64,    // v_*_f64 (double precision)
  valu,        // every other v_* (incl. v_cmp, v_cndmask, v_permlane, v_pk_*)
  salu,        // s_* scalar ALU
  smem,        // s_load_*, s_buffer_load_*
  lds,         // ds_*
  vmem,        // global_*, buffer_*, flat_*, scratch_*
  wait,        // s_waitcnt*, s_wait_* (counters and s_wait_alu)
  barrier,     // s_barrier*
  branch,      // s_branch, s_cbranch_*
  hint,        // s_nop, s_delay_alu, s_set_inst_prefetch_distance, s_clause (no work)
  other,       // anything else (s_endpgm, ...)
  count_
};
inline constexpr int instr_class_count = static_cast<int>(InstrClass::count_);

std::string_view class_name(InstrClass c);
InstrClass classify(std::string_view mnemonic);

struct Instruction {
  std::uint64_t address = 0;
  std::string mnemonic;
  std::string text;  // the whole line, for the LDS/VMEM width and for messages
  bool is_branch = false, conditional = false;
  std::optional<std::uint64_t> target;  // branch target address, when the line names one
};

// What `argv` (an LLVM tool and its arguments) prints, stdout and stderr together. Throws
// Error(internal) naming the tool, its exit status and the start of its output when it fails.
std::string tool_output(const std::vector<std::string>& argv);

// The listing parse_objdump reads: `<objdump> -d --mcpu=<arch> <object>` (llvm-objdump 20 or newer
// for gfx12).
std::string disassemble(const std::string& objdump, const std::string& object, const std::string& arch);

// Instructions of the listing in address order. Lines look like
//   "\tv_add_f32_e32 v1, v2, v3    // 000000001A00: 06020503"
// and branch targets are read from "<symbol+0xOFF>" with symbol headers "0000000000001900 <name>:".
std::vector<Instruction> parse_objdump(const std::string& text);

// Bytes one LDS/VMEM instruction moves per lane (ds_load_b128 -> 16, ds_store_b64 -> 8, ...); 0 when
// the width is not written in the mnemonic.
int access_bytes_per_lane(std::string_view mnemonic);

struct ClassCounts {
  std::array<int, instr_class_count> n{};
  int lds_bytes_per_lane = 0;   // summed over the LDS instructions
  int vmem_bytes_per_lane = 0;  // summed over the VMEM instructions
  int instructions = 0;
  int& operator[](InstrClass c) { return n[static_cast<int>(c)]; }
  int operator[](InstrClass c) const { return n[static_cast<int>(c)]; }
  int wmma() const;
  void add(const Instruction& instruction);
  ClassCounts& operator+=(const ClassCounts& other);
};

// One trip through the loop body, from its first instruction to a branch back to it.
struct LoopPath {
  ClassCounts counts;
  double modeled_cycles = 0;  // by the cost function given to find_key_loop
  std::vector<std::uint64_t> blocks;  // start addresses of the basic blocks taken
};

struct KeyLoop {
  bool found = false;
  std::string problem;  // why not found (no WMMA, no loop around them, inner loop, ...)
  std::uint64_t begin = 0, end = 0;  // loop header address, last instruction address of the loop
  int wmma_total = 0;                // WMMAs in the whole listing
  // Both paths take every WMMA the loop can execute in one trip and the most VMEM instructions (a
  // tile that also fetches the next one); `steady` is the cheapest of those (a full tile: no mask,
  // no rescale), `heaviest` the most expensive (a boundary tile that masks and rescales).
  LoopPath steady, heaviest;
};

// Finds the smallest natural loop of the control-flow graph that holds every WMMA (back edges found
// depth-first from the entry; the compiler places join blocks before their predecessors, so a
// backward address alone is no loop) and prices its trips with `cycles` (e.g. modeled_cycles).
// A trip runs from the header along edges inside the loop to an edge back to the header.
using CycleModel = std::function<double(const ClassCounts&)>;
KeyLoop find_key_loop(const std::vector<Instruction>& instructions, const CycleModel& cycles);

// Paths through one loop trip are enumerated (the unrolled key loop has a handful of branches);
// more than this many is reported as a problem rather than guessed.
inline constexpr std::size_t max_loop_paths = 1u << 16;

}  // namespace sagejit::isa
