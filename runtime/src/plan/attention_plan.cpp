#include "plan/attention_plan.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <tuple>

#include <fmt/format.h>

#include "common/key_mask.h"
#include "core/error.hpp"
#include "core/log.hpp"
#include "jit/kernel_config.hpp"
#include "kernels/registry.hpp"
#include "plan/kernel_limits.hpp"
#include "tuning/tuning_table.hpp"

namespace sagejit {
namespace {

// A config from the caller, or else from the tuning tables.
TileConfig config_for(const AttentionCall& call, const TileConfig& explicit_config, std::string_view family,
                      const Target& target) {
  if (!explicit_config.empty()) return explicit_config;
  return tuning_tables().lookup(problem_key_of(call, family, target)).config;
}

// The config `desc` runs with, complete, or Error(unsupported) with the descriptor's reason.
TileConfig checked_config(const KernelDesc& desc, const TileConfig& config, const Specialization& spec,
                          const Target& target) {
  const std::string reason = check_kernel_config(desc, config, spec, target);
  if (!reason.empty())
    fail(ErrorCode::unsupported, "kernel {} config {} is not valid for {}: {}", desc.name, config_id(config),
         target.arch, reason);
  return complete_config(desc, config);
}

}  // namespace

std::string accepted_head_dims_text() {
  return fmt::format("multiples of {} from {} to {} ({} natively, the others zero-padded to the next of them)",
                     head_dim_granule, head_dim_granule, std::ranges::max(kernel_head_dims),
                     kernel_head_dims_text());
}

void check_head_dim(std::int64_t head_dim) {
  if (head_dim < head_dim_granule || head_dim > std::ranges::max(kernel_head_dims) || head_dim % head_dim_granule != 0)
    fail(ErrorCode::unsupported, "head_dim {} is not supported; accepted: {}", head_dim, accepted_head_dims_text());
}

int kernel_head_dim_for(std::int64_t head_dim) {
  check_head_dim(head_dim);
  int padded = std::numeric_limits<int>::max();
  for (int kernel_dim : kernel_head_dims)
    if (kernel_dim >= head_dim) padded = std::min(padded, kernel_dim);
  return padded;
}

void check_varlen(const AttentionCall& call) {
  const VarlenView& varlen = call.varlen;
  if (!varlen.present()) {
    if (varlen.cu_seqlens_k != nullptr)
      fail(ErrorCode::invalid_argument, "varlen: cu_seqlens_k is set but cu_seqlens_q is null; pass both or neither");
    return;
  }
  if (varlen.cu_seqlens_k == nullptr)
    fail(ErrorCode::invalid_argument, "varlen: cu_seqlens_k is null; a varlen call needs both cu_seqlens_q and cu_seqlens_k");
  if (call.key_mask.present())
    fail(ErrorCode::unsupported, "a key mask with a varlen call is not supported: a varlen call's masked keys are those "
                                 "past each sequence's length (pass the packed sequences without a mask)");
  // The kernels index the packed rows with 32-bit row numbers (cu_seqlens are int32).
  for (const auto& [total, longest, name] : {std::tuple{varlen.total_q, call.seq_q, "q"}, {varlen.total_k, call.seq_kv, "k"}}) {
    if (total < 1 || total > std::numeric_limits<std::int32_t>::max())
      fail(ErrorCode::invalid_argument, "varlen: the packed {} has {} rows; accepted: 1 to {}", name, total,
           std::numeric_limits<std::int32_t>::max());
    if (longest > total)
      fail(ErrorCode::invalid_argument, "varlen: max_seqlen_{} {} exceeds the {} packed rows of {}", name, longest,
           total, name);
  }
}

void check_key_mask(const AttentionCall& call) {
  const numerics::KeyMaskView& mask = call.key_mask;
  if (mask.kind < 0 || mask.kind > SJ_KEY_MASK_F16)
    fail(ErrorCode::invalid_argument, "key_mask kind {} is not one of {}", mask.kind, accepted_key_masks_text());
  check_varlen(call);
  if (!mask.present()) return;
  if (mask.data == nullptr) fail(ErrorCode::invalid_argument, "key_mask.data is null; pass the mask's pointer");
  if (mask.stride_batch < 0 || mask.stride_key < 0 || mask.stride_head < 0)
    fail(ErrorCode::invalid_argument, "key_mask strides (batch {}, head {}, key {}) must be >= 0", mask.stride_batch,
         mask.stride_head, mask.stride_key);
  if (mask.heads != 1 && mask.heads != call.heads_q)
    fail(ErrorCode::invalid_argument, "key_mask heads {} is not 1 (one mask for every head) or Hq = {}", mask.heads,
         call.heads_q);
  if (mask.per_head() && call.heads_q != call.heads_kv)
    fail(ErrorCode::unsupported, "a key mask per head with GQA (Hq {} != Hk {}) is not supported: K is smoothed and "
         "scaled per KV head over its valid keys, which a mask per query head does not define; pass one mask for "
         "every head", call.heads_q, call.heads_kv);
  // The kernels address the mask with 64-bit element offsets b * stride_batch + h * stride_head + n * stride_key.
  std::int64_t last = 0, term = 0, head_term = 0;
  if (__builtin_mul_overflow(mask.stride_batch, call.batch - 1, &last) ||
      __builtin_mul_overflow(mask.stride_key, call.seq_kv - 1, &term) || __builtin_add_overflow(last, term, &last) ||
      __builtin_mul_overflow(mask.per_head() ? mask.stride_head : 0, mask.heads - 1, &head_term) ||
      __builtin_add_overflow(last, head_term, &last) || last > std::numeric_limits<std::int64_t>::max() / 4)
    fail(ErrorCode::invalid_argument, "key_mask: element offsets (batch {} x stride {}, heads {} x stride {}, keys {} x "
         "stride {}) overflow", call.batch, mask.stride_batch, mask.heads, mask.stride_head, call.seq_kv,
         mask.stride_key);
}

std::string accepted_key_masks_text() {
  return "a key mask per (batch item, key), or per (batch item, head, key) where q and k have the same heads: bool "
         "(True = attend) or an additive fp32, bf16 or fp16 bias, shaped [B, Nk], [B, H, Nk] or a view that "
         "broadcasts along the queries ([B, 1, 1, Nk], [B, H, 1, Nk], or [B, H, Nq, Nk] with stride 0 along Nq, and "
         "along H for one mask for every head; B may be 1 to broadcast over the batch)";
}

void check_attention_call(const AttentionCall& call) {
  const auto positive = [](std::int64_t value, const char* name) {
    if (value < 1) fail(ErrorCode::invalid_argument, "attention: {} must be >= 1 (got {})", name, value);
  };
  positive(call.batch, "batch");
  positive(call.heads_q, "heads_q");
  positive(call.heads_kv, "heads_kv");
  positive(call.seq_q, "seq_q");
  positive(call.seq_kv, "seq_kv");
  if (!is_kernel_dtype(call.dtype))
    fail(ErrorCode::unsupported, "dtype {} is not one of {}", to_string(call.dtype), kernel_dtypes_text());
  check_head_dim(call.head_dim);
  if (call.heads_q % call.heads_kv != 0)
    fail(ErrorCode::invalid_argument,
         "q heads ({}) is not a multiple of k/v heads ({}); grouped-query attention needs Hq % Hk == 0", call.heads_q,
         call.heads_kv);
  if (!std::isfinite(call.sm_scale) || call.sm_scale <= 0.0f)
    fail(ErrorCode::invalid_argument, "sm_scale {} is not finite and > 0", call.sm_scale);
  check_key_mask(call);
  check_kernel_limits(call);
}

ProblemKey problem_key_of(const AttentionCall& call, std::string_view family, const Target& target) {
  ProblemKey key;
  key.kernel = std::string(family);
  key.arch = target.arch;
  key.dtype = call.dtype;
  key.head_dim = kernel_head_dim_for(call.head_dim);  // the tables describe the kernels, which run padded
  key.causal = call.causal;
  key.gqa_ratio = static_cast<int>(call.heads_q / call.heads_kv);
  key.seq_q = static_cast<int>(call.seq_q);
  key.seq_kv = static_cast<int>(call.seq_kv);
  return key;
}

AttentionPlan plan_attention(const AttentionCall& call, const Target& target) {
  check_attention_call(call);
  AttentionPlan plan;
  plan.smooth_k = call.smooth_k;
  plan.spec.dtype = static_cast<int>(call.dtype);
  plan.head_dim = static_cast<int>(call.head_dim);
  plan.spec.head_dim = kernel_head_dim_for(call.head_dim);
  plan.spec.causal = call.causal;
  plan.spec.write_lse = call.writes_lse();
  plan.spec.key_mask = call.masked_kernels();

  // The attention kernel first: it decides the V format prepare writes.
  const TileConfig attention = config_for(call, call.attention_config, "attention", target);
  plan.attention = &find_kernel("attention", target.full, attention);
  TileConfig fitted = kernel_config_of(*plan.attention, attention);
  if (call.attention_config.empty() || call.attention_config_from_table)
    fitted = kernel_table_config(*plan.attention, fitted, plan.spec);
  plan.attention_config = checked_config(*plan.attention, fitted, plan.spec, target);
  plan.spec.v = kernel_v_input(*plan.attention, plan.attention_config);

  plan.prepare = &find_kernel("prepare", target.full);
  const TileConfig prepare = config_for(call, call.prepare_config, "prepare", target);
  plan.prepare_config = checked_config(*plan.prepare, prepare, plan.spec, target);

  plan.shape = {static_cast<int>(call.batch), static_cast<int>(call.heads_q), static_cast<int>(call.heads_kv),
                static_cast<int>(call.seq_q), static_cast<int>(call.seq_kv)};
  plan.workspace = workspace_layout(call, plan.spec.v);
  return plan;
}

AttentionPlan plan_attention(const AttentionCall& call, std::string_view target) {
  return plan_attention(call, parse_target(target));
}

}  // namespace sagejit
