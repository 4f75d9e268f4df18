#include "kernels/attention_runner.hpp"

#include <cmath>
#include <limits>
#include <map>
#include <mutex>
#include <utility>

#include "common/params.h"
#include "core/error.hpp"
#include "kernels/jit.hpp"
#include "kernels/registry.hpp"
#include "tuning/problem_key.hpp"
#include "tuning/tuning_table.hpp"

namespace sagejit {
namespace {

void check_call(const AttentionCall& call) {
  const auto positive = [](std::int64_t value, const char* name) {
    if (value < 1) fail(ErrorCode::invalid_argument, "run_attention: {} must be >= 1 (got {})", name, value);
  };
  positive(call.batch, "batch");
  positive(call.heads_q, "heads_q");
  positive(call.heads_kv, "heads_kv");
  positive(call.seq_q, "seq_q");
  positive(call.seq_kv, "seq_kv");
  if (call.head_dim != 64 && call.head_dim != 128)
    fail(ErrorCode::unsupported, "run_attention: head_dim {} is not one of [64, 128]", call.head_dim);
  if (call.dtype != DType::bf16 && call.dtype != DType::fp16)
    fail(ErrorCode::unsupported, "run_attention: dtype {} is not one of [bf16, fp16]", to_string(call.dtype));
  if (call.heads_q % call.heads_kv != 0)
    fail(ErrorCode::invalid_argument, "run_attention: heads_q {} is not a multiple of heads_kv {}", call.heads_q,
         call.heads_kv);
  if (call.q == nullptr || call.k == nullptr || call.v == nullptr || call.out == nullptr)
    fail(ErrorCode::invalid_argument, "run_attention: q, k, v and out must be device pointers (one is null)");
  if (!std::isfinite(call.sm_scale) || call.sm_scale <= 0.0f)
    fail(ErrorCode::invalid_argument, "run_attention: sm_scale must be finite and > 0 (got {})", call.sm_scale);
  // The kernels index rows and grids with 32-bit ints.
  const std::int64_t int_limit = std::numeric_limits<int>::max() / 2;
  if (call.seq_q > int_limit || call.seq_kv > int_limit || call.heads_q > 65535 || call.batch > 65535)
    fail(ErrorCode::unsupported, "run_attention: sizes beyond the kernels' index range (seq <= {}, heads_q and batch <= 65535)",
         int_limit);
}

Specialization specialization_of(const AttentionCall& call, bool pv_fp16, const std::string& target) {
  Specialization spec;
  spec.dtype = static_cast<int>(call.dtype);
  spec.head_dim = static_cast<int>(call.head_dim);
  spec.causal = call.causal;
  spec.write_lse = call.lse != nullptr;
  spec.smooth_k = call.smooth_k;
  spec.pv_fp16 = pv_fp16;
  spec.target = target;
  return spec;
}

ProblemShape problem_shape_of(const AttentionCall& call) {
  ProblemShape shape;
  shape.batch = static_cast<int>(call.batch);
  shape.heads_q = static_cast<int>(call.heads_q);
  shape.heads_kv = static_cast<int>(call.heads_kv);
  shape.seq_q = static_cast<int>(call.seq_q);
  shape.seq_kv = static_cast<int>(call.seq_kv);
  return shape;
}

// The device's target, queried once per (device, ordinal): DeviceInfo costs several driver calls,
// and this is on every attention call. Devices are the process-wide backends (cuda_device(),
// hip_device()), alive until exit, so their addresses identify them.
std::string device_target(Device& device, int ordinal) {
  static std::mutex mutex;
  static std::map<std::pair<const Device*, int>, std::string> targets;
  const std::lock_guard lock(mutex);
  const auto key = std::make_pair(static_cast<const Device*>(&device), ordinal);
  auto it = targets.find(key);
  if (it == targets.end()) it = targets.emplace(key, device.info(ordinal).target).first;
  return it->second;
}

template <typename T>
T* section(void* workspace, std::size_t offset) {
  return reinterpret_cast<T*>(static_cast<char*>(workspace) + offset);
}

void launch(Device& device, int ordinal, const LoadedKernel& kernel, const KernelDesc& desc, int entry,
            const TileConfig& config, const Specialization& spec, const ProblemShape& shape, Stream stream,
            void* params) {
  void* args[] = {params};
  device.launch(ordinal, kernel.functions.at(static_cast<std::size_t>(entry)),
                desc.geometry(entry, config, spec, shape), stream, args);
}

}  // namespace

ResolvedConfigs resolve_configs(const AttentionCall& call, const std::string& target) {
  ResolvedConfigs resolved{call.attention_config, call.prepare_config, false};
  ProblemKey key;
  key.arch = arch_of_target(target);
  key.dtype = call.dtype;
  key.head_dim = static_cast<int>(call.head_dim);
  key.causal = call.causal;
  key.gqa_ratio = static_cast<int>(call.heads_q / call.heads_kv);
  key.seq_q = static_cast<int>(call.seq_q);
  key.seq_kv = static_cast<int>(call.seq_kv);
  if (resolved.attention.empty()) {
    key.kernel = "attention";
    resolved.attention = tuning_tables().lookup(key).config;
  }
  if (resolved.prepare.empty()) {
    key.kernel = "prepare";
    resolved.prepare = tuning_tables().lookup(key).config;
  }
  const auto pv = resolved.attention.find("pv_fp16");
  resolved.pv_fp16 = pv != resolved.attention.end() && pv->second != 0;
  return resolved;
}

WorkspaceShape workspace_shape(const AttentionCall& call, bool pv_fp16) {
  WorkspaceShape shape;
  shape.batch = call.batch;
  shape.heads_q = call.heads_q;
  shape.heads_kv = call.heads_kv;
  shape.seq_q = call.seq_q;
  shape.seq_kv = call.seq_kv;
  shape.head_dim = call.head_dim;
  shape.pv_fp16 = pv_fp16;
  shape.smooth_k = call.smooth_k;
  shape.lse = call.lse != nullptr;
  return shape;
}

void run_attention(Device& device, int ordinal, const AttentionCall& call, void* workspace, Stream stream) {
  check_call(call);
  if (workspace == nullptr) fail(ErrorCode::invalid_argument, "run_attention: workspace is null");
  const std::string target = device_target(device, ordinal);
  const ResolvedConfigs configs = resolve_configs(call, target);
  const Specialization spec = specialization_of(call, configs.pv_fp16, target);
  const ProblemShape shape = problem_shape_of(call);
  const WorkspaceLayout layout = workspace_layout(workspace_shape(call, configs.pv_fp16));

  const KernelDesc& prepare_desc = find_kernel("prepare", target);
  const KernelDesc& attention_desc = find_kernel("attention", target, configs.attention);
  const LoadedKernel& prepare = load_kernel(device, ordinal, prepare_desc, configs.prepare, spec);
  const LoadedKernel& attention = load_kernel(device, ordinal, attention_desc, configs.attention, spec);

  SjPrepareParams pp{};
  pp.q = call.q;
  pp.k = call.k;
  pp.v = call.v;
  pp.q_stride_b = call.q_strides.batch;
  pp.q_stride_h = call.q_strides.head;
  pp.q_stride_n = call.q_strides.token;
  pp.k_stride_b = call.k_strides.batch;
  pp.k_stride_h = call.k_strides.head;
  pp.k_stride_n = call.k_strides.token;
  pp.v_stride_b = call.v_strides.batch;
  pp.v_stride_h = call.v_strides.head;
  pp.v_stride_n = call.v_strides.token;
  pp.batch = shape.batch;
  pp.heads_q = shape.heads_q;
  pp.heads_kv = shape.heads_kv;
  pp.seq_q = shape.seq_q;
  pp.seq_kv = shape.seq_kv;
  pp.seq_q_pad = static_cast<int>(layout.seq_q_pad);
  pp.seq_kv_pad = static_cast<int>(layout.seq_kv_pad);
  pp.q_mul = static_cast<float>(static_cast<double>(call.sm_scale) * 1.4426950408889634);
  pp.smooth_k = call.smooth_k ? 1 : 0;
  pp.want_lse_delta = call.lse != nullptr && call.smooth_k ? 1 : 0;
  pp.q8 = section<signed char>(workspace, layout.q8);
  pp.q_scale = section<float>(workspace, layout.q_scale);
  pp.k8 = section<signed char>(workspace, layout.k8);
  pp.k_scale = section<float>(workspace, layout.k_scale);
  pp.k_mean = section<float>(workspace, layout.k_mean);
  pp.k_mean_partial = call.smooth_k ? section<double>(workspace, layout.k_mean_partial) : nullptr;
  pp.v_amax_partial = configs.pv_fp16 ? nullptr : section<float>(workspace, layout.v_amax_partial);
  pp.v_quant = section<void>(workspace, layout.v_quant);
  pp.v_scale = section<float>(workspace, layout.v_scale);
  pp.lse_delta = pp.want_lse_delta ? section<float>(workspace, layout.lse_delta) : nullptr;

  // stats (only when there is a K mean or a V amax to gather), finalize, quantize.
  if (call.smooth_k || !configs.pv_fp16)
    launch(device, ordinal, prepare, prepare_desc, 0, configs.prepare, spec, shape, stream, &pp);
  launch(device, ordinal, prepare, prepare_desc, 1, configs.prepare, spec, shape, stream, &pp);
  launch(device, ordinal, prepare, prepare_desc, 2, configs.prepare, spec, shape, stream, &pp);

  SjAttentionParams ap{};
  ap.q8 = pp.q8;
  ap.q_scale = pp.q_scale;
  ap.k8 = pp.k8;
  ap.k_scale = pp.k_scale;
  ap.v_quant = pp.v_quant;
  ap.v_scale = pp.v_scale;
  ap.lse_delta = pp.lse_delta;
  ap.out = call.out;
  ap.o_stride_b = call.out_strides.batch;
  ap.o_stride_h = call.out_strides.head;
  ap.o_stride_n = call.out_strides.token;
  ap.lse = call.lse;
  ap.batch = shape.batch;
  ap.heads_q = shape.heads_q;
  ap.heads_kv = shape.heads_kv;
  ap.seq_q = shape.seq_q;
  ap.seq_kv = shape.seq_kv;
  ap.seq_q_pad = pp.seq_q_pad;
  ap.seq_kv_pad = pp.seq_kv_pad;
  ap.gqa_ratio = shape.heads_q / shape.heads_kv;
  ap.causal = call.causal ? 1 : 0;
  launch(device, ordinal, attention, attention_desc, 0, configs.attention, spec, shape, stream, &ap);
}

}  // namespace sagejit
