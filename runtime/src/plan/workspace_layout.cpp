#include "plan/workspace_layout.hpp"

#include <limits>

#include "common/params.h"
#include "core/error.hpp"
#include "plan/attention_plan.hpp"

namespace sagejit {
namespace {

constexpr std::int64_t k_mean_chunk = 64;  // SJ_K_MEAN_CHUNK of kernel_src/common/quant.h

std::int64_t round_up(std::int64_t value, std::int64_t multiple) { return (value + multiple - 1) / multiple * multiple; }

// Appends a section of `count` elements of `element_bytes` and returns its offset.
class SectionCursor {
 public:
  std::size_t add(std::int64_t count, std::int64_t element_bytes) {
    const std::size_t offset = next_;
    const auto limit = static_cast<std::int64_t>(std::numeric_limits<std::int64_t>::max() / 2);
    if (count < 0 || (element_bytes != 0 && count > limit / element_bytes))
      fail(ErrorCode::unsupported, "workspace_layout: a section of {} x {} bytes overflows", count, element_bytes);
    const auto bytes = static_cast<std::size_t>(round_up(count * element_bytes, WorkspaceLayout::alignment));
    next_ += bytes;
    return offset;
  }
  std::size_t size() const { return next_; }

 private:
  std::size_t next_ = 0;
};

}  // namespace

WorkspaceLayout workspace_layout(const AttentionCall& call, const VInput& v) {
  check_attention_call(call);
  const bool pv_fp16 = v.pv_fp16, smooth_k = call.smooth_k, lse = call.writes_lse();
  WorkspaceLayout layout;
  layout.seq_q_pad = round_up(call.seq_q, SJ_SEQ_PAD);
  layout.seq_kv_pad = round_up(call.seq_kv, SJ_SEQ_PAD);
  layout.chunks = (call.seq_kv + k_mean_chunk - 1) / k_mean_chunk;
  // Channels per row: the kernel head dim, the call's channels followed by zero padding.
  const std::int64_t bq = call.batch * call.heads_q, bk = call.batch * call.heads_kv,
                     d = kernel_head_dim_for(call.head_dim);

  SectionCursor cursor;
  layout.q8 = cursor.add(bq * layout.seq_q_pad * d, 1);
  layout.q_scale = cursor.add(bq * (layout.seq_q_pad / SJ_QUANT_BLOCK), 4);
  layout.k8 = cursor.add(bk * layout.seq_kv_pad * d, 1);
  layout.k_scale = cursor.add(bk * (layout.seq_kv_pad / SJ_QUANT_BLOCK), 4);
  layout.k_mean = cursor.add(bk * d, 4);
  layout.k_mean_partial = cursor.add(smooth_k ? bk * layout.chunks * d : 0, 8);
  layout.v_amax_partial = cursor.add(pv_fp16 ? 0 : bk * layout.chunks * d, 4);
  layout.v_quant = cursor.add(bk * d * layout.seq_kv_pad, pv_fp16 ? 2 : 1);
  layout.v_scale = cursor.add(bk * d, 4);
  layout.lse_delta = cursor.add(lse && smooth_k ? bq * call.seq_q : 0, 4);
  layout.total_bytes = cursor.size();
  return layout;
}

}  // namespace sagejit
