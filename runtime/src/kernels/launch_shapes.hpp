#pragma once
// Launch shapes shared by the kernel descriptors.
#include "jit/kernel_desc.hpp"

namespace sagejit {

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

}  // namespace sagejit
