#include "plan/workspace_layout.hpp"

#include <limits>

#include "common/constants.h"
#include "common/key_mask.h"
#include "core/error.hpp"
#include "plan/attention_plan.hpp"

namespace sagejit {
namespace {

// Appends a section of `count` elements of `element_bytes`.
class SectionCursor {
 public:
  WorkspaceSection add(std::int64_t count, std::int64_t element_bytes) {
    const std::size_t offset = next_;
    const auto limit = static_cast<std::int64_t>(std::numeric_limits<std::int64_t>::max() / 2);
    if (count < 0 || (element_bytes != 0 && count > limit / element_bytes))
      fail(ErrorCode::unsupported, "workspace_layout: a section of {} x {} bytes overflows", count, element_bytes);
    const auto alignment = static_cast<std::int64_t>(WorkspaceLayout::alignment);
    next_ += static_cast<std::size_t>(sj_round_up(count * element_bytes, alignment));
    return {offset, static_cast<std::size_t>(count)};
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
  layout.seq_q_pad = sj_padded_length(call.seq_q);
  layout.seq_kv_pad = sj_padded_length(call.seq_kv);
  layout.chunks = sj_k_mean_chunks(call.seq_kv);
  layout.v_fp16 = pv_fp16;
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
  const bool masked = call.masked_kernels();
  const std::int64_t mask_rows = sj_key_mask_rows(call.key_mask.heads, call.batch);  // per item (and head)
  layout.key_bias = cursor.add(masked ? mask_rows * layout.seq_kv_pad : 0, 4);
  layout.valid_keys_partial = cursor.add(masked && smooth_k ? mask_rows * layout.chunks : 0, 4);
  layout.total_bytes = cursor.size();
  return layout;
}

namespace {

template <typename T>
std::span<T> span_at(std::byte* base, const WorkspaceSection& section) {
  if (section.count == 0) return {};
  return {reinterpret_cast<T*>(base + section.offset), section.count};
}

}  // namespace

WorkspaceSpans workspace_spans(const WorkspaceLayout& layout, std::byte* base) {
  const WorkspaceSection no_section;
  return {
      .q8 = span_at<signed char>(base, layout.q8),
      .q_scale = span_at<float>(base, layout.q_scale),
      .k8 = span_at<signed char>(base, layout.k8),
      .k_scale = span_at<float>(base, layout.k_scale),
      .k_mean = span_at<float>(base, layout.k_mean),
      .k_mean_partial = span_at<double>(base, layout.k_mean_partial),
      .v_amax_partial = span_at<float>(base, layout.v_amax_partial),
      .v16 = span_at<std::uint16_t>(base, layout.v_fp16 ? layout.v_quant : no_section),
      .v8 = span_at<std::uint8_t>(base, layout.v_fp16 ? no_section : layout.v_quant),
      .v_scale = span_at<float>(base, layout.v_scale),
      .lse_delta = span_at<float>(base, layout.lse_delta),
      .key_bias = span_at<float>(base, layout.key_bias),
      .valid_keys_partial = span_at<std::int32_t>(base, layout.valid_keys_partial),
  };
}

}  // namespace sagejit
