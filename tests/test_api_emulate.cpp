// sagejit_emulate_attention (the C ABI's CPU path): the same validation and plan as a GPU call, the
// emulator's numbers bit for bit (it is the same code), host memory only, errors as named statuses.
#include <doctest/doctest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "api/attention_problem.hpp"
#include "dev/numerics/random_fill.hpp"
#include "numerics/emulator.hpp"
#include "numerics/host_tensor.hpp"
#include "plan/attention_plan.hpp"
#include "plan/emulator_options.hpp"
#include "random_support.hpp"
#include "sagejit/sagejit.h"
#include "sagejit/sagejit.hpp"

using namespace sagejit;
using numerics::Dims;
using numerics::HostTensor;

namespace {

struct Case {
  Dims q_dims, kv_dims;
  DType dtype = DType::bf16;
  Layout layout = Layout::HND;
  bool causal = false, smooth_k = true, lse = false;
  float sm_scale = 0.0f;  // 0: the default
  std::string target = "gfx1201";
};

sagejit_tensor to_c(const HostTensor& tensor, int device) {
  const TensorView view = tensor.view();
  sagejit_tensor c{};
  c.data = view.data;
  c.dtype = static_cast<int32_t>(view.dtype);
  c.device = device;
  for (int i = 0; i < 4; ++i) c.shape[i] = view.shape[i], c.strides[i] = view.strides[i];
  return c;
}

struct Run {
  Run(const Case& c, std::mt19937_64& rng)
      : q(c.q_dims, c.dtype, c.layout, {1, 3, 5}),
        k(c.kv_dims, c.dtype, c.layout),
        v(c.kv_dims, c.dtype, c.layout, {0, 2, 0}),
        out(c.q_dims, c.dtype, c.layout, {2, 0, 7}),
        expected_out(c.q_dims, c.dtype, c.layout, {2, 0, 7}) {
    numerics::fill_normal(q, rng);
    numerics::fill_channel_offsets(k, rng, 4.0);
    numerics::fill_normal(v, rng);
    if (c.lse) {
      lse.assign(static_cast<std::size_t>(c.q_dims.batch * c.q_dims.heads * c.q_dims.tokens), -1.0f);
      expected_lse = lse;
    }
  }
  HostTensor q, k, v, out, expected_out;
  std::vector<float> lse, expected_lse;
};

// A run of random bf16 HND tensors of q_dims / kv_dims on the gfx1201 plan, and their C descriptions (device 0).
struct CCall {
  CCall(const Dims& q_dims, const Dims& kv_dims)
      : c{.q_dims = q_dims, .kv_dims = kv_dims}, r(c, test::thread_rng()), q(to_c(r.q, 0)), k(to_c(r.k, 0)),
        v(to_c(r.v, 0)), out(to_c(r.out, 0)) {}
  Case c;
  Run r;
  sagejit_tensor q, k, v, out;
};

sagejit_options c_options(const Case& c, float* lse) {
  sagejit_options options = sagejit_default_options();
  options.layout = static_cast<int32_t>(c.layout);
  options.causal = c.causal;
  options.smooth_k = c.smooth_k;
  options.has_sm_scale = c.sm_scale > 0.0f;
  options.sm_scale = c.sm_scale;
  options.device = 5;  // ignored: host memory
  options.lse = lse;
  return options;
}

// The expectation through the internal steps: validate like a GPU call, plan for the target, emulate.
void expect(const Case& c, Run& r) {
  AttentionOptions options;
  options.layout = c.layout;
  options.causal = c.causal;
  options.smooth_k = c.smooth_k;
  if (c.sm_scale > 0.0f) options.sm_scale = c.sm_scale;
  options.lse = c.lse ? r.expected_lse.data() : nullptr;
  const AttentionProblem problem = validate_attention(r.q.view(), r.k.view(), r.v.view(), r.expected_out.view(), options);
  const AttentionPlan plan = plan_attention(problem.call, c.target);
  const numerics::EmulatorOptions emulator = emulator_options_for(plan, problem.call);
  MESSAGE(c.target << ": block_n " << emulator.block_n << ", pv " << std::string(emulator.pv_fp16 ? "fp16" : "fp8"));
  const numerics::EmulatorResult result = numerics::emulate(r.q.view(), r.k.view(), r.v.view(), c.layout, emulator, c.layout);
  for (std::int64_t b = 0; b < c.q_dims.batch; ++b)
    for (std::int64_t h = 0; h < c.q_dims.heads; ++h)
      for (std::int64_t n = 0; n < c.q_dims.tokens; ++n)
        for (std::int64_t d = 0; d < c.q_dims.head_dim; ++d)
          r.expected_out.host_view().data[r.expected_out.host_view().offset(b, h, n, d)] = result.out.bits(b, h, n, d);
  if (c.lse) r.expected_lse = result.lse;
}

void check_case(const Case& c) {
  INFO(c.target << " B" << c.q_dims.batch << " Hq" << c.q_dims.heads << " Hk" << c.kv_dims.heads << " Nq"
                << c.q_dims.tokens << " Nk" << c.kv_dims.tokens << " D" << c.q_dims.head_dim << " "
                << to_string(c.dtype) << " " << to_string(c.layout) << " causal=" << c.causal
                << " smooth_k=" << c.smooth_k << " lse=" << c.lse << " sm_scale=" << c.sm_scale);
  Run r(c, test::thread_rng());
  const sagejit_tensor q = to_c(r.q, 3), k = to_c(r.k, -1), v = to_c(r.v, 0), out = to_c(r.out, 9);  // devices ignored
  const sagejit_options options = c_options(c, c.lse ? r.lse.data() : nullptr);
  REQUIRE_MESSAGE(sagejit_emulate_attention(&q, &k, &v, &out, &options, c.target.c_str()) == SAGEJIT_SUCCESS,
                  sagejit_last_error());
  expect(c, r);
  // Bit for bit, padding included: what the output's strides skip stays poisoned.
  CHECK(r.out.storage() == r.expected_out.storage());
  for (std::size_t i = 0; i < r.out.storage().size(); ++i)
    if (r.out.is_padding(i)) REQUIRE(r.out.storage()[i] == HostTensor::poison_bits(c.dtype));
  if (c.lse) {
    REQUIRE(r.lse.size() == r.expected_lse.size());
    CHECK(std::memcmp(r.lse.data(), r.expected_lse.data(), r.lse.size() * sizeof(float)) == 0);
  }
}

Case random_case() {
  Case c;
  const std::int64_t batch = test::random_in(1, 2), heads_kv = test::random_in(1, 2), group = test::random_in(1, 3);
  const std::int64_t head_dim = test::random_in(0, 1) ? 64 : 128;
  c.q_dims = {batch, heads_kv * group, test::random_in(1, 150), head_dim};
  c.kv_dims = {batch, heads_kv, test::random_in(1, 150), head_dim};
  c.dtype = test::random_in(0, 1) ? DType::bf16 : DType::fp16;
  c.layout = test::random_in(0, 1) ? Layout::HND : Layout::NHD;
  c.causal = test::random_in(0, 1) != 0;
  c.smooth_k = test::random_in(0, 3) != 0;
  c.lse = test::random_in(0, 1) != 0;
  if (test::random_in(0, 1)) c.sm_scale = static_cast<float>(test::random_in(50, 200)) / 1000.0f;
  const std::vector<std::string> targets = supported_archs();
  c.target = targets[static_cast<std::size_t>(test::random_in(0, static_cast<std::int64_t>(targets.size()) - 1))];
  return c;
}

}  // namespace

TEST_CASE("emulate_attention equals the emulator for the plan of its target, bit for bit") {
  for (int i = 0; i < 6; ++i) check_case(random_case());
}

TEST_CASE("emulate_attention: LSE, GQA, NHD with strides, causal, on every target with kernels") {
  for (const std::string& target : supported_archs()) {
    Case c;
    c.target = target;
    c.q_dims = {2, 6, 77, 128};
    c.kv_dims = {2, 2, 131, 128};  // GQA 3
    c.layout = Layout::NHD;
    c.causal = true;
    c.lse = true;
    check_case(c);
    c.q_dims = {1, 4, 40, 64};
    c.kv_dims = {1, 1, 33, 64};  // MQA
    c.layout = Layout::HND;
    c.causal = false;
    c.dtype = DType::fp16;
    c.smooth_k = false;
    check_case(c);
  }
}

TEST_CASE("emulate_attention: NULL target is gfx1201; the C++ API gives the same") {
  auto [c, a, q, k, v, out] = CCall({1, 2, 50, 64}, {1, 2, 70, 64});
  REQUIRE(sagejit_emulate_attention(&q, &k, &v, &out, nullptr, nullptr) == SAGEJIT_SUCCESS);
  HostTensor again(c.q_dims, c.dtype, c.layout, {2, 0, 7});
  emulate_attention(a.q.view(), a.k.view(), a.v.view(), again.view(), {}, "gfx1201");
  CHECK(again.storage() == a.out.storage());
}

TEST_CASE("emulate_attention: errors are statuses naming the argument") {
  auto [c, r, q, k, v, out] = CCall({1, 2, 20, 64}, {1, 2, 20, 64});
  const auto status_and_message = [&](const sagejit_tensor* qq, const sagejit_tensor* kk, const sagejit_tensor* vv,
                                      const sagejit_tensor* oo, const sagejit_options* options, const char* target) {
    const sagejit_status status = sagejit_emulate_attention(qq, kk, vv, oo, options, target);
    return std::pair{status, std::string(sagejit_last_error())};
  };
  for (const char* bad : {"gfx9999", "sm_75", "banana", "", "gfx1201:"}) {
    CAPTURE(bad);
    const auto [status, message] = status_and_message(&q, &k, &v, &out, nullptr, bad);
    CHECK(status == SAGEJIT_ERROR_INVALID_ARGUMENT);
    CHECK_MESSAGE(message.find("target \"" + std::string(bad) + "\"") != std::string::npos, message);
    CHECK_MESSAGE(message.find("gfx1201") != std::string::npos, message);
  }
  CHECK(status_and_message(nullptr, &k, &v, &out, nullptr, nullptr).second.find("q is NULL") != std::string::npos);
  sagejit_tensor no_data = out;
  no_data.data = nullptr;
  CHECK(status_and_message(&q, &k, &v, &no_data, nullptr, nullptr).second.find("out.data is null") != std::string::npos);
  sagejit_tensor wrong = k;
  wrong.shape[3] = 32;
  auto [status, message] = status_and_message(&q, &wrong, &v, &out, nullptr, nullptr);
  CHECK(status == SAGEJIT_ERROR_INVALID_ARGUMENT);
  CHECK_MESSAGE(message.find("k.shape[3]") != std::string::npos, message);
  sagejit_options options = sagejit_default_options();
  options.struct_size = 0;
  CHECK(status_and_message(&q, &k, &v, &out, &options, nullptr).second.find("options.struct_size") != std::string::npos);
  options = sagejit_default_options();
  options.causal = 3;
  CHECK(status_and_message(&q, &k, &v, &out, &options, nullptr).first == SAGEJIT_ERROR_INVALID_ARGUMENT);
  // Nothing was written by the failed calls.
  for (std::uint16_t bits : r.out.storage()) REQUIRE(bits == HostTensor::poison_bits(c.dtype));
}

TEST_CASE("sagejit_supports_target: the plan for a named GPU, without a device or data") {
  auto [c, r, q, k, v, out] = CCall({1, 4, 33, 128}, {1, 2, 40, 128});
  int supported = -1;
  for (const char* target : {static_cast<const char*>(nullptr), "gfx1201", "gfx1200", "sm_90"}) {
    CAPTURE((target != nullptr ? target : "NULL"));
    REQUIRE(sagejit_supports_target(&q, &k, &v, &out, nullptr, target, &supported) == SAGEJIT_SUCCESS);
    CHECK(supported == 1);
  }
  const Support cpp = supports_target(r.q.view(), r.k.view(), r.v.view(), r.out.view());
  CHECK(cpp.ok);
  sagejit_tensor wide_q = q, wide_k = k, wide_v = v, wide_out = out;
  for (sagejit_tensor* t : {&wide_q, &wide_k, &wide_v, &wide_out}) t->shape[3] = 264;
  REQUIRE(sagejit_supports_target(&wide_q, &wide_k, &wide_v, &wide_out, nullptr, nullptr, &supported) ==
          SAGEJIT_SUCCESS);
  CHECK(supported == 0);
  CHECK_MESSAGE(std::string(sagejit_last_error()).find("head_dim 264") != std::string::npos, sagejit_last_error());
  REQUIRE(sagejit_supports_target(&q, &k, &v, &out, nullptr, "banana", &supported) == SAGEJIT_SUCCESS);
  CHECK(supported == 0);
  CHECK(std::string(sagejit_last_error()).find("target \"banana\"") != std::string::npos);
  CHECK(sagejit_supports_target(&q, &k, &v, &out, nullptr, nullptr, nullptr) == SAGEJIT_ERROR_INVALID_ARGUMENT);
}
