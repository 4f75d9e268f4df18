#pragma once
// Host-side attention tensors for the oracles and the tests: logical shape [B, H, N, D] in bf16/fp16
// (stored as 16-bit codes) in either layout (HND / NHD) with arbitrary strides. HostView addresses
// any strided host data described by a sagejit::TensorView; HostTensor owns such data.
#include <array>
#include <cstdint>
#include <vector>

#include "sagejit/types.hpp"

namespace sagejit::numerics {

// Logical dimensions of an attention tensor, independent of its layout.
struct Dims {
  std::int64_t batch = 1, heads = 1, tokens = 1, head_dim = 1;
  std::int64_t count() const { return batch * heads * tokens * head_dim; }
  bool operator==(const Dims&) const = default;
};

// A bf16/fp16 strided view of host memory addressed by logical (b, h, n, d) whatever the layout.
struct HostView {
  std::uint16_t* data = nullptr;
  DType dtype = DType::bf16;
  Dims dims;
  std::array<std::int64_t, 4> strides{};  // elements, logical order (b, h, n, d)

  // Validates a TensorView (non-null data, bf16/fp16, positive extents) and reorders its shape and
  // strides from the layout's dimension order to (b, h, n, d). `name` is used in error messages.
  static HostView from(const TensorView& view, Layout layout, const char* name);

  std::int64_t offset(std::int64_t b, std::int64_t h, std::int64_t n, std::int64_t d) const {
    return b * strides[0] + h * strides[1] + n * strides[2] + d * strides[3];
  }
  std::uint16_t bits(std::int64_t b, std::int64_t h, std::int64_t n, std::int64_t d) const {
    return data[offset(b, h, n, d)];
  }
  float get(std::int64_t b, std::int64_t h, std::int64_t n, std::int64_t d) const;
  void set(std::int64_t b, std::int64_t h, std::int64_t n, std::int64_t d, float value) const;  // RNE
};

// Extra elements added to each stride beyond the dense one (a strided, non-contiguous tensor).
struct StridePadding {
  std::int64_t batch = 0, head = 0, token = 0;
};

// Owning host tensor. Storage starts poisoned (NaN codes everywhere, padding included), so an
// element a producer forgot to write is visible.
class HostTensor {
 public:
  HostTensor(Dims dims, DType dtype, Layout layout, StridePadding padding = {});

  const Dims& dims() const { return view_.dims; }
  DType dtype() const { return view_.dtype; }
  Layout layout() const { return layout_; }
  const HostView& host_view() const { return view_; }
  // Shape and strides in the layout's own dimension order, as the public API takes them.
  TensorView view() const;

  float get(std::int64_t b, std::int64_t h, std::int64_t n, std::int64_t d) const { return view_.get(b, h, n, d); }
  void set(std::int64_t b, std::int64_t h, std::int64_t n, std::int64_t d, float value) { view_.set(b, h, n, d, value); }
  std::uint16_t bits(std::int64_t b, std::int64_t h, std::int64_t n, std::int64_t d) const { return view_.bits(b, h, n, d); }

  // Whole storage, padding included (for poison checks and raw copies to a device).
  std::vector<std::uint16_t>& storage() { return storage_; }
  const std::vector<std::uint16_t>& storage() const { return storage_; }
  // Is storage element `index` one that the logical view does not address?
  bool is_padding(std::size_t index) const { return !addressed_[index]; }

  // The same values in another layout / stride padding (bit-identical elements).
  HostTensor relayout(Layout layout, StridePadding padding = {}) const;

  // The NaN code used as poison for this dtype.
  static std::uint16_t poison_bits(DType dtype);

 private:
  Layout layout_;
  std::vector<std::uint16_t> storage_;
  std::vector<bool> addressed_;
  HostView view_;
};

// Values of any strided view as doubles in dense logical [B, H, N, D] order (exact widening).
std::vector<double> to_doubles(const HostView& view);

}  // namespace sagejit::numerics
