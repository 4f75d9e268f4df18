#include "compiler/code_object_check.hpp"

#include <cstring>

#include <fmt/format.h>

namespace sagejit {

std::string code_object_problem(std::span<const std::byte> code, const Target& target) {
  constexpr std::size_t elf_header_size = 64;  // Elf64_Ehdr
  const int expected = target.is_nvidia() ? elf_machine_cuda : elf_machine_amdgpu;
  const char* what = target.is_nvidia() ? "an NVIDIA cubin (ELF machine EM_CUDA)" : "an AMDGPU ELF (machine EM_AMDGPU)";
  if (code.size() < elf_header_size)
    return fmt::format("{} bytes is too short for an ELF code object; expected {} for {}", code.size(), what, target.full);
  const auto* bytes = reinterpret_cast<const unsigned char*>(code.data());
  if (std::memcmp(bytes, "\x7f" "ELF", 4) != 0)
    return fmt::format("not an ELF file (bad magic); expected {} for {}", what, target.full);
  if (bytes[4] != 2 || bytes[5] != 1)  // EI_CLASS = ELFCLASS64, EI_DATA = ELFDATA2LSB
    return fmt::format("ELF class {} / data {}, expected 64-bit little-endian {} for {}", bytes[4], bytes[5], what,
                       target.full);
  const int machine = bytes[18] | (bytes[19] << 8);  // e_machine
  if (machine != expected)
    return fmt::format("ELF machine {}, expected {} for {}", machine, what, target.full);
  return {};
}

}  // namespace sagejit
