#include "dev/isa_key_loop.hpp"

#include <algorithm>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include <fmt/format.h>

namespace sagejit::isa {

namespace {

bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }
bool contains(std::string_view s, std::string_view part) { return s.find(part) != std::string_view::npos; }

}  // namespace

std::string_view class_name(InstrClass c) {
  static constexpr std::array<std::string_view, instr_class_count> names{
      "wmma_iu8", "wmma_fp8", "wmma_16bit", "wmma_iu4", "vopd", "trans", "valu_f64", "valu", "salu",
      "smem",     "lds",      "vmem",       "wait",     "barrier", "branch", "hint",  "other"};
  return names[static_cast<int>(c)];
}

InstrClass classify(std::string_view m) {
  if (starts_with(m, "v_wmma_") || starts_with(m, "v_swmmac_")) {
    if (starts_with(m, "v_swmmac_") || contains(m, "_iu4")) return InstrClass::wmma_iu4;
    if (contains(m, "_iu8")) return InstrClass::wmma_iu8;
    if (contains(m, "fp8") || contains(m, "bf8")) return InstrClass::wmma_fp8;
    return InstrClass::wmma_16bit;
  }
  if (starts_with(m, "v_dual_")) return InstrClass::vopd;
  if (starts_with(m, "v_")) {
    static constexpr std::array<std::string_view, 9> trans{"v_exp_", "v_log_", "v_rcp_", "v_rsq_", "v_sqrt_",
                                                           "v_sin_", "v_cos_", "v_rcp_iflag_", "v_s_exp_"};
    for (std::string_view prefix : trans)
      if (starts_with(m, prefix)) return contains(m, "f64") ? InstrClass::valu_f64 : InstrClass::trans;
    if (contains(m, "_f64")) return InstrClass::valu_f64;
    return InstrClass::valu;
  }
  if (starts_with(m, "ds_")) return InstrClass::lds;
  if (starts_with(m, "global_") || starts_with(m, "buffer_") || starts_with(m, "flat_") || starts_with(m, "scratch_"))
    return InstrClass::vmem;
  if (starts_with(m, "s_waitcnt") || starts_with(m, "s_wait_")) return InstrClass::wait;
  if (starts_with(m, "s_barrier")) return InstrClass::barrier;
  if (starts_with(m, "s_branch") || starts_with(m, "s_cbranch_")) return InstrClass::branch;
  if (m == "s_nop" || m == "s_delay_alu" || m == "s_clause" || starts_with(m, "s_set_inst_prefetch") ||
      m == "s_code_end")
    return InstrClass::hint;
  if (starts_with(m, "s_load_") || starts_with(m, "s_buffer_load_")) return InstrClass::smem;
  if (m == "s_endpgm" || starts_with(m, "s_sendmsg") || starts_with(m, "s_setpc") || starts_with(m, "s_swappc"))
    return InstrClass::other;
  if (starts_with(m, "s_")) return InstrClass::salu;
  return InstrClass::other;
}

int access_bytes_per_lane(std::string_view m) {
  static const std::regex width("_(b|u|i|d)(8|16|32|64|96|128)(_|$)");
  std::match_results<std::string_view::const_iterator> match;
  if (!std::regex_search(m.begin(), m.end(), match, width)) return 0;
  int bytes = std::stoi(match[2].str()) / 8;
  if (contains(m, "load_2addr") || contains(m, "store_2addr") || contains(m, "write2") || contains(m, "read2"))
    bytes *= 2;
  return bytes;
}

int ClassCounts::wmma() const {
  return (*this)[InstrClass::wmma_iu8] + (*this)[InstrClass::wmma_fp8] + (*this)[InstrClass::wmma_16bit] +
         (*this)[InstrClass::wmma_iu4];
}

void ClassCounts::add(const Instruction& instruction) {
  const InstrClass c = classify(instruction.mnemonic);
  ++(*this)[c];
  ++instructions;
  if (c == InstrClass::lds) lds_bytes_per_lane += access_bytes_per_lane(instruction.mnemonic);
  if (c == InstrClass::vmem) vmem_bytes_per_lane += access_bytes_per_lane(instruction.mnemonic);
}

ClassCounts& ClassCounts::operator+=(const ClassCounts& other) {
  for (int i = 0; i < instr_class_count; ++i) n[static_cast<std::size_t>(i)] += other.n[static_cast<std::size_t>(i)];
  lds_bytes_per_lane += other.lds_bytes_per_lane;
  vmem_bytes_per_lane += other.vmem_bytes_per_lane;
  instructions += other.instructions;
  return *this;
}

std::vector<Instruction> parse_objdump(const std::string& text) {
  static const std::regex symbol_header("^([0-9a-fA-F]+) <([^>]+)>:");
  static const std::regex instruction_line("^\\s+([a-z_][a-z0-9_.]*)\\b.*//\\s*([0-9a-fA-F]+):");
  static const std::regex branch_target("<([^+>]+)\\+0x([0-9a-fA-F]+)>\\s*$");
  std::map<std::string, std::uint64_t> symbols;
  std::vector<Instruction> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    std::smatch match;
    if (std::regex_search(line, match, symbol_header)) {
      symbols[match[2]] = std::stoull(match[1], nullptr, 16);
      continue;
    }
    if (!std::regex_search(line, match, instruction_line)) continue;
    Instruction instruction;
    instruction.mnemonic = match[1];
    instruction.address = std::stoull(match[2], nullptr, 16);
    instruction.text = line;
    const InstrClass c = classify(instruction.mnemonic);
    if (c == InstrClass::branch) {
      instruction.is_branch = true;
      instruction.conditional = starts_with(instruction.mnemonic, "s_cbranch_");
      std::smatch target;
      if (std::regex_search(line, target, branch_target) && symbols.count(target[1]))
        instruction.target = symbols[target[1]] + std::stoull(target[2], nullptr, 16);
    }
    out.push_back(std::move(instruction));
  }
  return out;
}

namespace {

struct Block {
  std::size_t first = 0, last = 0;  // instruction indices, inclusive
  ClassCounts counts;
  std::vector<std::size_t> successors;  // block indices (forward, inside the loop)
  std::optional<std::size_t> back_to;   // ends with a branch that may return to this earlier block
};

}  // namespace

KeyLoop find_key_loop(const std::vector<Instruction>& instructions, const CycleModel& cycles) {
  KeyLoop loop;
  std::uint64_t first_wmma = UINT64_MAX, last_wmma = 0;
  for (const Instruction& instruction : instructions) {
    const InstrClass c = classify(instruction.mnemonic);
    if (c == InstrClass::wmma_iu8 || c == InstrClass::wmma_fp8 || c == InstrClass::wmma_16bit ||
        c == InstrClass::wmma_iu4) {
      ++loop.wmma_total;
      first_wmma = std::min(first_wmma, instruction.address);
      last_wmma = std::max(last_wmma, instruction.address);
    }
  }
  if (loop.wmma_total == 0) {
    loop.problem = "no WMMA instruction in the listing";
    return loop;
  }
  // The innermost backward branch whose range holds every WMMA names the header.
  std::optional<std::pair<std::uint64_t, std::uint64_t>> innermost;
  for (const Instruction& instruction : instructions)
    if (instruction.is_branch && instruction.target && *instruction.target <= instruction.address &&
        *instruction.target <= first_wmma && instruction.address >= last_wmma &&
        (!innermost || instruction.address - *instruction.target < innermost->second - innermost->first))
      innermost = std::make_pair(*instruction.target, instruction.address);
  if (!innermost) {
    loop.problem = "no loop (backward branch) holds every WMMA";
    return loop;
  }
  loop.begin = innermost->first;
  loop.end = innermost->second;
  // The compiler may rotate the loop so that some trips return a few instructions past the header:
  // every backward branch that lands inside the range belongs to the same loop (an outer loop would
  // land before it).
  for (bool grew = true; grew;) {
    grew = false;
    for (const Instruction& instruction : instructions)
      if (instruction.is_branch && instruction.target && *instruction.target <= instruction.address &&
          *instruction.target >= loop.begin && *instruction.target <= loop.end && instruction.address > loop.end) {
        loop.end = instruction.address;
        grew = true;
      }
  }

  // Basic blocks of [begin, end].
  std::vector<std::size_t> body;
  for (std::size_t i = 0; i < instructions.size(); ++i)
    if (instructions[i].address >= loop.begin && instructions[i].address <= loop.end) body.push_back(i);
  std::vector<bool> leader(body.size(), false);
  std::map<std::uint64_t, std::size_t> position;  // address -> index in body
  for (std::size_t p = 0; p < body.size(); ++p) position[instructions[body[p]].address] = p;
  leader[0] = true;
  for (std::size_t p = 0; p < body.size(); ++p) {
    const Instruction& instruction = instructions[body[p]];
    if (!instruction.is_branch) continue;
    if (p + 1 < body.size()) leader[p + 1] = true;
    if (instruction.target && position.count(*instruction.target)) leader[position[*instruction.target]] = true;
  }
  std::vector<Block> blocks;
  std::map<std::size_t, std::size_t> block_of;  // body position of a leader -> block index
  for (std::size_t p = 0; p < body.size(); ++p) {
    if (leader[p]) {
      block_of[p] = blocks.size();
      blocks.push_back(Block{p, p, {}, {}, std::nullopt});
    }
    blocks.back().last = p;
    blocks.back().counts.add(instructions[body[p]]);
  }
  std::set<std::size_t> entries;  // blocks that a back edge returns to: where a trip starts
  for (std::size_t b = 0; b < blocks.size(); ++b) {
    Block& block = blocks[b];
    const Instruction& tail = instructions[body[block.last]];
    const bool falls_through = !tail.is_branch || tail.conditional;
    if (falls_through && b + 1 < blocks.size()) block.successors.push_back(b + 1);
    if (!tail.is_branch || !tail.target || !position.count(*tail.target)) continue;  // out of the loop
    const std::size_t target_block = block_of[position[*tail.target]];
    if (target_block <= b) {
      block.back_to = target_block;
      entries.insert(target_block);
    } else {
      block.successors.push_back(target_block);
    }
  }

  // Every trip: from an entry block along forward edges to a branch back to that same entry (the
  // forward graph is acyclic, so this enumerates each cycle of the loop once).
  struct Candidate {
    ClassCounts counts;
    std::vector<std::uint64_t> blocks;
  };
  std::vector<Candidate> trips;
  std::vector<std::size_t> stack_blocks;
  bool too_many = false;
  std::size_t entry = 0;
  const std::function<void(std::size_t, ClassCounts)> walk = [&](std::size_t b, ClassCounts counts) {
    if (too_many) return;
    counts += blocks[b].counts;
    stack_blocks.push_back(b);
    if (blocks[b].back_to == entry) {
      if (trips.size() >= max_loop_paths) {
        too_many = true;
      } else {
        Candidate trip{counts, {}};
        for (std::size_t s : stack_blocks) trip.blocks.push_back(instructions[body[blocks[s].first]].address);
        trips.push_back(std::move(trip));
      }
    }
    for (std::size_t next : blocks[b].successors) walk(next, counts);
    stack_blocks.pop_back();
  };
  for (std::size_t start : entries) {
    entry = start;
    walk(start, ClassCounts{});
  }
  if (too_many) {
    loop.problem = fmt::format("more than {} paths through the loop", max_loop_paths);
    return loop;
  }
  if (trips.empty()) {
    loop.problem = "no path from the loop header back to it";
    return loop;
  }
  int most_wmma = 0, most_vmem = 0;
  for (const Candidate& trip : trips) most_wmma = std::max(most_wmma, trip.counts.wmma());
  for (const Candidate& trip : trips)
    if (trip.counts.wmma() == most_wmma) most_vmem = std::max(most_vmem, trip.counts[InstrClass::vmem]);
  bool any = false;
  for (const Candidate& trip : trips) {
    if (trip.counts.wmma() != most_wmma || trip.counts[InstrClass::vmem] != most_vmem) continue;
    const double cost = cycles(trip.counts);
    if (!any || cost < loop.steady.modeled_cycles) loop.steady = LoopPath{trip.counts, cost, trip.blocks};
    if (!any || cost > loop.heaviest.modeled_cycles) loop.heaviest = LoopPath{trip.counts, cost, trip.blocks};
    any = true;
  }
  loop.found = true;
  return loop;
}

}  // namespace sagejit::isa
