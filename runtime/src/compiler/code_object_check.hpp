#pragma once
// What a compiler's output must look like before it is published to a cache or handed to a device:
// an ELF code object of the target's machine. NVRTC's output (nvrtcGetCUBIN) is a cubin, an ELF of
// machine EM_CUDA; hipRTC and clang produce an AMDGPU ELF (EM_AMDGPU). Both are 64-bit little-endian.
// A cheap sanity check, not a validation: it stops a broken compiler, a truncated file or a foreign
// blob from being published or loaded as a kernel.
#include <cstddef>
#include <span>
#include <string>

#include "core/target.hpp"

namespace sagejit {

inline constexpr int elf_machine_cuda = 190;    // EM_CUDA
inline constexpr int elf_machine_amdgpu = 224;  // EM_AMDGPU

// Empty when `code` is a 64-bit little-endian ELF for the machine of `target`'s vendor; otherwise why not.
std::string code_object_problem(std::span<const std::byte> code, const Target& target);

}  // namespace sagejit
