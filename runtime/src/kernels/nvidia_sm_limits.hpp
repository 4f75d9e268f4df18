#pragma once
// What one SM of an NVIDIA arch offers a kernel: the numbers the NVIDIA descriptors' resource checks
// compare a config against, as data, one row per arch. An arch without a row is not guessed at: its
// configs are rejected, naming the archs that have one (adding an arch = adding its row).
#include <string>

#include "core/target.hpp"

namespace sagejit {

struct SmLimits {
  int sm = 0;                     // compute capability: 90 for sm_90 and sm_90a
  unsigned shared_per_block = 0;  // bytes one block may use (with the opt-in launch attribute)
  unsigned shared_per_sm = 0;     // bytes of one SM, shared by its resident blocks
  unsigned reserved_per_block = 0;  // bytes of shared_per_sm the system takes for each resident block
  int warps_per_sm = 0;           // resident warps
  int registers_per_sm = 0;       // 32-bit registers, shared by the resident threads
};

// The row of `target`'s compute capability ("sm_90a" -> 90); nullptr for AMD or an arch without one.
const SmLimits* find_sm_limits(const Target& target);

// The reason a resource check gives for an arch without a row: it names the arch and the listed ones.
std::string missing_sm_limits(const Target& target);

}  // namespace sagejit
