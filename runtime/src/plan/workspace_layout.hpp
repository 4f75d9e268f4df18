#pragma once
// Byte layout of the device workspace shared by the prepare and attention kernels (docs/NUMERICS.md):
// every section starts on a 256-byte boundary. The public API's workspace_size() and the attention
// runner both derive it from here, so the two can never disagree.
#include <cstddef>
#include <cstdint>

namespace sagejit {

struct WorkspaceShape {
  std::int64_t batch = 1, heads_q = 1, heads_kv = 1, seq_q = 1, seq_kv = 1, head_dim = 128;
  bool pv_fp16 = false;   // V stored as fp16 (2 bytes) instead of e4m3 (1 byte)
  bool smooth_k = true;   // needs the fp64 K-mean scratch
  bool lse = false;       // LSE requested: with smoothing, the lse_delta section
};

// Offsets are from the workspace base; a section that is not needed has size 0 (its offset is still
// valid and equal to the next section's).
struct WorkspaceLayout {
  static constexpr std::size_t alignment = 256;
  std::int64_t seq_q_pad = 0, seq_kv_pad = 0, chunks = 0;  // chunks: 64-token K-mean chunks
  std::size_t q8 = 0, q_scale = 0, k8 = 0, k_scale = 0, k_mean = 0, k_mean_partial = 0, v_amax_partial = 0,
              v_quant = 0, v_scale = 0, lse_delta = 0;
  std::size_t total_bytes = 0;
};

// Throws Error(invalid_argument) naming the field for non-positive sizes or heads_q not a multiple of
// heads_kv; Error(unsupported) for head_dim not 64/128 or a size that overflows.
WorkspaceLayout workspace_layout(const WorkspaceShape& shape);

}  // namespace sagejit
