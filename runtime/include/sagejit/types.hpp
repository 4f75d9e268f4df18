#pragma once
// Plain value types shared by the public API, the CPU oracle and the tools.
#include <array>
#include <cstdint>
#include <string_view>

#include "sagejit/export.hpp"

namespace sagejit {

// Element types a caller may hand us. Only bf16 and fp16 are supported inputs; the others exist so
// that an unsupported input can be named in the error message rather than misread.
enum class DType : int { bf16 = 0, fp16 = 1, fp32 = 2, fp64 = 3, int8 = 4, fp8_e4m3 = 5 };

SAGEJIT_API std::string_view to_string(DType dtype) noexcept;
SAGEJIT_API std::size_t element_size(DType dtype) noexcept;

// HND: [B, H, N, D]; NHD: [B, N, H, D] (SageAttention's tensor_layout names).
enum class Layout : int { HND = 0, NHD = 1 };

SAGEJIT_API std::string_view to_string(Layout layout) noexcept;

// A strided 4-D tensor in device (or, for the oracle, host) memory. shape and strides follow the
// tensor's own dimension order (as the layout says); strides are in elements, not bytes.
struct TensorView {
  void* data = nullptr;
  DType dtype = DType::bf16;
  std::array<std::int64_t, 4> shape{};
  std::array<std::int64_t, 4> strides{};
  int device = 0;  // device ordinal (ignored for host tensors)
};

// Element type of a key mask (docs/NUMERICS.md "Key masks"); the values of the C ABI's sagejit_mask_type.
enum class MaskType : int { none = 0, boolean = 1, fp32 = 2, bf16 = 3, fp16 = 4 };

// A mask per (batch item, key) of one call: [B, Nk] (shape[0] may be 1: one mask for every batch item),
// strides in elements (>= 0; 0 broadcasts). boolean: 1 byte, nonzero = attend (torch SDPA's
// attn_mask convention); fp32/bf16/fp16: an additive bias on the scaled scores (-inf masks a key).
// A torch mask that broadcasts along heads and queries ([B, 1, 1, Nk], an expanded [B, H, Nq, Nk]
// with stride 0 there) is this view of its batch and key dimensions.
struct KeyMask {
  const void* data = nullptr;  // nullptr with MaskType::none: no mask
  MaskType type = MaskType::none;
  std::array<std::int64_t, 2> shape{};    // {B or 1, Nk}
  std::array<std::int64_t, 2> strides{};  // elements
  int device = 0;                         // device ordinal (ignored for the CPU emulation)
  // 1: the same mask for every head. Hq: a mask per query head, row h at h * head_stride elements (LTX's
  // [B, H, 1, Nk], a mask repeated per head in memory); only where q and k have the same heads.
  std::int64_t heads = 1;
  std::int64_t head_stride = 0;
};

// A packed varlen call (flash_attn_varlen_func's and SageAttention's sageattn_varlen convention;
// docs/NUMERICS.md "Varlen"): q, k, v and out are NHD tensors of batch 1 that hold every sequence back
// to back ([1, total, H, D]); sequence b is rows cu_seqlens[b] .. cu_seqlens[b + 1] - 1. The arrays
// (int32, batch + 1 values each, on the call's device; host memory for the CPU emulation) are read by
// the kernels as they are, without a host synchronisation: they must start at 0, not decrease, end at
// the tensors' totals, and no sequence may be longer than its max_seqlen. A sequence outside that is
// clamped to it, so nothing outside the tensors is ever read or written, but its rows are then not the
// attention of that sequence. The LSE output of a varlen call is fp32 [Hq, total_q].
struct Varlen {
  const std::int32_t* cu_seqlens_q = nullptr;  // nullptr: a dense call
  const std::int32_t* cu_seqlens_k = nullptr;
  std::int64_t batch = 0;                       // sequences (each array has batch + 1 values)
  std::int64_t max_seqlen_q = 0, max_seqlen_k = 0;
};

// Dense (contiguous) strides for a shape.
constexpr std::array<std::int64_t, 4> contiguous_strides(const std::array<std::int64_t, 4>& shape) {
  return {shape[1] * shape[2] * shape[3], shape[2] * shape[3], shape[3], 1};
}

}  // namespace sagejit
