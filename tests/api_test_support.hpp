#pragma once
// A valid attention call with random sizes (fake, never dereferenced device pointers), which each
// validation test breaks in exactly one way.
#include <cstdint>
#include <random>
#include <string>

#include <doctest/doctest.h>

#include "random_support.hpp"
#include "sagejit/sagejit.hpp"

namespace sagejit::test {

struct ValidCall {
  TensorView q, k, v, out;
  AttentionOptions options;
};

// Distinct, aligned, non-null addresses: validation must never touch them.
inline void* fake_pointer(std::uintptr_t index) { return reinterpret_cast<void*>(index << 20); }

// Sizes random within small ranges (key sequences up to max_seq_kv), dense strides in the layout's own
// order, all on device 0.
inline ValidCall make_valid_call(Layout layout = Layout::HND, std::int64_t max_seq_kv = 300) {
  const std::int64_t batch = random_in(1, 3), heads_kv = random_in(1, 4), group = random_in(1, 3);
  const std::int64_t seq_q = random_in(1, 300), seq_kv = random_in(1, max_seq_kv);
  const std::int64_t head_dim = 8 * random_in(1, 16);  // every accepted head dim, padded ones included
  const DType dtype = random_in(0, 1) != 0 ? DType::bf16 : DType::fp16;
  const auto shape = [&](std::int64_t heads, std::int64_t seq) {
    return layout == Layout::HND ? std::array<std::int64_t, 4>{batch, heads, seq, head_dim}
                                 : std::array<std::int64_t, 4>{batch, seq, heads, head_dim};
  };
  const auto view = [&](std::uintptr_t index, std::array<std::int64_t, 4> dims) {
    return TensorView{fake_pointer(index), dtype, dims, contiguous_strides(dims), 0};
  };
  ValidCall call;
  call.q = view(1, shape(heads_kv * group, seq_q));
  call.k = view(2, shape(heads_kv, seq_kv));
  call.v = view(3, shape(heads_kv, seq_kv));
  call.out = view(4, shape(heads_kv * group, seq_q));
  call.options.layout = layout;
  return call;
}

// Runs `body`, which must throw sagejit::Error with `code`; returns its message.
template <typename Body>
std::string error_of(Body&& body, ErrorCode code) {
  try {
    body();
  } catch (const Error& error) {
    CHECK_MESSAGE(error.code() == code, "code " << static_cast<int>(error.code()) << ": " << error.what());
    return error.what();
  }
  FAIL("no sagejit::Error was thrown");
  return {};
}

inline bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace sagejit::test
