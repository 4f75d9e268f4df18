#include "plan/attention_runner.hpp"

#include <cstddef>

#include "common/constants.h"
#include "common/params.h"
#include "core/error.hpp"
#include "jit/jit.hpp"
#include "jit/kernel_config.hpp"

namespace sagejit {
namespace {

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

// The workspace sections both kernels read or write (prepare writes them, attention reads them).
template <typename Params>
void set_shared_sections(Params& params, const WorkspaceSpans& sections) {
  params.q8 = sections.q8.data();
  params.q_scale = sections.q_scale.data();
  params.k8 = sections.k8.data();
  params.k_scale = sections.k_scale.data();
  params.v_quant = sections.v16.empty() ? static_cast<void*>(sections.v8.data()) : sections.v16.data();
  params.v_scale = sections.v_scale.data();
  params.lse_delta = sections.lse_delta.data();  // null unless an LSE with smoothing
}

// The (batch, head, token) strides of a tensor into a parameter struct's three fields.
void set_strides(const RowStrides& strides, long long& batch, long long& head, long long& token) {
  batch = strides.batch;
  head = strides.head;
  token = strides.token;
}

// The kernel's arguments: its parameter struct, the descriptor's extra argument (if this config takes
// one), then the key mask (if the plan has one: kernel_src/common/params.h SjKeyMask).
void launch(Device& device, int ordinal, const LoadedKernel& kernel, const KernelDesc& desc, int entry,
            const TileConfig& config, const AttentionPlan& plan, Stream stream, void* params, SjKeyMask* key_mask) {
  alignas(64) std::byte extra[kKernelExtraArgumentBytes];  // the descriptor's second argument, if any
  void* args[] = {params, nullptr, nullptr};
  int count = 1;
  if (desc.extra_argument != nullptr && desc.extra_argument(device, config, plan.spec, params, extra) != 0)
    args[count++] = extra;
  if (plan.spec.key_mask) args[count++] = key_mask;
  device.launch(ordinal, kernel.functions.at(static_cast<std::size_t>(entry)),
                kernel_geometry(desc, entry, config, plan.spec, plan.shape), stream, args);
}

// What a launch needs of its arguments: device pointers, a workspace, an LSE exactly when the plan
// writes one, the plan's head dim.
void check_launch_arguments(const AttentionPlan& plan, const AttentionCall& call, const void* workspace) {
  if (call.q == nullptr || call.k == nullptr || call.v == nullptr || call.out == nullptr)
    fail(ErrorCode::invalid_argument, "run_attention: q, k, v and out must be device pointers (one is null)");
  if (workspace == nullptr) fail(ErrorCode::invalid_argument, "run_attention: workspace is null");
  if (plan.spec.write_lse != (call.lse != nullptr))
    fail(ErrorCode::invalid_argument, "run_attention: the plan {} an LSE but call.lse is {}",
         plan.spec.write_lse ? "writes" : "does not write", call.lse != nullptr ? "set" : "null");
  if (call.head_dim != plan.head_dim)  // the kernels would read and write the plan's channels
    fail(ErrorCode::invalid_argument, "run_attention: call.head_dim {} differs from the plan's head_dim {}",
         call.head_dim, plan.head_dim);
}

}  // namespace

PlanKernels load_plan_kernels(Device& device, int ordinal, const AttentionPlan& plan) {
  return {&load_kernel(device, ordinal, *plan.prepare, plan.prepare_config, plan.spec),
          &load_kernel(device, ordinal, *plan.attention, plan.attention_config, plan.spec)};
}

void launch_attention(Device& device, int ordinal, const AttentionPlan& plan, const PlanKernels& kernels,
                      const AttentionCall& call, void* workspace, Stream stream) {
  check_launch_arguments(plan, call, workspace);
  const WorkspaceSpans sections = workspace_spans(plan.workspace, static_cast<std::byte*>(workspace));
  const ProblemShape& shape = plan.shape;  // (gqa ratio below)
  const LoadedKernel& prepare = *kernels.prepare;
  const LoadedKernel& attention = *kernels.attention;

  SjPrepareParams pp{};
  pp.q = call.q;
  pp.k = call.k;
  pp.v = call.v;
  set_strides(call.q_strides, pp.q_stride_b, pp.q_stride_h, pp.q_stride_n);
  set_strides(call.k_strides, pp.k_stride_b, pp.k_stride_h, pp.k_stride_n);
  set_strides(call.v_strides, pp.v_stride_b, pp.v_stride_h, pp.v_stride_n);
  set_sizes(pp, plan);
  pp.q_mul = sj_q_multiplier(call.sm_scale);
  pp.smooth_k = plan.smooth_k ? 1 : 0;
  pp.want_lse_delta = plan.spec.write_lse && plan.smooth_k ? 1 : 0;
  pp.finalize_in_quantize = plan.finalize_in_quantize() ? 1 : 0;
  set_shared_sections(pp, sections);
  if (plan.spec.key_mask != call.masked_kernels())  // the kernels take the mask argument exactly when planned
    fail(ErrorCode::invalid_argument, "run_attention: the plan was made {} a key mask (or varlen) but the call has {}",
         plan.spec.key_mask ? "with" : "without", call.masked_kernels() ? "one" : "none");
  SjKeyMask key_mask{};
  if (plan.spec.key_mask) {
    key_mask.mask = call.key_mask.data;
    key_mask.stride_b = call.key_mask.stride_batch;
    key_mask.stride_n = call.key_mask.stride_key;
    key_mask.stride_h = call.key_mask.per_head() ? call.key_mask.stride_head : 0;
    key_mask.kind = call.key_mask.kind;
    key_mask.heads = call.key_mask.heads;
    key_mask.key_bias = sections.key_bias.data();
    key_mask.valid_keys_partial = sections.valid_keys_partial.data();  // null without smoothing
    key_mask.cu_seqlens_q = call.varlen.cu_seqlens_q;  // null for a dense call
    key_mask.cu_seqlens_k = call.varlen.cu_seqlens_k;
    key_mask.total_q = static_cast<int>(call.varlen.total_q);
    key_mask.total_k = static_cast<int>(call.varlen.total_k);
  }
  pp.k_mean = sections.k_mean.data();
  pp.k_mean_partial = sections.k_mean_partial.data();  // null without smoothing
  pp.v_amax_partial = sections.v_amax_partial.data();  // null for fp16 PV

  // stats (only when there is a K mean or a V amax to gather), finalize (unless the quantize kernel
  // does it), quantize.
  if (plan.gather_stats()) launch(device, ordinal, prepare, *plan.prepare, 0, plan.prepare_config, plan, stream, &pp, &key_mask);
  if (!plan.finalize_in_quantize())
    launch(device, ordinal, prepare, *plan.prepare, 1, plan.prepare_config, plan, stream, &pp, &key_mask);
  launch(device, ordinal, prepare, *plan.prepare, 2, plan.prepare_config, plan, stream, &pp, &key_mask);

  SjAttentionParams ap{};
  set_shared_sections(ap, sections);
  ap.out = call.out;
  set_strides(call.out_strides, ap.o_stride_b, ap.o_stride_h, ap.o_stride_n);
  ap.lse = call.lse;
  set_sizes(ap, plan);
  ap.gqa_ratio = shape.heads_q / shape.heads_kv;
  ap.causal = plan.spec.causal ? 1 : 0;
  launch(device, ordinal, attention, *plan.attention, 0, plan.attention_config, plan, stream, &ap, &key_mask);
}

void run_attention(Device& device, int ordinal, const AttentionPlan& plan, const AttentionCall& call, void* workspace,
                   Stream stream) {
  check_launch_arguments(plan, call, workspace);  // before anything is compiled
  launch_attention(device, ordinal, plan, load_plan_kernels(device, ordinal, plan), call, workspace, stream);
}

void run_attention(Device& device, int ordinal, const AttentionCall& call, void* workspace, Stream stream) {
  run_attention(device, ordinal, plan_attention(call, device_target(device, ordinal)), call, workspace, stream);
}

}  // namespace sagejit
