// Every validation error of the public C++ API: thrown before anything touches a GPU, with a message
// naming the argument and what is accepted; supports() reports the same reason without throwing.
#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <vector>

#include "api/device_support.hpp"
#include "api_test_support.hpp"
#include "build_info.hpp"
#include "core/error.hpp"
#include "sagejit/sagejit.hpp"

using namespace sagejit;
using namespace sagejit::test;

namespace {

struct Case {
  const char* name;
  std::function<void(ValidCall&)> breaks;
  ErrorCode code;
  std::vector<std::string> message_parts;
};

// Index of a logical dimension in the layout's order.
int dim_h(Layout layout) { return layout == Layout::HND ? 1 : 2; }
int dim_n(Layout layout) { return layout == Layout::HND ? 2 : 1; }

std::vector<Case> cases(Layout layout) {
  const int h = dim_h(layout), n = dim_n(layout);
  return {
      {"q null", [](ValidCall& c) { c.q.data = nullptr; }, ErrorCode::invalid_argument, {"q.data is null"}},
      {"k null", [](ValidCall& c) { c.k.data = nullptr; }, ErrorCode::invalid_argument, {"k.data is null"}},
      {"v null", [](ValidCall& c) { c.v.data = nullptr; }, ErrorCode::invalid_argument, {"v.data is null"}},
      {"out null", [](ValidCall& c) { c.out.data = nullptr; }, ErrorCode::invalid_argument, {"out.data is null"}},
      {"layout", [](ValidCall& c) { c.options.layout = static_cast<Layout>(7); }, ErrorCode::invalid_argument,
       {"options.layout 7", "HND", "NHD"}},
      {"dtype fp32",
       [](ValidCall& c) { c.q.dtype = c.k.dtype = c.v.dtype = c.out.dtype = DType::fp32; },
       ErrorCode::unsupported, {"q.dtype fp32", "[bf16, fp16]"}},
      {"dtype unknown", [](ValidCall& c) { c.q.dtype = static_cast<DType>(42); }, ErrorCode::unsupported,
       {"q.dtype", "42", "[bf16, fp16]"}},
      {"k dtype mismatch",
       [](ValidCall& c) { c.k.dtype = c.q.dtype == DType::bf16 ? DType::fp16 : DType::bf16; },
       ErrorCode::invalid_argument, {"k.dtype", "does not match q.dtype"}},
      {"v dtype mismatch", [](ValidCall& c) { c.v.dtype = DType::fp32; }, ErrorCode::invalid_argument,
       {"v.dtype fp32", "q.dtype"}},
      {"out dtype mismatch", [](ValidCall& c) { c.out.dtype = DType::int8; }, ErrorCode::invalid_argument,
       {"out.dtype int8", "q.dtype"}},
      {"zero size", [n](ValidCall& c) { c.q.shape[n] = 0; }, ErrorCode::invalid_argument,
       {"q.shape[" + std::to_string(n) + "] (N) is 0", ">= 1"}},
      {"negative size", [h](ValidCall& c) { c.k.shape[h] = -3; }, ErrorCode::invalid_argument,
       {"k.shape[" + std::to_string(h) + "] (H) is -3"}},
      {"head_dim 100 (not a multiple of 8)",
       [](ValidCall& c) {
         for (TensorView* t : {&c.q, &c.k, &c.v, &c.out}) t->shape[3] = 100, t->strides = contiguous_strides(t->shape);
       },
       ErrorCode::unsupported, {"head_dim 100", "multiples of 8 from 8 to 256", "[64, 128, 256]"}},
      {"head_dim 264 (above 256)",
       [](ValidCall& c) {
         for (TensorView* t : {&c.q, &c.k, &c.v, &c.out}) t->shape[3] = 264, t->strides = contiguous_strides(t->shape);
       },
       ErrorCode::unsupported, {"head_dim 264", "multiples of 8 from 8 to 256", "[64, 128, 256]"}},
      {"innermost stride", [](ValidCall& c) { c.v.strides[3] = 2; }, ErrorCode::invalid_argument,
       {"v.strides[3]", "stride 1"}},
      {"negative stride", [n](ValidCall& c) { c.k.strides[n] = -c.k.strides[n]; }, ErrorCode::invalid_argument,
       {"k.strides[" + std::to_string(n) + "]", "negative"}},
      {"offset overflow", [](ValidCall& c) { c.q.shape[0] = 4, c.q.strides[0] = std::int64_t{1} << 62; },
       ErrorCode::invalid_argument, {"q:", "overflow 64 bits"}},
      {"batch of k", [](ValidCall& c) { c.k.shape[0] += 1; }, ErrorCode::invalid_argument,
       {"k.shape[0] (B)", "batch of q"}},
      {"batch of v", [](ValidCall& c) { c.v.shape[0] += 2; }, ErrorCode::invalid_argument,
       {"v.shape[0] (B)", "batch of q"}},
      {"head_dim of k", [](ValidCall& c) { c.k.shape[3] = c.q.shape[3] == 64 ? 128 : 64; }, ErrorCode::invalid_argument,
       {"k.shape[3] (D)", "head_dim of q"}},
      {"heads of v", [h](ValidCall& c) { c.v.shape[h] = c.k.shape[h] + 1; }, ErrorCode::invalid_argument,
       {"v.shape[" + std::to_string(h) + "] (H)", "heads of k"}},
      {"tokens of v", [n](ValidCall& c) { c.v.shape[n] = c.k.shape[n] + 1; }, ErrorCode::invalid_argument,
       {"v.shape[" + std::to_string(n) + "] (N)", "sequence length of k"}},
      {"out shape", [n](ValidCall& c) { c.out.shape[n] += 1; }, ErrorCode::invalid_argument,
       {"out.shape", "differs from q.shape"}},
      {"out overlaps itself", [h](ValidCall& c) { c.out.shape[h] = c.q.shape[h] = 2, c.out.strides[h] = 0; },
       ErrorCode::invalid_argument, {"out has overlapping elements"}},
      {"gqa ratio",
       [h](ValidCall& c) { c.k.shape[h] = c.v.shape[h] = 4, c.q.shape[h] = c.out.shape[h] = 6; },
       ErrorCode::invalid_argument, {"q heads (6)", "k/v heads (4)", "Hq % Hk"}},
      {"sm_scale nan", [](ValidCall& c) { c.options.sm_scale = std::nanf(""); }, ErrorCode::invalid_argument,
       {"options.sm_scale"}},
      {"sm_scale inf", [](ValidCall& c) { c.options.sm_scale = std::numeric_limits<float>::infinity(); },
       ErrorCode::invalid_argument, {"options.sm_scale", "finite and > 0"}},
      {"sm_scale zero", [](ValidCall& c) { c.options.sm_scale = 0.0f; }, ErrorCode::invalid_argument,
       {"options.sm_scale 0", "> 0"}},
      {"k on another device", [](ValidCall& c) { c.k.device = 1; }, ErrorCode::invalid_argument,
       {"k.device is 1", "device 0", "one device"}},
      {"out on another device than options", [](ValidCall& c) { c.options.device = 0, c.out.device = 2; },
       ErrorCode::invalid_argument, {"out.device is 2", "options.device"}},
      {"negative device ordinal", [](ValidCall& c) { c.q.device = c.k.device = c.v.device = c.out.device = -2; },
       ErrorCode::invalid_argument, {"q.device -2"}},
      {"options.device", [](ValidCall& c) { c.options.device = -5; }, ErrorCode::invalid_argument,
       {"options.device -5"}},
      {"batch beyond the grid", [](ValidCall& c) { c.q.shape[0] = c.k.shape[0] = c.v.shape[0] = c.out.shape[0] = 70000; },
       ErrorCode::unsupported, {"batch 70000", "65535"}},
      {"q heads beyond the grid",
       [h](ValidCall& c) { c.q.shape[h] = c.out.shape[h] = 70000 * c.k.shape[h]; },
       ErrorCode::unsupported, {"q heads", "65535"}},
      {"sequence beyond 32 bits",
       [n](ValidCall& c) { c.q.shape[n] = c.out.shape[n] = std::int64_t{1} << 31; },
       ErrorCode::unsupported, {"q sequence length 2147483648", "32-bit"}},
      {"k/v sequence beyond 32 bits",
       [n](ValidCall& c) { c.k.shape[n] = c.v.shape[n] = std::int64_t{3} << 30; },
       ErrorCode::unsupported, {"k/v sequence length", "32-bit"}},
      {"k/v head beyond 2^32 quantized bytes",
       [n](ValidCall& c) { c.k.shape[n] = c.v.shape[n] = (std::int64_t{1} << 32) / c.k.shape[3]; },
       ErrorCode::unsupported, {"k/v sequence length", "2^32 bytes per quantized k/v head"}},
      {"quantization blocks beyond 32 bits",
       [h, n](ValidCall& c) {
         c.k.shape[h] = c.v.shape[h] = 1;
         c.q.shape[h] = c.out.shape[h] = 1024;
         c.q.shape[n] = c.out.shape[n] = std::int64_t{1} << 26;
       },
       ErrorCode::unsupported, {"quantization blocks", "32-bit block index"}},
  };
}

// Dense strides for the (possibly changed) shapes, unless the case set strides on purpose.
void restride(ValidCall& call, const ValidCall& before) {
  for (auto [t, b] : {std::pair{&call.q, &before.q}, {&call.k, &before.k}, {&call.v, &before.v}, {&call.out, &before.out}})
    if (t->strides == b->strides && t->shape != b->shape) t->strides = contiguous_strides(t->shape);
}

}  // namespace

TEST_CASE("attention() and supports() reject every invalid argument, naming it") {
  for (Layout layout : {Layout::HND, Layout::NHD}) {
    for (const Case& test : cases(layout)) {
      CAPTURE(std::string(test.name));
      CAPTURE(to_string(layout));
      const ValidCall valid = make_valid_call(layout);
      ValidCall call = valid;
      test.breaks(call);
      restride(call, valid);
      const std::string message =
          error_of([&] { attention(call.q, call.k, call.v, call.out, call.options, nullptr); }, test.code);
      for (const std::string& part : test.message_parts) CHECK_MESSAGE(contains(message, part), message);
      const Support support = supports(call.q, call.k, call.v, call.out, call.options);
      CHECK_FALSE(support.ok);
      CHECK(support.reason == message);
      // The caller's-workspace overload validates first too.
      std::vector<std::byte> host(1024);
      error_of([&] { attention(call.q, call.k, call.v, call.out, call.options, nullptr, Workspace{host.data(), 0}); },
               test.code);
    }
  }
}

TEST_CASE("a valid call passes validation and then needs a device") {
  const ValidCall call = make_valid_call(random_in(0, 1) != 0 ? Layout::HND : Layout::NHD);
  const Support support = supports(call.q, call.k, call.v, call.out, call.options);
  if (support.ok) {
    MESSAGE("a GPU with kernels is present");
    CHECK(support.reason.empty());
  } else {
    // Without a GPU runtime the reason is the device, never an argument.
    MESSAGE("not supported here: " << support.reason);
    CHECK_FALSE(contains(support.reason, ".data"));
    CHECK_FALSE(contains(support.reason, "shape"));
    CHECK_THROWS_AS(workspace_size(call.q, call.k, call.v, call.options), Error);
  }
}

TEST_CASE("an arch without kernels is named with the supported archs") {
  const std::vector<std::string> archs = supported_archs();
  REQUIRE_FALSE(archs.empty());
  for (const std::string& arch : archs) CHECK_NOTHROW(check_arch_has_kernels(arch));
  CHECK_NOTHROW(check_arch_has_kernels(archs.front() + ":sramecc-:xnack-"));
  for (const char* target : {"gfx1100", "gfx942:sramecc+:xnack-", "sm_75", "sm_61"}) {
    const std::string message = error_of([&] { check_arch_has_kernels(target); }, ErrorCode::unsupported);
    const std::string arch = std::string(target).substr(0, std::string(target).find(':'));
    CHECK_MESSAGE(contains(message, "device arch " + arch), message);
    for (const std::string& supported : archs) CHECK_MESSAGE(contains(message, supported), message);
  }
}

TEST_CASE("version is the project version") {
  CHECK(version() == std::string_view(build::version));
}
