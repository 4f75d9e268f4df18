#include "plan/attention_runner.hpp"

#include "common/params.h"
#include "core/error.hpp"
#include "jit/jit.hpp"
#include "jit/kernel_config.hpp"

namespace sagejit {
namespace {

template <typename T>
T* section(void* workspace, std::size_t offset) {
  return reinterpret_cast<T*>(static_cast<char*>(workspace) + offset);
}

// The sizes both kernels' parameter structs carry (kernel_src/common/params.h).
template <typename Params>
void set_sizes(Params& params, const AttentionPlan& plan) {
  params.batch = plan.shape.batch;
  params.heads_q = plan.shape.heads_q;
  params.heads_kv = plan.shape.heads_kv;
  params.seq_q = plan.shape.seq_q;
  params.seq_kv = plan.shape.seq_kv;
  params.seq_q_pad = static_cast<int>(plan.workspace.seq_q_pad);
  params.seq_kv_pad = static_cast<int>(plan.workspace.seq_kv_pad);
  params.head_dim = plan.head_dim;
}

// The (batch, head, token) strides of a tensor into a parameter struct's three fields.
void set_strides(const RowStrides& strides, long long& batch, long long& head, long long& token) {
  batch = strides.batch;
  head = strides.head;
  token = strides.token;
}

void launch(Device& device, int ordinal, const LoadedKernel& kernel, const KernelDesc& desc, int entry,
            const TileConfig& config, const AttentionPlan& plan, Stream stream, void* params) {
  alignas(64) std::byte extra[kKernelExtraArgumentBytes];  // the descriptor's second argument, if any
  void* args[] = {params, extra};
  if (desc.extra_argument == nullptr || desc.extra_argument(device, config, plan.spec, params, extra) == 0)
    args[1] = nullptr;
  device.launch(ordinal, kernel.functions.at(static_cast<std::size_t>(entry)),
                kernel_geometry(desc, entry, config, plan.spec, plan.shape), stream, args);
}

}  // namespace

void run_attention(Device& device, int ordinal, const AttentionPlan& plan, const AttentionCall& call, void* workspace,
                   Stream stream) {
  if (call.q == nullptr || call.k == nullptr || call.v == nullptr || call.out == nullptr)
    fail(ErrorCode::invalid_argument, "run_attention: q, k, v and out must be device pointers (one is null)");
  if (workspace == nullptr) fail(ErrorCode::invalid_argument, "run_attention: workspace is null");
  if (plan.spec.write_lse != (call.lse != nullptr))
    fail(ErrorCode::invalid_argument, "run_attention: the plan {} an LSE but call.lse is {}",
         plan.spec.write_lse ? "writes" : "does not write", call.lse != nullptr ? "set" : "null");
  if (call.head_dim != plan.head_dim)  // the kernels would read and write the plan's channels
    fail(ErrorCode::invalid_argument, "run_attention: call.head_dim {} differs from the plan's head_dim {}",
         call.head_dim, plan.head_dim);
  const WorkspaceLayout& layout = plan.workspace;
  const ProblemShape& shape = plan.shape;  // (gqa ratio below)
  const LoadedKernel& prepare = load_kernel(device, ordinal, *plan.prepare, plan.prepare_config, plan.spec);
  const LoadedKernel& attention = load_kernel(device, ordinal, *plan.attention, plan.attention_config, plan.spec);

  SjPrepareParams pp{};
  pp.q = call.q;
  pp.k = call.k;
  pp.v = call.v;
  set_strides(call.q_strides, pp.q_stride_b, pp.q_stride_h, pp.q_stride_n);
  set_strides(call.k_strides, pp.k_stride_b, pp.k_stride_h, pp.k_stride_n);
  set_strides(call.v_strides, pp.v_stride_b, pp.v_stride_h, pp.v_stride_n);
  set_sizes(pp, plan);
  pp.q_mul = static_cast<float>(static_cast<double>(call.sm_scale) * 1.4426950408889634);
  pp.smooth_k = plan.smooth_k ? 1 : 0;
  pp.want_lse_delta = plan.spec.write_lse && plan.smooth_k ? 1 : 0;
  pp.q8 = section<signed char>(workspace, layout.q8);
  pp.q_scale = section<float>(workspace, layout.q_scale);
  pp.k8 = section<signed char>(workspace, layout.k8);
  pp.k_scale = section<float>(workspace, layout.k_scale);
  pp.k_mean = section<float>(workspace, layout.k_mean);
  pp.k_mean_partial = plan.smooth_k ? section<double>(workspace, layout.k_mean_partial) : nullptr;
  pp.v_amax_partial = plan.spec.v.pv_fp16 ? nullptr : section<float>(workspace, layout.v_amax_partial);
  pp.v_quant = section<void>(workspace, layout.v_quant);
  pp.v_scale = section<float>(workspace, layout.v_scale);
  pp.lse_delta = pp.want_lse_delta ? section<float>(workspace, layout.lse_delta) : nullptr;

  // stats (only when there is a K mean or a V amax to gather), finalize, quantize.
  if (plan.gather_stats()) launch(device, ordinal, prepare, *plan.prepare, 0, plan.prepare_config, plan, stream, &pp);
  launch(device, ordinal, prepare, *plan.prepare, 1, plan.prepare_config, plan, stream, &pp);
  launch(device, ordinal, prepare, *plan.prepare, 2, plan.prepare_config, plan, stream, &pp);

  SjAttentionParams ap{};
  ap.q8 = pp.q8;
  ap.q_scale = pp.q_scale;
  ap.k8 = pp.k8;
  ap.k_scale = pp.k_scale;
  ap.v_quant = pp.v_quant;
  ap.v_scale = pp.v_scale;
  ap.lse_delta = pp.lse_delta;
  ap.out = call.out;
  set_strides(call.out_strides, ap.o_stride_b, ap.o_stride_h, ap.o_stride_n);
  ap.lse = call.lse;
  set_sizes(ap, plan);
  ap.gqa_ratio = shape.heads_q / shape.heads_kv;
  ap.causal = plan.spec.causal ? 1 : 0;
  launch(device, ordinal, attention, *plan.attention, 0, plan.attention_config, plan, stream, &ap);
}

void run_attention(Device& device, int ordinal, const AttentionCall& call, void* workspace, Stream stream) {
  run_attention(device, ordinal, plan_attention(call, device_target(device, ordinal)), call, workspace, stream);
}

}  // namespace sagejit
