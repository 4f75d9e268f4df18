#include "dev/attention_harness.hpp"

#include <vector>

#include "arch/mma_sm80.h"
#include "common/constants.h"
#include "core/error.hpp"

namespace sagejit {
namespace {

RowStrides row_strides(const numerics::HostTensor& tensor) {
  const auto& s = tensor.host_view().strides;  // logical (b, h, n, d) order whatever the layout
  return {s[0], s[1], s[2]};
}

template <typename T>
std::vector<T> copied(std::span<T> section) {
  return {section.begin(), section.end()};
}

}  // namespace

AttentionCall attention_call_for(const numerics::HostTensor& q, const numerics::HostTensor& k,
                                 const numerics::HostTensor& v, const numerics::HostTensor& out, const DevicePointers& device, bool causal,
                                 bool smooth_k) {
  AttentionCall call;
  call.batch = q.dims().batch;
  call.heads_q = q.dims().heads;
  call.heads_kv = k.dims().heads;
  call.seq_q = q.dims().tokens;
  call.seq_kv = k.dims().tokens;
  call.head_dim = q.dims().head_dim;
  call.dtype = q.host_view().dtype;
  call.q = device.q;
  call.k = device.k;
  call.v = device.v;
  call.out = device.out;
  call.q_strides = row_strides(q);
  call.k_strides = row_strides(k);
  if (v.dims() != k.dims()) fail(ErrorCode::invalid_argument, "attention_call_for: v's dims differ from k's");
  call.v_strides = row_strides(v);
  call.out_strides = row_strides(out);
  call.causal = causal;
  call.sm_scale = numerics::default_sm_scale(call.head_dim);
  call.smooth_k = smooth_k;
  call.lse = device.lse;
  return call;
}

numerics::KeySlotMap v_key_slots(const AttentionPlan& plan) {
  if (plan.spec.v.order == VOrder::sm80_fp8_permuted) return [](int key) { return sj_sm80_v_slot_of_key(key); };
  return {};
}

numerics::PreparedTensors prepared_from_workspace(std::span<const std::byte> workspace, const AttentionPlan& plan,
                                                  const AttentionCall& call) {
  const WorkspaceLayout& layout = plan.workspace;
  if (workspace.size() < layout.total_bytes)
    fail(ErrorCode::internal, "workspace copy of {} bytes is shorter than the plan's workspace of {} bytes",
         workspace.size(), layout.total_bytes);
  // Only read below: the spans of a const copy.
  const WorkspaceSpans sections = workspace_spans(layout, const_cast<std::byte*>(workspace.data()));
  return {
      .batch = call.batch,
      .heads_q = call.heads_q,
      .heads_kv = call.heads_kv,
      .seq_q = call.seq_q,
      .seq_kv = call.seq_kv,
      .seq_q_pad = layout.seq_q_pad,
      .seq_kv_pad = layout.seq_kv_pad,
      .head_dim = call.head_dim,
      .head_dim_pad = plan.spec.head_dim,  // workspace rows: padded channels included
      .dtype = call.dtype,
      .smooth_k = plan.smooth_k,
      .pv_fp16 = plan.spec.v.pv_fp16,
      .sm_scale = call.sm_scale,
      .q_mul = sj_q_multiplier(call.sm_scale),
      .q8 = copied(sections.q8),
      .q_scale = copied(sections.q_scale),
      .k8 = copied(sections.k8),
      .k_scale = copied(sections.k_scale),
      .k_mean = copied(sections.k_mean),
      .v8 = copied(sections.v8),  // one of v8 and v16 is empty, as the plan's V format says
      .v16 = copied(sections.v16),
      .v_scale = copied(sections.v_scale),
      .lse_delta = copied(sections.lse_delta),  // empty unless an LSE with smoothing
      .key_bias = copied(sections.key_bias),    // empty without a key mask
  };
}

}  // namespace sagejit
