// The C ABI's tensor (sagejit_tensor) that describes a C++ TensorView: what tests and benchmarks of the
// C ABI pass for the views they made (the library's own conversion runs the other way, in api/c_api.cpp).
#pragma once

#include "sagejit/sagejit.h"
#include "sagejit/sagejit.hpp"

namespace sagejit::dev {

inline sagejit_tensor c_abi_tensor(const TensorView& view) {
  sagejit_tensor tensor{};
  tensor.data = view.data;
  tensor.dtype = static_cast<int32_t>(view.dtype);
  tensor.device = view.device;
  for (int i = 0; i < 4; ++i) tensor.shape[i] = view.shape[i], tensor.strides[i] = view.strides[i];
  return tensor;
}

}  // namespace sagejit::dev
