// A packed varlen call on host memory (docs/NUMERICS.md "Varlen"), computed as the kernels compute it:
// the key-mask kernels see sequence b as batch item b of the longest lengths, whose keys past its own
// length are masked and whose query rows past it are zero and not written. So the emulator runs that
// batch (each sequence copied into its own zero-padded item, a boolean key mask of its lengths) and
// writes each sequence's rows back into the packed output and LSE.
#include <algorithm>
#include <cstring>
#include <vector>

#include "common/key_mask.h"
#include "core/error.hpp"
#include "numerics/emulator.hpp"

namespace sagejit::numerics {
namespace {

// The rows of a packed NHD tensor [1, total, H, D] as a contiguous NHD batch [batch, longest, H, D]:
// sequence b's rows (sj_seq_start / sj_seq_length of the kernels, clamped alike) at the start of item b,
// the rest zero.
std::vector<std::uint16_t> padded_batch(const TensorView& packed, const std::int32_t* cu, std::int64_t batch,
                                        std::int64_t longest) {
  const std::int64_t total = packed.shape[1], heads = packed.shape[2], dims = packed.shape[3];
  std::vector<std::uint16_t> padded(static_cast<std::size_t>(batch * longest * heads * dims), 0);
  const auto* source = static_cast<const std::uint16_t*>(packed.data);
  for (std::int64_t b = 0; b < batch; ++b) {
    const int start = sj_seq_start(cu, static_cast<int>(b), static_cast<int>(total));
    const int length = sj_seq_length(cu, static_cast<int>(b), static_cast<int>(longest), static_cast<int>(total));
    for (std::int64_t n = 0; n < length; ++n)
      for (std::int64_t h = 0; h < heads; ++h)
        std::memcpy(&padded[static_cast<std::size_t>(((b * longest + n) * heads + h) * dims)],
                    source + (start + n) * packed.strides[1] + h * packed.strides[2],
                    static_cast<std::size_t>(dims) * sizeof(std::uint16_t));
  }
  return padded;
}

TensorView view_of(std::vector<std::uint16_t>& data, DType dtype, std::int64_t batch, std::int64_t tokens,
                   std::int64_t heads, std::int64_t dims) {
  return {data.data(), dtype, {batch, tokens, heads, dims}, {tokens * heads * dims, heads * dims, dims, 1}, 0};
}

}  // namespace

void varlen_attention_into(const TensorView& q, const TensorView& k, const TensorView& v, const TensorView& out,
                           const std::int32_t* cu_seqlens_q, const std::int32_t* cu_seqlens_k, std::int64_t batch,
                           std::int64_t max_seqlen_q, std::int64_t max_seqlen_k, EmulatorOptions options, float* lse) {
  if (cu_seqlens_q == nullptr || cu_seqlens_k == nullptr || batch < 1 || max_seqlen_q < 1 || max_seqlen_k < 1)
    fail(ErrorCode::invalid_argument, "emulator varlen: cu_seqlens_q/k, batch {} and max_seqlen {} / {} must be set",
         batch, max_seqlen_q, max_seqlen_k);
  if (options.key_mask.present())
    fail(ErrorCode::invalid_argument, "emulator varlen: a key mask with varlen is not supported");
  for (const TensorView* t : {&q, &k, &v, &out})
    if (t->shape[0] != 1) fail(ErrorCode::invalid_argument, "emulator varlen: packed tensors are [1, total, H, D]");
  const std::int64_t heads_q = q.shape[2], heads_kv = k.shape[2], dims = q.shape[3];
  const std::int64_t total_q = q.shape[1], total_k = k.shape[1];
  std::vector<std::uint16_t> q_pad = padded_batch(q, cu_seqlens_q, batch, max_seqlen_q);
  std::vector<std::uint16_t> k_pad = padded_batch(k, cu_seqlens_k, batch, max_seqlen_k);
  std::vector<std::uint16_t> v_pad = padded_batch(v, cu_seqlens_k, batch, max_seqlen_k);
  // The keys of each sequence: a boolean key mask [batch, longest].
  std::vector<std::uint8_t> valid(static_cast<std::size_t>(batch * max_seqlen_k), 0);
  for (std::int64_t b = 0; b < batch; ++b) {
    const int length = sj_seq_length(cu_seqlens_k, static_cast<int>(b), static_cast<int>(max_seqlen_k),
                                     static_cast<int>(total_k));
    std::fill_n(valid.begin() + b * max_seqlen_k, length, std::uint8_t{1});
  }
  options.key_mask = {valid.data(), SJ_KEY_MASK_BOOL, max_seqlen_k, 1};
  const PreparedTensors prepared =
      prepare(view_of(q_pad, q.dtype, batch, max_seqlen_q, heads_q, dims), view_of(k_pad, q.dtype, batch, max_seqlen_k, heads_kv, dims),
              view_of(v_pad, q.dtype, batch, max_seqlen_k, heads_kv, dims), Layout::NHD, options);
  std::vector<std::uint16_t> out_pad(q_pad.size(), 0);
  std::vector<float> lse_pad(lse != nullptr ? static_cast<std::size_t>(batch * heads_q * max_seqlen_q) : 0);
  attention_into(prepared, options, view_of(out_pad, q.dtype, batch, max_seqlen_q, heads_q, dims), Layout::NHD,
                 lse != nullptr ? lse_pad.data() : nullptr);
  auto* target = static_cast<std::uint16_t*>(out.data);
  for (std::int64_t b = 0; b < batch; ++b) {
    const int start = sj_seq_start(cu_seqlens_q, static_cast<int>(b), static_cast<int>(total_q));
    const int length = sj_seq_length(cu_seqlens_q, static_cast<int>(b), static_cast<int>(max_seqlen_q),
                                     static_cast<int>(total_q));
    for (std::int64_t n = 0; n < length; ++n)
      for (std::int64_t h = 0; h < heads_q; ++h) {
        std::memcpy(target + (start + n) * out.strides[1] + h * out.strides[2],
                    &out_pad[static_cast<std::size_t>(((b * max_seqlen_q + n) * heads_q + h) * dims)],
                    static_cast<std::size_t>(dims) * sizeof(std::uint16_t));
        if (lse != nullptr)
          lse[sj_lse_row(cu_seqlens_q, static_cast<int>(b), static_cast<int>(h), static_cast<int>(heads_q),
                         static_cast<int>(max_seqlen_q), static_cast<int>(total_q), static_cast<int>(n))] =
              lse_pad[static_cast<std::size_t>((b * heads_q + h) * max_seqlen_q + n)];
      }
  }
}

}  // namespace sagejit::numerics
