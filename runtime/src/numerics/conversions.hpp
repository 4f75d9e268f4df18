#pragma once
// Exact host conversions between fp32 and the element types of the algorithm (bf16, fp16, OCP
// E4M3FN), all round-to-nearest-even. Thin wrappers over the kernel headers, so host code and every
// kernel convert with one implementation.
#include <cstdint>

#include "common/e4m3.h"
#include "common/prelude.h"
#include "core/error.hpp"
#include "core/kernel_inputs.hpp"
#include "sagejit/types.hpp"

namespace sagejit::numerics {

inline float bf16_to_float(std::uint16_t bits) { return sj_bf16_to_f32(bits); }
inline std::uint16_t float_to_bf16(float value) { return sj_f32_to_bf16(value); }
inline float fp16_to_float(std::uint16_t bits) { return sj_f16_to_f32(bits); }
inline std::uint16_t float_to_fp16(float value) { return sj_f32_to_f16(value); }

// E4M3FN: saturates to ±448 (NaN -> 0x7F); decode is exact (0x7F/0xFF -> NaN).
inline std::uint8_t float_to_e4m3(float value) { return sj_e4m3_encode(value); }
inline float e4m3_to_float(std::uint8_t code) { return sj_e4m3_decode(code); }

// The 16-bit input dtypes the algorithm accepts (the kernels' dtypes: bf16, fp16); anything else is
// `unsupported`.
inline void require_16bit_float(DType dtype, const char* what) {
  if (!is_kernel_dtype(dtype))
    fail(ErrorCode::unsupported, "{}: dtype {} is not supported (supported: {})", what, to_string(dtype),
         kernel_dtypes_text());
}

// 16-bit storage <-> fp32 for a kernel dtype: the kernels' own conversion (kernel_src/common/prelude.h).
inline float half_bits_to_float(std::uint16_t bits, DType dtype) { return sj_from_dtype(bits, static_cast<int>(dtype)); }
inline std::uint16_t float_to_half_bits(float value, DType dtype) {
  return sj_to_dtype(value, static_cast<int>(dtype));
}

}  // namespace sagejit::numerics
