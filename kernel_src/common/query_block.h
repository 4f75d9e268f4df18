#pragma once
// Which part of the problem one attention workgroup owns, for every attention kernel (sm80, sm90,
// gfx12): the launch grid is (ceil(Nq / BLOCK_M), Hq, B) (kernels/launch_shapes.hpp on the host).
#include "common/params.h"
#include "common/prelude.h"

struct SjQueryBlock {
  int block;  // query block index: rows block * BLOCK_M .. + BLOCK_M - 1
  int hq;     // query head
  int b;      // batch entry
  int hk;     // the k/v head of hq (grouped-query attention)
  int q0;     // first query row of the block
};

// With `heaviest_first`, grid x runs backwards: under a causal mask the last query blocks see the
// most keys, and starting them first shortens the tail of the launch.
SJ_DEVICE SjQueryBlock sj_query_block(const SjAttentionParams& p, int block_m, bool heaviest_first) {
  SjQueryBlock owned;
  owned.block = heaviest_first ? (int)(sj_grid_x() - 1u - sj_block_x()) : (int)sj_block_x();
  owned.hq = (int)sj_block_y();
  owned.b = (int)sj_block_z();
  owned.hk = owned.hq / p.gqa_ratio;
  owned.q0 = owned.block * block_m;
  return owned;
}
