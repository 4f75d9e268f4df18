#pragma once
// Byte layout of the device workspace shared by the prepare and attention kernels (docs/NUMERICS.md):
// every section starts on a 256-byte boundary; per-channel sections and rows hold the kernel head
// dim's channels (kernel_head_dim_for the call's head dim: padded channels included). The public API's
// workspace_size(), the attention runner and the harness that reads a workspace back
// (dev/attention_harness.cpp) all derive it from here, so they can never disagree.
#include <cstddef>
#include <cstdint>
#include <span>

#include "jit/kernel_desc.hpp"
#include "plan/attention_call.hpp"

namespace sagejit {

// One section: its offset from the workspace base and its element count. A section that is not
// needed has count 0 (its offset is still valid and equal to the next section's).
struct WorkspaceSection {
  std::size_t offset = 0;
  std::size_t count = 0;
  bool operator==(const WorkspaceSection&) const = default;
};

struct WorkspaceLayout {
  static constexpr std::size_t alignment = 256;
  std::int64_t seq_q_pad = 0, seq_kv_pad = 0, chunks = 0;  // chunks: K-mean chunks (sj_k_mean_chunks)
  bool v_fp16 = false;  // v_quant holds fp16 values (2 bytes each), else e4m3 codes (1 byte)
  WorkspaceSection q8, q_scale, k8, k_scale, k_mean, k_mean_partial, v_amax_partial, v_quant, v_scale, lse_delta;
  // With a key mask (docs/NUMERICS.md "Key masks"): the log2-domain bias of every key, fp32 [B, Nk_pad],
  // and (with smoothing) the valid keys of every K-mean chunk, int32 [B, chunks].
  WorkspaceSection key_bias, valid_keys_partial;
  std::size_t total_bytes = 0;
};

// The sections of a workspace at `base` as the kernels' parameter structs (kernel_src/common/params.h)
// point at them: device memory for the runner, a host copy for the harness. A section the call does
// not use is an empty span whose data() is null; v_quant is v16 or v8, the other one empty.
struct WorkspaceSpans {
  std::span<signed char> q8;
  std::span<float> q_scale;
  std::span<signed char> k8;
  std::span<float> k_scale, k_mean;
  std::span<double> k_mean_partial;
  std::span<float> v_amax_partial;
  std::span<std::uint16_t> v16;
  std::span<std::uint8_t> v8;
  std::span<float> v_scale, lse_delta;
  std::span<float> key_bias;
  std::span<std::int32_t> valid_keys_partial;
};

WorkspaceSpans workspace_spans(const WorkspaceLayout& layout, std::byte* base);

// The layout for `call` when its attention kernel reads V as `v` (pv_fp16: V stored as fp16, 2 bytes,
// without the V-amax scratch); smoothing needs the fp64 K-mean scratch, an LSE with smoothing the
// lse_delta section. Throws like check_attention_call (plan/attention_plan.hpp), and
// Error(unsupported) for a size that overflows.
WorkspaceLayout workspace_layout(const AttentionCall& call, const VInput& v);

}  // namespace sagejit
