#pragma once
// Byte layout of the device workspace shared by the prepare and attention kernels (docs/NUMERICS.md):
// every section starts on a 256-byte boundary; per-channel sections and rows hold the kernel head
// dim's channels (kernel_head_dim_for the call's head dim: padded channels included). The public API's workspace_size() and the attention
// runner both derive it from here, so the two can never disagree.
#include <cstddef>
#include <cstdint>

#include "jit/kernel_desc.hpp"
#include "plan/attention_call.hpp"

namespace sagejit {

// Offsets are from the workspace base; a section that is not needed has size 0 (its offset is still
// valid and equal to the next section's).
struct WorkspaceLayout {
  static constexpr std::size_t alignment = 256;
  std::int64_t seq_q_pad = 0, seq_kv_pad = 0, chunks = 0;  // chunks: 64-token K-mean chunks
  std::size_t q8 = 0, q_scale = 0, k8 = 0, k_scale = 0, k_mean = 0, k_mean_partial = 0, v_amax_partial = 0,
              v_quant = 0, v_scale = 0, lse_delta = 0;
  std::size_t total_bytes = 0;
};

// The layout for `call` when its attention kernel reads V as `v` (pv_fp16: V stored as fp16, 2 bytes,
// without the V-amax scratch); smoothing needs the fp64 K-mean scratch, an LSE with smoothing the
// lse_delta section. Throws like check_attention_call (plan/attention_plan.hpp), and
// Error(unsupported) for a size that overflows.
WorkspaceLayout workspace_layout(const AttentionCall& call, const VInput& v);

}  // namespace sagejit
