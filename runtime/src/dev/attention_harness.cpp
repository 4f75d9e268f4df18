#include "dev/attention_harness.hpp"

#include <cstring>
#include <vector>

#include "arch/mma_sm80.h"
#include "common/params.h"
#include "core/error.hpp"

namespace sagejit {
namespace {

RowStrides row_strides(const numerics::HostTensor& tensor) {
  const auto& s = tensor.host_view().strides;  // logical (b, h, n, d) order whatever the layout
  return {s[0], s[1], s[2]};
}

template <typename T>
std::vector<T> section(std::span<const std::byte> workspace, std::size_t offset, std::size_t count) {
  if (offset + count * sizeof(T) > workspace.size())
    fail(ErrorCode::internal, "workspace copy of {} bytes ends before its section at {} (+{} bytes)", workspace.size(),
         offset, count * sizeof(T));
  std::vector<T> values(count);
  std::memcpy(values.data(), workspace.data() + offset, count * sizeof(T));
  return values;
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
  numerics::PreparedTensors prepared;
  prepared.batch = call.batch;
  prepared.heads_q = call.heads_q;
  prepared.heads_kv = call.heads_kv;
  prepared.seq_q = call.seq_q;
  prepared.seq_kv = call.seq_kv;
  prepared.seq_q_pad = layout.seq_q_pad;
  prepared.seq_kv_pad = layout.seq_kv_pad;
  prepared.head_dim = call.head_dim;
  prepared.dtype = call.dtype;
  prepared.smooth_k = plan.smooth_k;
  prepared.pv_fp16 = plan.spec.v.pv_fp16;
  prepared.sm_scale = call.sm_scale;
  prepared.q_mul = numerics::q_multiplier(call.sm_scale);
  const auto bq = static_cast<std::size_t>(call.batch * call.heads_q);
  const auto bk = static_cast<std::size_t>(call.batch * call.heads_kv);
  const auto d = static_cast<std::size_t>(call.head_dim);
  const auto nq = static_cast<std::size_t>(layout.seq_q_pad), nk = static_cast<std::size_t>(layout.seq_kv_pad);
  prepared.q8 = section<std::int8_t>(workspace, layout.q8, bq * nq * d);
  prepared.q_scale = section<float>(workspace, layout.q_scale, bq * (nq / SJ_QUANT_BLOCK));
  prepared.k8 = section<std::int8_t>(workspace, layout.k8, bk * nk * d);
  prepared.k_scale = section<float>(workspace, layout.k_scale, bk * (nk / SJ_QUANT_BLOCK));
  prepared.k_mean = section<float>(workspace, layout.k_mean, bk * d);
  if (plan.spec.v.pv_fp16)
    prepared.v16 = section<std::uint16_t>(workspace, layout.v_quant, bk * d * nk);
  else
    prepared.v8 = section<std::uint8_t>(workspace, layout.v_quant, bk * d * nk);
  prepared.v_scale = section<float>(workspace, layout.v_scale, bk * d);
  if (plan.spec.write_lse && plan.smooth_k)
    prepared.lse_delta = section<float>(workspace, layout.lse_delta, bq * static_cast<std::size_t>(call.seq_q));
  return prepared;
}

}  // namespace sagejit
