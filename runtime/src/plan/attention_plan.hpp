#pragma once
// The plan of one attention call: every rule of the two-kernel pipeline (prepare, then attention) in
// one place. Which dtypes, head dims and sizes are supported, which prepare and attention kernels run
// with which complete configs (explicit, or from the tuning tables), the specialization both are
// compiled for (including the V format the attention kernel's descriptor declares), their launch
// shape and the workspace layout. The API, the runner, the tools, the benchmarks and the GPU tests
// all ask plan_attention; nothing else re-derives any of it.
#include <string>
#include <string_view>

#include "common/constants.h"
#include "core/target.hpp"
#include "jit/kernel_desc.hpp"
#include "plan/attention_call.hpp"
#include "plan/workspace_layout.hpp"
#include "tuning/problem_key.hpp"

namespace sagejit {

struct AttentionPlan {
  const KernelDesc* prepare = nullptr;
  const KernelDesc* attention = nullptr;
  TileConfig prepare_config;    // complete (every parameter present)
  TileConfig attention_config;  // complete
  Specialization spec;          // what both kernels are compiled for (spec.head_dim: kernel_head_dim_for the call's)
  int head_dim = 128;           // the call's: channels prepare reads, columns of out the attention kernel writes
  ProblemShape shape;           // for launch geometry
  WorkspaceLayout workspace;    // what prepare writes and attention reads
  bool smooth_k = true;         // K mean subtracted (a runtime switch of prepare, not compiled in)

  // The prepare stats kernel runs only when there is a K mean or a V amax to gather.
  bool gather_stats() const { return smooth_k || !spec.v.pv_fp16; }
  // Short key sequences (at most SJ_FINALIZE_IN_QUANTIZE_MAX_CHUNKS K-mean chunks) skip the finalize
  // kernel: the quantize kernel sums the partials itself (kernel_src/prepare.cu), one launch fewer.
  bool finalize_in_quantize() const { return sj_k_mean_chunks(shape.seq_kv) <= SJ_FINALIZE_IN_QUANTIZE_MAX_CHUNKS; }
};

// Head dims of a call: the multiples of 8 from 8 to the largest kernel head dim (128). Prepare moves
// channels in groups of 8 (16 bytes) and the attention epilogues write groups of 8 columns (gfx12)
// or pairs, so a call's channels end on a group boundary.
inline constexpr int head_dim_granule = 8;
// Error(unsupported) naming head_dim and the accepted values unless a call may have `head_dim`.
void check_head_dim(std::int64_t head_dim);
// "multiples of 8 from 8 to 128 (64 and 128 natively, the others zero-padded to the next of them)".
std::string accepted_head_dims_text();
// The kernel head dim (core/kernel_inputs.hpp kernel_head_dims) a call of `head_dim` runs at: the
// smallest one >= head_dim, as SageAttention pads. The workspaces then hold that many channels per
// row, the ones past head_dim zero (prepare reads only the call's channels and writes zeros after
// them: a zero channel adds nothing to q.k, to the K mean of the others or to any scale); the
// attention kernels compute at the padded dim and write only the call's head_dim columns of out.
// The softmax scale stays the call's (default 1/sqrt(head_dim), the true head dim). Throws like
// check_head_dim.
int kernel_head_dim_for(std::int64_t head_dim);

// Checks the sizes, dtype, head dim, GQA ratio, sm_scale, key mask and the kernels' index limits of a
// call (no pointers but the mask's null test): Error(invalid_argument | unsupported) naming the field
// and the accepted values.
void check_attention_call(const AttentionCall& call);

// The key mask of a call (docs/NUMERICS.md "Key masks"): its kind, a pointer when present, strides
// >= 0 whose offsets stay in 64 bits. Error(invalid_argument) naming key_mask; part of check_attention_call.
void check_key_mask(const AttentionCall& call);
// The key masks a call may carry, for the messages of every layer that rejects a mask.
std::string accepted_key_masks_text();

// Plans `call` for `target` ("sm_90", "gfx1201:xnack-"). Throws like check_attention_call, and
// Error(unsupported) when the target has no kernels or a config does not fit (with the reason).
AttentionPlan plan_attention(const AttentionCall& call, const Target& target);
AttentionPlan plan_attention(const AttentionCall& call, std::string_view target);

// The tuning key of a call's kernel family on `target`.
ProblemKey problem_key_of(const AttentionCall& call, std::string_view family, const Target& target);

}  // namespace sagejit
