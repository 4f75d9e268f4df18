#pragma once
// Small helpers shared by the kernel descriptors (kernels/*_desc.cpp) to read and check tile configs.
#include <charconv>
#include <initializer_list>
#include <string>

#include "kernels/kernel_desc.hpp"

namespace sagejit {

inline bool one_of(int value, std::initializer_list<int> allowed) {
  for (const int a : allowed)
    if (a == value) return true;
  return false;
}

// The launch shape every attention kernel uses: one workgroup per `block_m` query rows of one head
// of one batch entry, grid (ceil(Nq / block_m), Hq, B).
inline LaunchGeometry query_block_launch(const ProblemShape& shape, int block_m, int threads, unsigned shared_bytes) {
  LaunchGeometry geometry;
  geometry.grid = {static_cast<unsigned>((shape.seq_q + block_m - 1) / block_m), static_cast<unsigned>(shape.heads_q),
                   static_cast<unsigned>(shape.batch)};
  geometry.block = {static_cast<unsigned>(threads), 1, 1};
  geometry.dynamic_shared_bytes = shared_bytes;
  return geometry;
}

// "sm_90" / "sm_90a" -> 90; 0 when not an NVIDIA target.
inline int nvidia_sm_number(const std::string& target) {
  if (target.rfind("sm_", 0) != 0) return 0;
  int value = 0;
  const char* first = target.data() + 3;
  const auto [end, error] = std::from_chars(first, target.data() + target.size(), value);
  return error == std::errc() && end != first ? value : 0;
}

}  // namespace sagejit
