// Key masks at the public API (docs/API.md "Key masks"): the C++ AttentionOptions::key_mask and the
// C ABI's sagejit_options.key_mask reach the plan and the emulator (the result of emulate_attention is
// the emulator's with the same mask, bit for bit), a V1 options struct has no mask whatever its caller
// left past it, and every bad mask is an invalid_argument naming options.key_mask and what is accepted.
#include <doctest/doctest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "common/key_mask.h"
#include "dev/numerics/key_mask_fill.hpp"
#include "dev/numerics/random_fill.hpp"
#include "numerics/emulator.hpp"
#include "numerics/host_tensor.hpp"
#include "plan/attention_plan.hpp"
#include "plan/emulator_options.hpp"
#include "random_support.hpp"
#include "sagejit/sagejit.h"
#include "sagejit/sagejit.hpp"

using namespace sagejit;
using numerics::HostTensor;

namespace {

struct Inputs {
  HostTensor q, k, v, out;
};

Inputs make_inputs(std::mt19937_64& rng) {
  Inputs in{HostTensor({2, 2, 70, 64}, DType::bf16, Layout::HND), HostTensor({2, 1, 90, 64}, DType::bf16, Layout::HND),
            HostTensor({2, 1, 90, 64}, DType::bf16, Layout::HND), HostTensor({2, 2, 70, 64}, DType::bf16, Layout::HND)};
  numerics::fill_normal(in.q, rng);
  numerics::fill_channel_offsets(in.k, rng, 2.0);
  numerics::fill_normal(in.v, rng);
  return in;
}

sagejit_tensor to_c(const HostTensor& tensor) {
  const TensorView view = tensor.view();
  sagejit_tensor c{};
  c.data = view.data;
  c.dtype = static_cast<int32_t>(view.dtype);
  for (int i = 0; i < 4; ++i) {
    c.shape[i] = view.shape[i];
    c.strides[i] = view.strides[i];
  }
  return c;
}

}  // namespace

TEST_CASE("key mask: emulate_attention with a mask is the emulator's result with it, C++ and C alike") {
  std::mt19937_64 rng(test::detail::mix(test::test_seed() + 0x6b6d));
  const Inputs in = make_inputs(rng);
  for (const MaskType type : {MaskType::boolean, MaskType::fp32, MaskType::bf16, MaskType::fp16}) {
    const numerics::KeyMaskBuffer mask = numerics::make_key_mask(static_cast<int>(type), numerics::MaskPattern::random,
                                                                 2, 90, 95, 1, false, rng);
    CAPTURE(mask.description);
    AttentionOptions options;
    options.causal = true;
    options.key_mask = {mask.bytes.data(), type, {2, 90}, {95, 1}, 0};
    HostTensor out = in.out;
    emulate_attention(in.q.view(), in.k.view(), in.v.view(), out.view(), options, "sm_90");

    AttentionCall call;
    call.batch = 2;
    call.heads_q = 2;
    call.heads_kv = 1;
    call.seq_q = 70;
    call.seq_kv = 90;
    call.head_dim = 64;
    call.causal = true;
    call.sm_scale = numerics::default_sm_scale(64);
    call.key_mask = mask.view;
    const AttentionPlan plan = plan_attention(call, "sm_90");
    CHECK(plan.spec.key_mask);
    CHECK(plan.workspace.key_bias.count == static_cast<std::size_t>(2 * 128));
    const numerics::EmulatorResult expected =
        numerics::emulate(in.q.view(), in.k.view(), in.v.view(), Layout::HND, emulator_options_for(plan, call));
    CHECK(out.storage() == expected.out.storage());

    // The C ABI: the same call through sagejit_options.key_mask.
    HostTensor c_out = in.out;
    sagejit_options c_options = sagejit_default_options();
    c_options.causal = 1;
    c_options.key_mask = {mask.bytes.data(), static_cast<int32_t>(type), 0, {2, 90}, {95, 1}};
    const sagejit_tensor q = to_c(in.q), k = to_c(in.k), v = to_c(in.v), o = to_c(c_out);
    REQUIRE(sagejit_emulate_attention(&q, &k, &v, &o, &c_options, "sm_90") == SAGEJIT_SUCCESS);
    CHECK(c_out.storage() == out.storage());
  }
}

TEST_CASE("key mask: a V1 options struct has none, whatever lies past its struct_size") {
  std::mt19937_64 rng(test::detail::mix(test::test_seed() + 0x6b6e));
  const Inputs in = make_inputs(rng);
  HostTensor plain = in.out, v1 = in.out;
  const sagejit_tensor q = to_c(in.q), k = to_c(in.k), v = to_c(in.v);
  sagejit_options options = sagejit_default_options();
  const sagejit_tensor o_plain = to_c(plain), o_v1 = to_c(v1);
  REQUIRE(sagejit_emulate_attention(&q, &k, &v, &o_plain, &options, nullptr) == SAGEJIT_SUCCESS);
  options.struct_size = SAGEJIT_OPTIONS_V1_SIZE;
  std::memset(&options.key_mask, 0x5a, sizeof(options.key_mask));  // garbage a V1 caller never set
  REQUIRE(sagejit_emulate_attention(&q, &k, &v, &o_v1, &options, nullptr) == SAGEJIT_SUCCESS);
  CHECK(v1.storage() == plain.storage());
}

TEST_CASE("key mask: bad masks are invalid arguments naming options.key_mask and the accepted values") {
  std::mt19937_64 rng(test::detail::mix(test::test_seed() + 0x6b6f));
  const Inputs in = make_inputs(rng);
  std::vector<unsigned char> bytes(2 * 90, 1);
  const auto reason = [&](KeyMask mask) {
    AttentionOptions options;
    options.key_mask = mask;
    return supports_target(in.q.view(), in.k.view(), in.v.view(), in.out.view(), options, "gfx1201").reason;
  };
  CHECK(reason({bytes.data(), MaskType::boolean, {2, 90}, {90, 1}, 0}).empty());
  CHECK(reason({bytes.data(), MaskType::boolean, {1, 90}, {0, 1}, 0}).empty());  // one row for every item
  CHECK(reason({bytes.data(), MaskType::boolean, {2, 89}, {90, 1}, 0}).find("options.key_mask.shape [2, 89] is not [B, Nk] = [2, 90]") != std::string::npos);
  CHECK(reason({bytes.data(), MaskType::boolean, {3, 90}, {90, 1}, 0}).find("options.key_mask.shape") != std::string::npos);
  CHECK(reason({bytes.data(), MaskType::boolean, {2, 90}, {-90, 1}, 0}).find("options.key_mask.strides [-90, 1] must be >= 0") != std::string::npos);
  CHECK(reason({nullptr, MaskType::fp16, {2, 90}, {90, 1}, 0}).find("options.key_mask.data is null") != std::string::npos);
  CHECK(reason({bytes.data(), MaskType::none, {2, 90}, {90, 1}, 0}).find("its type is none") != std::string::npos);
  CHECK(reason({bytes.data(), static_cast<MaskType>(9), {2, 90}, {90, 1}, 0}).find("options.key_mask.type 9 is not one of") != std::string::npos);
  const std::string too_far = reason({bytes.data(), MaskType::fp32, {2, 90}, {std::int64_t{1} << 62, 1}, 0});
  CHECK(too_far.find("key_mask: element offsets") != std::string::npos);
}

TEST_CASE("key mask per head: C++ and the C ABI (options V4) reach the emulator with one mask row per head") {
  std::mt19937_64 rng(test::detail::mix(test::test_seed() + 0x6b70));
  // q and k with the same heads (a per-head mask needs them): [2, 3, 70, 64] and [2, 3, 90, 64].
  Inputs in{HostTensor({2, 3, 70, 64}, DType::bf16, Layout::HND), HostTensor({2, 3, 90, 64}, DType::bf16, Layout::HND),
            HostTensor({2, 3, 90, 64}, DType::bf16, Layout::HND), HostTensor({2, 3, 70, 64}, DType::bf16, Layout::HND)};
  numerics::fill_normal(in.q, rng);
  numerics::fill_channel_offsets(in.k, rng, 2.0);
  numerics::fill_normal(in.v, rng);
  // LTX's shape: [B, H, 1, Nk] as stored, heads' rows 93 elements apart, batch items 3 x 93.
  const numerics::KeyMaskBuffer mask = numerics::make_key_mask(
      SJ_KEY_MASK_BF16, numerics::MaskPattern::padded_tail, 2, 3, 90, 3 * 93, 93, 1, /*ltx_style=*/false, rng);
  CAPTURE(mask.description);
  AttentionOptions options;
  options.key_mask = {mask.bytes.data(), MaskType::bf16, {2, 90}, {3 * 93, 1}, 0, /*heads=*/3, /*head_stride=*/93};
  HostTensor out = in.out;
  emulate_attention(in.q.view(), in.k.view(), in.v.view(), out.view(), options, "sm_90");

  AttentionCall call;
  call.batch = 2;
  call.heads_q = call.heads_kv = 3;
  call.seq_q = 70;
  call.seq_kv = 90;
  call.head_dim = 64;
  call.sm_scale = numerics::default_sm_scale(64);
  call.key_mask = mask.view;
  const AttentionPlan plan = plan_attention(call, "sm_90");
  CHECK(plan.workspace.key_bias.count == static_cast<std::size_t>(2 * 3 * 128));  // a row per item and head
  const numerics::EmulatorResult expected =
      numerics::emulate(in.q.view(), in.k.view(), in.v.view(), Layout::HND, emulator_options_for(plan, call));
  CHECK(out.storage() == expected.out.storage());
  // The heads' masks differ, so the per-head call is not the call with head 0's mask for every head.
  AttentionOptions head0 = options;
  head0.key_mask.heads = 1;
  head0.key_mask.head_stride = 0;
  HostTensor out_head0 = in.out;
  emulate_attention(in.q.view(), in.k.view(), in.v.view(), out_head0.view(), head0, "sm_90");
  CHECK(out_head0.storage() != out.storage());

  HostTensor c_out = in.out;
  sagejit_options c_options = sagejit_default_options();
  CHECK(c_options.key_mask_heads.count == 1);
  CHECK(c_options.key_mask_heads.stride == 0);
  c_options.key_mask = {mask.bytes.data(), SAGEJIT_MASK_BF16, 0, {2, 90}, {3 * 93, 1}};
  c_options.key_mask_heads = {3, 93};
  const sagejit_tensor q = to_c(in.q), k = to_c(in.k), v = to_c(in.v), o = to_c(c_out);
  REQUIRE(sagejit_emulate_attention(&q, &k, &v, &o, &c_options, "sm_90") == SAGEJIT_SUCCESS);
  CHECK(c_out.storage() == out.storage());

  // A V3 struct has no key_mask_heads: whatever lies past it, one mask for every head.
  HostTensor v3_out = in.out;
  const sagejit_tensor o_v3 = to_c(v3_out);
  c_options.struct_size = SAGEJIT_OPTIONS_V3_SIZE;
  REQUIRE(sagejit_emulate_attention(&q, &k, &v, &o_v3, &c_options, "sm_90") == SAGEJIT_SUCCESS);
  CHECK(v3_out.storage() == out_head0.storage());
}

TEST_CASE("key mask per head: bad heads are errors naming options.key_mask.heads and what is accepted") {
  std::mt19937_64 rng(test::detail::mix(test::test_seed() + 0x6b71));
  const Inputs in = make_inputs(rng);  // Hq 2 on Hk 1: GQA
  std::vector<unsigned char> bytes(2 * 2 * 90, 1);
  const auto reason = [&](KeyMask mask) {
    AttentionOptions options;
    options.key_mask = mask;
    return supports_target(in.q.view(), in.k.view(), in.v.view(), in.out.view(), options, "gfx1201").reason;
  };
  CHECK(reason({bytes.data(), MaskType::boolean, {2, 90}, {180, 1}, 0, 3, 90}).find(
            "options.key_mask.heads 3 is not 1 (one mask for every head) or Hq = 2") != std::string::npos);
  CHECK(reason({bytes.data(), MaskType::boolean, {2, 90}, {180, 1}, 0, 2, 90}).find(
            "a mask per head with GQA (Hq 2 != Hk 1) is not supported") != std::string::npos);
  CHECK(reason({bytes.data(), MaskType::boolean, {2, 90}, {180, 1}, 0, 2, -90}).find(
            "options.key_mask.head_stride -90 must be >= 0") != std::string::npos);
  CHECK(reason({nullptr, MaskType::none, {0, 0}, {0, 0}, 0, 2, 0}).find(
            "options.key_mask.heads is 2 but there is no key mask") != std::string::npos);
}
