#pragma once
// Resource figures of a compiled code object, read from the ELF itself (no external tool needed):
//  - AMDGPU (e_machine 224): the "AMDGPU" metadata note (msgpack, code-object v4+): per kernel
//    .vgpr_count, .sgpr_count, .group_segment_fixed_size (static LDS), .private_segment_fixed_size
//    (scratch), .vgpr_spill_count / .sgpr_spill_count;
//  - cubin (e_machine 190): the .nv.info attributes (register count, frame size = local memory per
//    thread, which includes spills) and the size of each .nv.shared.<kernel> section (static shared).
// A figure that cannot be read stays empty and is printed as "n/a": never guessed.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

namespace sagejit::tools {

inline constexpr int elf_machine_amdgpu = 224;
inline constexpr int elf_machine_cuda = 190;

struct CodeObjectStats {
  bool elf = false;        // a well-formed little-endian ELF64 with section headers in bounds
  int machine = 0;         // e_machine
  std::string problem;     // why not parsed, when !elf
  std::size_t kernels = 0;  // kernels whose figures were found
  // Maximum over the object's kernels.
  std::optional<std::uint64_t> registers;      // VGPRs (AMD) / registers per thread (NVIDIA)
  std::optional<std::uint64_t> scalar_registers;  // SGPRs (AMD only)
  std::optional<std::uint64_t> static_shared;  // LDS / static shared memory bytes per block
  std::optional<std::uint64_t> scratch;        // private segment (AMD) / frame size (NVIDIA), bytes per thread
  std::optional<std::uint64_t> spills;         // VGPR + SGPR spill count (AMD only)
};

CodeObjectStats read_code_object_stats(std::span<const std::byte> bytes);

// The value or "n/a".
std::string figure(const std::optional<std::uint64_t>& value);

}  // namespace sagejit::tools
