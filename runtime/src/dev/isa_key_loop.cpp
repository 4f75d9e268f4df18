#include "dev/isa_key_loop.hpp"

#include <algorithm>
#include <fstream>
#include <iterator>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "core/error.hpp"
#include "platform/private_temp_dir.hpp"
#include "platform/subprocess.hpp"

namespace sagejit::isa {

namespace {

bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }
bool contains(std::string_view s, std::string_view part) { return s.find(part) != std::string_view::npos; }

}  // namespace

std::string tool_output(const std::vector<std::string>& argv) {
  const PrivateTempDir directory("sagejit-llvm-tool");
  const std::string output_file = directory.file("output.txt");
  const int status = run_process(argv, output_file);
  std::ifstream in(output_file, std::ios::binary);
  std::string output{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  if (status != 0) fail(ErrorCode::internal, "{} failed with status {}: {}", argv.at(0), status, output.substr(0, 2000));
  return output;
}

std::string disassemble(const std::string& objdump, const std::string& object, const std::string& arch) {
  return tool_output({objdump, "-d", "--mcpu=" + arch, object});
}

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
  std::vector<std::size_t> successors;
  bool has_wmma = false;
};

// Basic blocks of the whole listing with their control-flow successors (fall-through and branch
// targets in either direction; the compiler places join blocks before their predecessors, so an
// address going backwards does not by itself mean a loop).
std::vector<Block> basic_blocks(const std::vector<Instruction>& instructions) {
  std::map<std::uint64_t, std::size_t> index_of;
  for (std::size_t i = 0; i < instructions.size(); ++i) index_of[instructions[i].address] = i;
  std::vector<bool> leader(instructions.size(), false);
  if (!instructions.empty()) leader[0] = true;
  for (std::size_t i = 0; i < instructions.size(); ++i) {
    const Instruction& instruction = instructions[i];
    const bool ends_block = instruction.is_branch || classify(instruction.mnemonic) == InstrClass::other;
    if (ends_block && i + 1 < instructions.size()) leader[i + 1] = true;
    if (instruction.target && index_of.count(*instruction.target)) leader[index_of[*instruction.target]] = true;
  }
  std::vector<Block> blocks;
  std::vector<std::size_t> block_of(instructions.size());
  for (std::size_t i = 0; i < instructions.size(); ++i) {
    if (leader[i]) blocks.push_back(Block{i, i, {}, {}, false});
    blocks.back().last = i;
    blocks.back().counts.add(instructions[i]);
    block_of[i] = blocks.size() - 1;
  }
  for (std::size_t b = 0; b < blocks.size(); ++b) {
    Block& block = blocks[b];
    block.has_wmma = block.counts.wmma() > 0;
    const Instruction& tail = instructions[block.last];
    const bool ends_program = classify(tail.mnemonic) == InstrClass::other && !tail.is_branch;
    if ((!tail.is_branch || tail.conditional) && !ends_program && b + 1 < blocks.size()) block.successors.push_back(b + 1);
    if (tail.is_branch && tail.target && index_of.count(*tail.target)) {
      const std::size_t target = block_of[index_of[*tail.target]];
      if (std::find(block.successors.begin(), block.successors.end(), target) == block.successors.end())
        block.successors.push_back(target);
    }
  }
  return blocks;
}

}  // namespace

KeyLoop find_key_loop(const std::vector<Instruction>& instructions, const CycleModel& cycles) {
  KeyLoop loop;
  for (const Instruction& instruction : instructions) {
    const InstrClass c = classify(instruction.mnemonic);
    if (c == InstrClass::wmma_iu8 || c == InstrClass::wmma_fp8 || c == InstrClass::wmma_16bit ||
        c == InstrClass::wmma_iu4)
      ++loop.wmma_total;
  }
  if (loop.wmma_total == 0) {
    loop.problem = "no WMMA instruction in the listing";
    return loop;
  }
  const std::vector<Block> blocks = basic_blocks(instructions);
  const std::size_t n = blocks.size();

  // Back edges: depth-first from the entry, an edge to a block on the DFS stack.
  std::vector<std::pair<std::size_t, std::size_t>> back_edges;  // (from, header)
  {
    std::vector<int> state(n, 0);  // 0 new, 1 on stack, 2 done
    std::vector<std::pair<std::size_t, std::size_t>> stack{{0, 0}};
    state[0] = 1;
    while (!stack.empty()) {
      auto& [b, next] = stack.back();
      if (next < blocks[b].successors.size()) {
        const std::size_t s = blocks[b].successors[next++];
        if (state[s] == 1) back_edges.push_back({b, s});
        if (state[s] == 0) {
          state[s] = 1;
          stack.push_back({s, 0});
        }
      } else {
        state[b] = 2;
        stack.pop_back();
      }
    }
  }
  // Natural loop of each header (all its back edges): blocks reaching a latch without the header.
  std::vector<std::vector<std::size_t>> predecessors(n);
  for (std::size_t b = 0; b < n; ++b)
    for (std::size_t s : blocks[b].successors) predecessors[s].push_back(b);
  std::optional<std::size_t> header;
  std::vector<bool> in_loop;
  std::size_t smallest = SIZE_MAX;
  std::set<std::size_t> headers;
  for (const auto& edge : back_edges) headers.insert(edge.second);
  for (std::size_t h : headers) {
    std::vector<bool> body(n, false);
    body[h] = true;
    std::vector<std::size_t> work;
    for (const auto& [from, to] : back_edges)
      if (to == h && !body[from]) {
        body[from] = true;
        work.push_back(from);
      }
    while (!work.empty()) {
      const std::size_t b = work.back();
      work.pop_back();
      for (std::size_t p : predecessors[b])
        if (!body[p]) {
          body[p] = true;
          work.push_back(p);
        }
    }
    bool holds_all = true;
    std::size_t size = 0;
    for (std::size_t b = 0; b < n; ++b) {
      if (blocks[b].has_wmma && !body[b]) holds_all = false;
      size += body[b] ? 1 : 0;
    }
    if (holds_all && size < smallest) {
      smallest = size;
      header = h;
      in_loop = body;
    }
  }
  if (!header) {
    loop.problem = "no loop holds every WMMA";
    return loop;
  }
  loop.begin = instructions[blocks[*header].first].address;
  for (std::size_t b = 0; b < n; ++b)
    if (in_loop[b]) loop.end = std::max(loop.end, instructions[blocks[b].last].address);

  // Every trip: from the header along edges inside the loop until an edge back to the header.
  struct Candidate {
    ClassCounts counts;
    std::vector<std::uint64_t> blocks;
  };
  std::vector<Candidate> trips;
  std::vector<std::size_t> path;
  std::vector<bool> on_path(n, false);
  bool too_many = false, inner_loop = false;
  const std::function<void(std::size_t, ClassCounts)> walk = [&](std::size_t b, ClassCounts counts) {
    if (too_many || inner_loop) return;
    counts += blocks[b].counts;
    path.push_back(b);
    on_path[b] = true;
    for (std::size_t next : blocks[b].successors) {
      if (!in_loop[next]) continue;  // leaves the loop
      if (next == *header) {
        if (trips.size() >= max_loop_paths) {
          too_many = true;
        } else {
          Candidate trip{counts, {}};
          for (std::size_t s : path) trip.blocks.push_back(instructions[blocks[s].first].address);
          trips.push_back(std::move(trip));
        }
      } else if (on_path[next]) {
        inner_loop = true;
      } else {
        walk(next, counts);
      }
    }
    on_path[b] = false;
    path.pop_back();
  };
  walk(*header, ClassCounts{});
  if (inner_loop) {
    loop.problem = "a loop inside the key loop: the key loop is expected to be unrolled";
    return loop;
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
    // Ties: the shorter trip is the steady one, the longer the heaviest.
    const int length = trip.counts.instructions;
    if (!any || cost < loop.steady.modeled_cycles ||
        (cost == loop.steady.modeled_cycles && length < loop.steady.counts.instructions))
      loop.steady = LoopPath{trip.counts, cost, trip.blocks};
    if (!any || cost > loop.heaviest.modeled_cycles ||
        (cost == loop.heaviest.modeled_cycles && length > loop.heaviest.counts.instructions))
      loop.heaviest = LoopPath{trip.counts, cost, trip.blocks};
    any = true;
  }
  loop.found = true;
  return loop;
}

}  // namespace sagejit::isa
