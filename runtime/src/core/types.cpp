#include "sagejit/types.hpp"

namespace sagejit {

std::string_view to_string(DType dtype) noexcept {
  switch (dtype) {
    case DType::bf16: return "bf16";
    case DType::fp16: return "fp16";
    case DType::fp32: return "fp32";
    case DType::fp64: return "fp64";
    case DType::int8: return "int8";
    case DType::fp8_e4m3: return "fp8_e4m3";
  }
  return "unknown";
}

std::size_t element_size(DType dtype) noexcept {
  switch (dtype) {
    case DType::bf16:
    case DType::fp16: return 2;
    case DType::fp32: return 4;
    case DType::fp64: return 8;
    case DType::int8:
    case DType::fp8_e4m3: return 1;
  }
  return 0;
}

std::string_view to_string(Layout layout) noexcept { return layout == Layout::HND ? "HND" : "NHD"; }

}  // namespace sagejit
