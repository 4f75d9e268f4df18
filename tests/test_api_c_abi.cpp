// The C ABI: every validation error comes back as a status with the message in sagejit_last_error(),
// thread-local; no exception escapes; supports/workspace_size/version behave as documented.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <utility>
#include <thread>

#include "api/sized_struct.hpp"
#include "api_test_support.hpp"
#include "build_info.hpp"
#include "dev/c_abi_tensor.hpp"
#include "sagejit/sagejit.h"
#include "sagejit/sagejit.hpp"

using namespace sagejit;
using namespace sagejit::test;

namespace {

struct CCall {
  sagejit_tensor q, k, v, out;
  sagejit_options options;
};

CCall make_c_call(Layout layout) {
  const ValidCall call = make_valid_call(layout);
  CCall c{dev::c_abi_tensor(call.q), dev::c_abi_tensor(call.k), dev::c_abi_tensor(call.v),
          dev::c_abi_tensor(call.out), sagejit_default_options()};
  c.options.layout = static_cast<int32_t>(layout);
  return c;
}

sagejit_status run(const CCall& c) { return sagejit_attention(&c.q, &c.k, &c.v, &c.out, &c.options, nullptr); }

void check_error(const CCall& c, sagejit_status expected, const std::string& part) {
  CHECK(run(c) == expected);
  const std::string message = sagejit_last_error();
  CHECK_MESSAGE(contains(message, part), message);
  int supported = -1;
  CHECK(sagejit_supports(&c.q, &c.k, &c.v, &c.out, &c.options, &supported) == SAGEJIT_SUCCESS);
  CHECK(supported == 0);
  CHECK(std::string(sagejit_last_error()) == message);
  char workspace[256];
  CHECK(sagejit_attention_with_workspace(&c.q, &c.k, &c.v, &c.out, &c.options, nullptr, workspace, sizeof workspace) ==
        expected);
  // The launch struct's call validates the same way, with either workspace.
  sagejit_launch launch = sagejit_default_launch();
  CHECK(sagejit_attention_launch(&c.q, &c.k, &c.v, &c.out, &c.options, &launch) == expected);
  CHECK(std::string(sagejit_last_error()) == message);
  launch.workspace = workspace;
  launch.workspace_bytes = sizeof workspace;
  CHECK(sagejit_attention_launch(&c.q, &c.k, &c.v, &c.out, &c.options, &launch) == expected);
  CHECK(std::string(sagejit_last_error()) == message);
}

}  // namespace

TEST_CASE("C ABI: each validation error is a status plus a message naming the argument") {
  for (Layout layout : {Layout::HND, Layout::NHD}) {
    CAPTURE(to_string(layout));
    const int h = layout == Layout::HND ? 1 : 2;
    const int n = layout == Layout::HND ? 2 : 1;
    // One change to a valid call; tensors whose shape changed but not their strides get dense strides,
    // so that each call is wrong in exactly the intended way.
    const auto with = [&](auto change) {
      const CCall before = make_c_call(layout);
      CCall c = before;
      change(c);
      for (auto [t, b] : {std::pair{&c.q, &before.q}, {&c.k, &before.k}, {&c.v, &before.v}, {&c.out, &before.out}}) {
        if (std::equal(t->shape, t->shape + 4, b->shape) || !std::equal(t->strides, t->strides + 4, b->strides)) continue;
        std::int64_t stride = 1;
        for (int i = 3; i >= 0; --i) t->strides[i] = stride, stride *= t->shape[i];
      }
      return c;
    };
    check_error(with([](CCall& c) { c.q.data = nullptr; }), SAGEJIT_ERROR_INVALID_ARGUMENT, "q.data is null");
    check_error(with([](CCall& c) { c.out.data = nullptr; }), SAGEJIT_ERROR_INVALID_ARGUMENT, "out.data is null");
    check_error(with([](CCall& c) { c.options.layout = 3; }), SAGEJIT_ERROR_INVALID_ARGUMENT, "options.layout 3");
    check_error(with([](CCall& c) { c.options.causal = 2; }), SAGEJIT_ERROR_INVALID_ARGUMENT, "options->causal 2");
    check_error(with([](CCall& c) { c.options.smooth_k = -1; }), SAGEJIT_ERROR_INVALID_ARGUMENT, "options->smooth_k");
    check_error(with([](CCall& c) { c.q.dtype = c.k.dtype = c.v.dtype = c.out.dtype = SAGEJIT_DTYPE_FP32; }),
                SAGEJIT_ERROR_UNSUPPORTED, "[bf16, fp16]");
    check_error(with([](CCall& c) { c.v.dtype = c.q.dtype == SAGEJIT_DTYPE_BF16 ? SAGEJIT_DTYPE_FP16 : SAGEJIT_DTYPE_BF16; }),
                SAGEJIT_ERROR_INVALID_ARGUMENT, "v.dtype");
    check_error(with([&](CCall& c) { c.k.shape[h] = 0; }), SAGEJIT_ERROR_INVALID_ARGUMENT, ">= 1");
    check_error(with([](CCall& c) {
                  for (sagejit_tensor* t : {&c.q, &c.k, &c.v, &c.out}) t->shape[3] = 264;
                }),
                SAGEJIT_ERROR_UNSUPPORTED, "[64, 128, 256]");
    check_error(with([](CCall& c) { c.out.strides[3] = 3; }), SAGEJIT_ERROR_INVALID_ARGUMENT, "out.strides[3]");
    check_error(with([&](CCall& c) { c.v.shape[n] += 1; }), SAGEJIT_ERROR_INVALID_ARGUMENT, "sequence length of k");
    check_error(with([&](CCall& c) { c.out.shape[0] += 1; }), SAGEJIT_ERROR_INVALID_ARGUMENT, "out.shape");
    check_error(with([&](CCall& c) {
                  c.k.shape[h] = c.v.shape[h] = 3;
                  c.q.shape[h] = c.out.shape[h] = 5;
                }),
                SAGEJIT_ERROR_INVALID_ARGUMENT, "Hq % Hk");
    check_error(with([](CCall& c) { c.options.has_sm_scale = 1, c.options.sm_scale = 1.0f / 0.0f; }),
                SAGEJIT_ERROR_INVALID_ARGUMENT, "options.sm_scale");
    check_error(with([](CCall& c) { c.v.device = 3; }), SAGEJIT_ERROR_INVALID_ARGUMENT, "v.device is 3");
    check_error(with([](CCall& c) { c.q.shape[0] = c.k.shape[0] = c.v.shape[0] = c.out.shape[0] = 100000; }),
                SAGEJIT_ERROR_UNSUPPORTED, "batch 100000");
  }
}

TEST_CASE("C ABI: NULL arguments are errors, never crashes") {
  const CCall c = make_c_call(Layout::HND);
  CHECK(sagejit_attention(nullptr, &c.k, &c.v, &c.out, &c.options, nullptr) == SAGEJIT_ERROR_INVALID_ARGUMENT);
  CHECK(contains(sagejit_last_error(), "q is NULL"));
  CHECK(sagejit_attention(&c.q, &c.k, &c.v, nullptr, nullptr, nullptr) == SAGEJIT_ERROR_INVALID_ARGUMENT);
  CHECK(contains(sagejit_last_error(), "out is NULL"));
  CHECK(sagejit_supports(&c.q, &c.k, &c.v, &c.out, &c.options, nullptr) == SAGEJIT_ERROR_INVALID_ARGUMENT);
  CHECK(contains(sagejit_last_error(), "supported is NULL"));
  CHECK(sagejit_workspace_size(&c.q, &c.k, &c.v, &c.options, nullptr) == SAGEJIT_ERROR_INVALID_ARGUMENT);
  CHECK(contains(sagejit_last_error(), "bytes is NULL"));
  size_t bytes = 7;
  CHECK(sagejit_workspace_size(&c.q, nullptr, &c.v, &c.options, &bytes) == SAGEJIT_ERROR_INVALID_ARGUMENT);
  CHECK(contains(sagejit_last_error(), "k is NULL"));
}

TEST_CASE("C ABI: a valid call with NULL options passes validation; the outcome depends on the device") {
  const CCall c = make_c_call(Layout::HND);
  int supported = -1;
  REQUIRE(sagejit_supports(&c.q, &c.k, &c.v, &c.out, nullptr, &supported) == SAGEJIT_SUCCESS);
  if (supported == 1) {
    MESSAGE("a GPU with kernels is present");
  } else {
    const std::string reason = sagejit_last_error();
    MESSAGE("not supported here: " << reason);
    CHECK_FALSE(reason.empty());
    CHECK_FALSE(contains(reason, "shape"));
    size_t bytes = 0;
    CHECK(sagejit_workspace_size(&c.q, &c.k, &c.v, nullptr, &bytes) != SAGEJIT_SUCCESS);
  }
}

TEST_CASE("C ABI: the last error is per thread and cleared by a successful call") {
  CCall c = make_c_call(Layout::NHD);
  c.k.data = nullptr;
  REQUIRE(run(c) == SAGEJIT_ERROR_INVALID_ARGUMENT);
  std::string other_thread_before, other_thread_after;
  std::thread other([&] {
    other_thread_before = sagejit_last_error();
    CCall bad = make_c_call(Layout::HND);
    bad.v.strides[3] = 5;
    sagejit_attention(&bad.q, &bad.k, &bad.v, &bad.out, &bad.options, nullptr);
    other_thread_after = sagejit_last_error();
  });
  other.join();
  CHECK(other_thread_before.empty());
  CHECK(contains(other_thread_after, "v.strides[3]"));
  CHECK(contains(sagejit_last_error(), "k.data is null"));
  CHECK(sagejit_release_workspaces() == SAGEJIT_SUCCESS);
  CHECK(std::string(sagejit_last_error()).empty());
}

TEST_CASE("C ABI: status names, defaults and version") {
  CHECK(std::string(sagejit_status_string(SAGEJIT_SUCCESS)) == "success");
  CHECK(std::string(sagejit_status_string(SAGEJIT_ERROR_UNSUPPORTED)) == "unsupported");
  CHECK(std::string(sagejit_status_string(static_cast<sagejit_status>(99))) == "unknown status");
  const sagejit_options options = sagejit_default_options();
  CHECK(options.layout == SAGEJIT_LAYOUT_HND);
  CHECK(options.smooth_k == 1);
  CHECK(options.causal == 0);
  CHECK(options.has_sm_scale == 0);
  CHECK(options.device == -1);
  CHECK(options.lse == nullptr);
  CHECK(std::string(sagejit_version()) == build::version);
}

TEST_CASE("C ABI: sagejit_check_head_dim follows the plan's head-dim rule") {
  for (int head_dim = -1; head_dim <= 300; ++head_dim) {
    CAPTURE(head_dim);
    const sagejit_status status = sagejit_check_head_dim(head_dim);
    const sagejit::Support expected = sagejit::supports_head_dim(head_dim);
    CHECK((status == SAGEJIT_SUCCESS) == expected.ok);
    if (!expected.ok) {
      CHECK(status == SAGEJIT_ERROR_UNSUPPORTED);
      CHECK(contains(sagejit_last_error(), "head_dim"));
    }
  }
  CHECK(sagejit_check_head_dim(128) == SAGEJIT_SUCCESS);
  CHECK(sagejit_check_head_dim(64) == SAGEJIT_SUCCESS);
  CHECK(sagejit_check_head_dim(256) == SAGEJIT_SUCCESS);
  CHECK(sagejit_check_head_dim(160) == SAGEJIT_SUCCESS);
  CHECK(sagejit_check_head_dim(264) == SAGEJIT_ERROR_UNSUPPORTED);
  CHECK(contains(sagejit_last_error(), "head_dim 264"));
}

namespace {

// sagejit_options as the first ABI-1 headers declared it, restated by hand: what a binary built
// against those headers passes to every later library.
struct options_v1 {
  uint32_t struct_size;
  int32_t layout, causal, has_sm_scale;
  float sm_scale;
  int32_t smooth_k, device;
  float* lse;
};
static_assert(sizeof(options_v1) == SAGEJIT_OPTIONS_V1_SIZE);
static_assert(sizeof(sagejit_options) >= SAGEJIT_OPTIONS_V1_SIZE);

// Validation with `options` (passed by address, read only as far as its struct_size says): the error
// when validation rejects it, "" when it passes (the outcome then depends on the device).
std::string validation_error(const CCall& c, const void* options) {
  int supported = -1;
  REQUIRE(sagejit_supports(&c.q, &c.k, &c.v, &c.out, static_cast<const sagejit_options*>(options), &supported) ==
          SAGEJIT_SUCCESS);
  const std::string reason = supported == 1 ? "" : sagejit_last_error();
  return contains(reason, "options") ? reason : "";
}

}  // namespace

TEST_CASE("C ABI: options carry their size; an older, smaller struct is accepted, bad sizes are named") {
  CHECK(sagejit_default_options().struct_size == sizeof(sagejit_options));
  CHECK(SAGEJIT_ABI_VERSION >= 1);
  const CCall c = make_c_call(Layout::HND);

  // A binary built against ABI-1 headers: accepted, and its fields are read (a bad one is named).
  options_v1 old{};
  old.struct_size = sizeof(options_v1);
  old.smooth_k = 1;
  old.device = -1;
  CHECK(validation_error(c, &old) == "");
  old.causal = 2;
  CHECK(contains(validation_error(c, &old), "options->causal 2"));

  // Sizes outside [V1, sizeof]: 0 (a struct never initialised), a truncated V1, one byte more than
  // this library knows (newer headers). Each names options.struct_size and the accepted range.
  for (const std::size_t size : {std::size_t{0}, std::size_t{SAGEJIT_OPTIONS_V1_SIZE - 1}, std::size_t{4},
                                 sizeof(sagejit_options) + 1, std::size_t{0xffffffffu}}) {
    CAPTURE(size);
    sagejit_options options = sagejit_default_options();
    options.struct_size = static_cast<uint32_t>(size);
    const std::string expected = "options.struct_size is " + std::to_string(size) + "; accepted: " +
                                 std::to_string(SAGEJIT_OPTIONS_V1_SIZE) + " to " + std::to_string(sizeof(sagejit_options)) +
                                 " bytes";
    CHECK(sagejit_attention(&c.q, &c.k, &c.v, &c.out, &options, nullptr) == SAGEJIT_ERROR_INVALID_ARGUMENT);
    CHECK_MESSAGE(contains(sagejit_last_error(), expected), sagejit_last_error());
    size_t bytes = 0;
    CHECK(sagejit_workspace_size(&c.q, &c.k, &c.v, &options, &bytes) == SAGEJIT_ERROR_INVALID_ARGUMENT);
    CHECK(contains(sagejit_last_error(), "options.struct_size"));
  }
}

TEST_CASE("C ABI: the launch struct carries its size, defaults to the default stream and the runtime's workspace") {
  const sagejit_launch defaults = sagejit_default_launch();
  CHECK(defaults.struct_size == sizeof(sagejit_launch));
  CHECK(defaults.stream == nullptr);
  CHECK(defaults.workspace == nullptr);
  CHECK(defaults.workspace_bytes == 0);
  CHECK(SAGEJIT_LAUNCH_V1_SIZE == sizeof(sagejit_launch));  // no field appended yet
  const CCall c = make_c_call(Layout::HND);
  // A valid call passes the launch struct's checks (NULL, the defaults, a workspace) and then
  // depends on the device, exactly as sagejit_attention and sagejit_attention_with_workspace do.
  const sagejit_status plain = sagejit_attention(&c.q, &c.k, &c.v, &c.out, &c.options, nullptr);
  const std::string plain_message = sagejit_last_error();
  CHECK(sagejit_attention_launch(&c.q, &c.k, &c.v, &c.out, &c.options, nullptr) == plain);
  CHECK(std::string(sagejit_last_error()) == plain_message);
  CHECK(sagejit_attention_launch(&c.q, &c.k, &c.v, &c.out, &c.options, &defaults) == plain);
  if (plain != SAGEJIT_SUCCESS) {
    char workspace[256];
    const sagejit_status with = sagejit_attention_with_workspace(&c.q, &c.k, &c.v, &c.out, &c.options, nullptr,
                                                                 workspace, sizeof workspace);
    const std::string with_message = sagejit_last_error();
    sagejit_launch launch = defaults;
    launch.workspace = workspace;
    launch.workspace_bytes = sizeof workspace;
    CHECK(sagejit_attention_launch(&c.q, &c.k, &c.v, &c.out, &c.options, &launch) == with);
    CHECK(std::string(sagejit_last_error()) == with_message);
  }

  // Bytes without a buffer: named, nothing launched.
  sagejit_launch no_buffer = defaults;
  no_buffer.workspace_bytes = 4096;
  CHECK(sagejit_attention_launch(&c.q, &c.k, &c.v, &c.out, &c.options, &no_buffer) == SAGEJIT_ERROR_INVALID_ARGUMENT);
  CHECK_MESSAGE(contains(sagejit_last_error(), "launch->workspace_bytes is 4096 but launch->workspace is NULL"),
                sagejit_last_error());
  // Sizes outside [V1, sizeof] name launch.struct_size and the accepted range.
  for (const std::size_t size : {std::size_t{0}, std::size_t{SAGEJIT_LAUNCH_V1_SIZE - 1}, sizeof(sagejit_launch) + 1}) {
    CAPTURE(size);
    sagejit_launch launch = defaults;
    launch.struct_size = static_cast<uint32_t>(size);
    CHECK(sagejit_attention_launch(&c.q, &c.k, &c.v, &c.out, &c.options, &launch) == SAGEJIT_ERROR_INVALID_ARGUMENT);
    const std::string expected = "launch.struct_size is " + std::to_string(size) + "; accepted: " +
                                 std::to_string(SAGEJIT_LAUNCH_V1_SIZE) + " to " + std::to_string(sizeof(sagejit_launch)) +
                                 " bytes (start from sagejit_default_launch()";
    CHECK_MESSAGE(contains(sagejit_last_error(), expected), sagejit_last_error());
  }
  // The tensors and options are checked first: their errors are the ones reported.
  CHECK(sagejit_attention_launch(nullptr, &c.k, &c.v, &c.out, &c.options, &no_buffer) == SAGEJIT_ERROR_INVALID_ARGUMENT);
  CHECK(contains(sagejit_last_error(), "q is NULL"));
}

namespace {

// A struct that grew: version 1 ends after `a`, version 2 appends `b`, whose default is 7.
struct grown_v2 {
  uint32_t struct_size;
  int32_t a;
  int32_t b;
};
struct grown_v1 {
  uint32_t struct_size;
  int32_t a;
};

}  // namespace

TEST_CASE("sized structs: fields past the caller's struct_size take their defaults, nothing past it is read") {
  const grown_v2 defaults{sizeof(grown_v2), 1, 7};
  // Version 1 in a buffer whose next bytes are garbage: they must not be read as `b`.
  struct {
    grown_v1 v1;
    int32_t garbage;
  } buffer{{sizeof(grown_v1), 5}, -99};
  const grown_v2 read = read_sized_struct(*reinterpret_cast<const grown_v2*>(&buffer.v1), sizeof(grown_v1), defaults,
                                          "grown", "grown_defaults()");
  CHECK(read.a == 5);
  CHECK(read.b == 7);
  const grown_v2 full{sizeof(grown_v2), 5, 9};
  CHECK(read_sized_struct(full, sizeof(grown_v1), defaults, "grown", "grown_defaults()").b == 9);
  try {
    read_sized_struct(grown_v2{2, 0, 0}, sizeof(grown_v1), defaults, "grown", "grown_defaults()");
    FAIL("accepted");
  } catch (const Error& e) {
    CHECK(e.code() == ErrorCode::invalid_argument);
    CHECK(std::string(e.what()) == "grown.struct_size is 2; accepted: 8 to 12 bytes (start from grown_defaults(), which "
                                   "sets it, or set it to the sizeof of the struct in the headers compiled against)");
  }
}
