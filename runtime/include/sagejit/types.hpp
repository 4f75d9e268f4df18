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

// Dense (contiguous) strides for a shape.
constexpr std::array<std::int64_t, 4> contiguous_strides(const std::array<std::int64_t, 4>& shape) {
  return {shape[1] * shape[2] * shape[3], shape[2] * shape[3], shape[3], 1};
}

}  // namespace sagejit
