#include "plan/kernel_limits.hpp"

#include "plan/attention_call.hpp"
#include "plan/attention_plan.hpp"
#include "common/constants.h"
#include "core/error.hpp"

namespace sagejit {

void check_kernel_limits(const AttentionCall& problem) {
  if (problem.batch > max_grid_yz)
    fail(ErrorCode::unsupported, "batch {} exceeds the kernels' limit of {} (a grid dimension)", problem.batch,
         max_grid_yz);
  if (problem.heads_q > max_grid_yz)
    fail(ErrorCode::unsupported, "q heads {} exceed the kernels' limit of {} (a grid dimension)", problem.heads_q,
         max_grid_yz);
  const std::int64_t max_seq = max_sequence;
  if (problem.seq_q > max_seq)
    fail(ErrorCode::unsupported, "q sequence length {} exceeds the kernels' limit of {} (32-bit token indices)",
         problem.seq_q, max_seq);
  if (problem.seq_kv > max_seq)
    fail(ErrorCode::unsupported, "k/v sequence length {} exceeds the kernels' limit of {} (32-bit token indices)",
         problem.seq_kv, max_seq);
  // The gfx12 attention kernel addresses one KV head's quantized K / V^T (Nk_pad x D bytes, D the
  // kernel head dim: padded channels included) with 32-bit offsets added to a scalar base.
  const std::int64_t kv_pad = sj_padded_length(problem.seq_kv);
  const std::int64_t channels = kernel_head_dim_for(problem.head_dim);
  if (kv_pad * channels >= (std::int64_t{1} << 32))
    fail(ErrorCode::unsupported,
         "k/v sequence length {} x head_dim {} (run at {}) exceeds the kernels' limit of 2^32 bytes per quantized k/v "
         "head (32-bit offsets)",
         problem.seq_kv, problem.head_dim, channels);
  // The quantize kernel numbers every 32-row block of Q, K and V of one batch with one int.
  const std::int64_t blocks = sj_quantize_blocks(problem.heads_q, problem.seq_q, problem.heads_kv, problem.seq_kv);
  const std::int64_t q_blocks = sj_row_blocks(problem.seq_q), kv_blocks = sj_row_blocks(problem.seq_kv);
  if (blocks > max_int32)
    fail(ErrorCode::unsupported,
         "{} quantization blocks per batch (q heads {} x {} + 2 x k/v heads {} x {}) exceed the kernels' 32-bit "
         "block index ({})",
         blocks, problem.heads_q, q_blocks, problem.heads_kv, kv_blocks, max_int32);
}

}  // namespace sagejit
