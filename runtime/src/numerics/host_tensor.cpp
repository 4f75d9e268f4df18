#include "numerics/host_tensor.hpp"

#include "core/error.hpp"
#include "numerics/conversions.hpp"

namespace sagejit::numerics {

namespace {

// Position of logical dimension (b, h, n, d) in the layout's own order.
constexpr std::array<int, 4> layout_position(Layout layout) {
  return layout == Layout::HND ? std::array<int, 4>{0, 1, 2, 3} : std::array<int, 4>{0, 2, 1, 3};
}

}  // namespace

HostView HostView::from(const TensorView& view, Layout layout, const char* name) {
  if (layout != Layout::HND && layout != Layout::NHD)
    fail(ErrorCode::invalid_argument, "{}: layout {} is not supported (supported: HND, NHD)", name,
         static_cast<int>(layout));
  if (view.data == nullptr) fail(ErrorCode::invalid_argument, "{}: data pointer is null", name);
  require_16bit_float(view.dtype, name);
  HostView result;
  result.data = static_cast<std::uint16_t*>(view.data);
  result.dtype = view.dtype;
  const auto position = layout_position(layout);
  std::array<std::int64_t, 4> extent{};
  for (int logical = 0; logical < 4; ++logical) {
    extent[logical] = view.shape[position[logical]];
    result.strides[logical] = view.strides[position[logical]];
    if (extent[logical] < 1)
      fail(ErrorCode::invalid_argument, "{}: shape [{}, {}, {}, {}] ({}) has an extent < 1", name, view.shape[0],
           view.shape[1], view.shape[2], view.shape[3], to_string(layout));
  }
  result.dims = Dims{extent[0], extent[1], extent[2], extent[3]};
  return result;
}

float HostView::get(std::int64_t b, std::int64_t h, std::int64_t n, std::int64_t d) const {
  return half_bits_to_float(bits(b, h, n, d), dtype);
}

void HostView::set(std::int64_t b, std::int64_t h, std::int64_t n, std::int64_t d, float value) const {
  data[offset(b, h, n, d)] = float_to_half_bits(value, dtype);
}

std::uint16_t HostTensor::poison_bits(DType dtype) { return dtype == DType::bf16 ? 0x7fc1 : 0x7e01; }

HostTensor::HostTensor(Dims dims, DType dtype, Layout layout, StridePadding padding) : layout_(layout) {
  require_16bit_float(dtype, "HostTensor");
  if (dims.batch < 1 || dims.heads < 1 || dims.tokens < 1 || dims.head_dim < 1)
    fail(ErrorCode::invalid_argument, "HostTensor: dims [{}, {}, {}, {}] must all be >= 1", dims.batch, dims.heads,
         dims.tokens, dims.head_dim);
  if (padding.batch < 0 || padding.head < 0 || padding.token < 0)
    fail(ErrorCode::invalid_argument, "HostTensor: stride padding must be >= 0");
  view_.dtype = dtype;
  view_.dims = dims;
  std::array<std::int64_t, 4>& s = view_.strides;  // logical (b, h, n, d)
  s[3] = 1;
  if (layout == Layout::HND) {
    s[2] = dims.head_dim + padding.token;
    s[1] = dims.tokens * s[2] + padding.head;
    s[0] = dims.heads * s[1] + padding.batch;
  } else {
    s[1] = dims.head_dim + padding.head;
    s[2] = dims.heads * s[1] + padding.token;
    s[0] = dims.tokens * s[2] + padding.batch;
  }
  const std::int64_t size = dims.batch * s[0];
  storage_.assign(static_cast<std::size_t>(size), poison_bits(dtype));
  addressed_.assign(static_cast<std::size_t>(size), false);
  view_.data = storage_.data();
  for (std::int64_t b = 0; b < dims.batch; ++b)
    for (std::int64_t h = 0; h < dims.heads; ++h)
      for (std::int64_t n = 0; n < dims.tokens; ++n)
        for (std::int64_t d = 0; d < dims.head_dim; ++d) addressed_[view_.offset(b, h, n, d)] = true;
}

TensorView HostTensor::view() const {
  TensorView result;
  result.data = const_cast<std::uint16_t*>(storage_.data());
  result.dtype = view_.dtype;
  const auto position = layout_position(layout_);
  const std::array<std::int64_t, 4> extent{dims().batch, dims().heads, dims().tokens, dims().head_dim};
  for (int logical = 0; logical < 4; ++logical) {
    result.shape[position[logical]] = extent[logical];
    result.strides[position[logical]] = view_.strides[logical];
  }
  return result;
}

HostTensor HostTensor::relayout(Layout layout, StridePadding padding) const {
  HostTensor copy(dims(), dtype(), layout, padding);
  const Dims& x = dims();
  for (std::int64_t b = 0; b < x.batch; ++b)
    for (std::int64_t h = 0; h < x.heads; ++h)
      for (std::int64_t n = 0; n < x.tokens; ++n)
        for (std::int64_t d = 0; d < x.head_dim; ++d) copy.view_.data[copy.view_.offset(b, h, n, d)] = bits(b, h, n, d);
  return copy;
}

std::vector<double> to_doubles(const HostView& view) {
  const Dims& x = view.dims;
  std::vector<double> values;
  values.reserve(static_cast<std::size_t>(x.count()));
  for (std::int64_t b = 0; b < x.batch; ++b)
    for (std::int64_t h = 0; h < x.heads; ++h)
      for (std::int64_t n = 0; n < x.tokens; ++n)
        for (std::int64_t d = 0; d < x.head_dim; ++d) values.push_back(view.get(b, h, n, d));
  return values;
}

}  // namespace sagejit::numerics
