// The attention plan's head-dim rule (plan/attention_plan.hpp): which head dims a call may have, the
// kernel head dim each runs at (zero-padded to the smallest kernel head dim >= D), and what follows
// from it everywhere the plan is asked: the specialization, the workspace, the tuning key, the
// kernel index limits, the API's default softmax scale (the true head dim's) and the error text.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "api/attention_problem.hpp"
#include "core/error.hpp"
#include "jit/kernel_desc.hpp"
#include "plan/attention_plan.hpp"
#include "plan/workspace_layout.hpp"
#include "random_support.hpp"

using namespace sagejit;

namespace {

AttentionCall call_with_head_dim(std::int64_t head_dim) {
  return {.batch = 2, .heads_q = 4, .heads_kv = 2, .seq_q = 300, .seq_kv = 777, .head_dim = head_dim, .sm_scale = 0.125f};
}

std::string unsupported_message(std::int64_t head_dim) {
  try {
    check_head_dim(head_dim);
  } catch (const Error& error) {
    CHECK(error.code() == ErrorCode::unsupported);
    return error.what();
  }
  return {};
}

}  // namespace

TEST_CASE("head dims: multiples of 8 up to 256 are accepted, each runs at the next kernel head dim") {
  int accepted = 0;
  for (std::int64_t d = -8; d <= 300; ++d) {
    CAPTURE(d);
    const bool expected = d >= 8 && d <= 256 && d % 8 == 0;
    if (expected) {
      ++accepted;
      CHECK_NOTHROW(check_head_dim(d));
      const int kernel_dim = kernel_head_dim_for(d);
      CHECK(kernel_dim == (d <= 64 ? 64 : d <= 128 ? 128 : 256));  // kernel_head_dims = {64, 128, 256}: the smallest one >= D
      CHECK(is_kernel_head_dim(kernel_dim));
      if (is_kernel_head_dim(static_cast<int>(d))) CHECK(kernel_dim == d);  // native dims are not padded
    } else {
      const std::string message = unsupported_message(d);
      CHECK_MESSAGE(message.find("head_dim " + std::to_string(d)) != std::string::npos, message);
      CHECK_MESSAGE(message.find("multiples of 8 from 8 to 256") != std::string::npos, message);
      CHECK_MESSAGE(message.find("[64, 128, 256]") != std::string::npos, message);
      CHECK_THROWS_AS(kernel_head_dim_for(d), Error);
    }
  }
  CHECK(accepted == 32);
  for (std::int64_t huge : {std::int64_t{1} << 31, std::int64_t{1} << 40, std::int64_t{-1} << 40})
    CHECK_THROWS_AS(check_head_dim(huge), Error);
}

TEST_CASE("a padded head dim plans onto the kernel head dim: specialization, workspace, tuning key, limits") {
  for (const char* target : {"sm_90", "sm_89", "gfx1201"}) {
    for (std::int64_t d = 8; d <= 256; d += 8) {
      CAPTURE(target);
      CAPTURE(d);
      const AttentionCall call = call_with_head_dim(d);
      const AttentionPlan plan = plan_attention(call, target);
      const int kernel_dim = kernel_head_dim_for(d);
      CHECK(plan.head_dim == d);
      CHECK(plan.spec.head_dim == kernel_dim);
      CHECK(problem_key_of(call, "attention", parse_target(target)).head_dim == kernel_dim);
      // The workspace of a padded call is the one of the same call at the kernel head dim.
      const AttentionCall at_kernel_dim = call_with_head_dim(kernel_dim);
      const WorkspaceLayout padded = plan.workspace, native = workspace_layout(at_kernel_dim, plan.spec.v);
      CHECK(padded.total_bytes == native.total_bytes);
      CHECK(padded.k8 == native.k8);
      CHECK(padded.v_quant == native.v_quant);
      CHECK(padded.v_scale == native.v_scale);
      CHECK(padded.lse_delta == native.lse_delta);
      const std::int64_t rows_q = call.batch * call.heads_q * padded.seq_q_pad;
      CHECK(static_cast<std::int64_t>(padded.q_scale.offset - padded.q8.offset) >= rows_q * kernel_dim);
    }
  }
}

TEST_CASE("the kernels' 2^32-byte k/v head limit counts the padded channels") {
  // Nk_pad * 64 crosses 2^32 while Nk_pad * 40 does not: D=40 runs at 64, so it is refused.
  AttentionCall call = call_with_head_dim(40);
  call.heads_q = call.heads_kv = 1;
  call.seq_kv = (std::int64_t{1} << 32) / 64;
  REQUIRE(call.seq_kv * 40 < (std::int64_t{1} << 32));
  try {
    check_attention_call(call);
    FAIL("no error for a k/v head of 2^32 padded bytes");
  } catch (const Error& error) {
    const std::string message = error.what();
    CHECK(error.code() == ErrorCode::unsupported);
    CHECK_MESSAGE(message.find("head_dim 40 (run at 64)") != std::string::npos, message);
  }
  call.seq_kv -= 128;
  CHECK_NOTHROW(check_attention_call(call));
}

TEST_CASE("the API's default softmax scale is 1/sqrt of the true head dim, padded or not") {
  const std::int64_t d = 8 * test::random_in(1, 16);  // one accepted head dim a run (the seed is logged)
  CAPTURE(d);
  std::vector<std::uint16_t> storage(static_cast<std::size_t>(2 * 3 * 5 * d));
  TensorView tensor;
  tensor.data = storage.data();
  tensor.dtype = DType::bf16;
  tensor.shape = {2, 3, 5, d};
  tensor.strides = {3 * 5 * d, 5 * d, d, 1};
  TensorView out = tensor;
  std::vector<std::uint16_t> out_storage(storage.size());
  out.data = out_storage.data();
  const AttentionProblem problem = validate_attention(tensor, tensor, tensor, out, AttentionOptions{});
  CHECK(problem.call.head_dim == d);
  CHECK(problem.call.sm_scale == 1.0f / std::sqrt(static_cast<float>(d)));
  if (kernel_head_dim_for(d) != d)  // never the padded dim's
    CHECK(problem.call.sm_scale != 1.0f / std::sqrt(static_cast<float>(kernel_head_dim_for(d))));
}
