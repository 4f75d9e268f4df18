#pragma once
// The plan of one attention call: every rule of the two-kernel pipeline (prepare, then attention) in
// one place. Which dtypes, head dims and sizes are supported, which prepare and attention kernels run
// with which complete configs (explicit, or from the tuning tables), the specialization both are
// compiled for (including the V format the attention kernel's descriptor declares), their launch
// shape and the workspace layout. The API, the runner, the tools, the benchmarks and the GPU tests
// all ask plan_attention; nothing else re-derives any of it.
#include <string_view>

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
  Specialization spec;          // what both kernels are compiled for
  ProblemShape shape;           // for launch geometry
  WorkspaceLayout workspace;    // what prepare writes and attention reads
  bool smooth_k = true;         // K mean subtracted (a runtime switch of prepare, not compiled in)

  // The prepare stats kernel runs only when there is a K mean or a V amax to gather.
  bool gather_stats() const { return smooth_k || !spec.v.pv_fp16; }
};

// Error(unsupported) unless the kernels are compiled for `head_dim` (jit/kernel_desc.hpp).
void check_head_dim(std::int64_t head_dim);

// Checks the sizes, dtype, head dim, GQA ratio, sm_scale and the kernels' index limits of a call (no
// pointers): Error(invalid_argument | unsupported) naming the field and the accepted values.
void check_attention_call(const AttentionCall& call);

// Plans `call` for `target` ("sm_90", "gfx1201:xnack-"). Throws like check_attention_call, and
// Error(unsupported) when the target has no kernels or a config does not fit (with the reason).
AttentionPlan plan_attention(const AttentionCall& call, const Target& target);
AttentionPlan plan_attention(const AttentionCall& call, std::string_view target);

// The tuning key of a call's kernel family on `target`.
ProblemKey problem_key_of(const AttentionCall& call, std::string_view family, const Target& target);

}  // namespace sagejit
