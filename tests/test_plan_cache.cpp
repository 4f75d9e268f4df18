// The plan cache (plan/plan_cache.hpp): a repeated signature gets the very plan planned the first
// time, which equals a fresh plan_attention; every field the plan reads is part of the signature and
// nothing else is (pointers, strides); it holds at most plan_cache_capacity signatures, least
// recently used dropped first; failures are not kept; concurrent callers share one plan.
#include <doctest/doctest.h>

#include <array>
#include <memory>
#include <thread>
#include <tuple>
#include <vector>

#include "core/error.hpp"
#include "core/target.hpp"
#include "plan/attention_plan.hpp"
#include "plan/plan_cache.hpp"
#include "random_support.hpp"

using namespace sagejit;
using test::random_in;

namespace {

AttentionCall random_call() {
  AttentionCall call;
  call.batch = random_in(1, 3);
  call.heads_kv = random_in(1, 4);
  call.heads_q = call.heads_kv * random_in(1, 3);
  call.seq_q = random_in(1, 5000);
  call.seq_kv = random_in(1, 5000);
  call.head_dim = 8 * random_in(1, 16);
  call.dtype = random_in(0, 1) ? DType::bf16 : DType::fp16;
  call.causal = random_in(0, 1) != 0;
  call.smooth_k = random_in(0, 1) != 0;
  call.want_lse = random_in(0, 1) != 0;
  call.sm_scale = 1.0f / static_cast<float>(random_in(1, 16));
  return call;
}

const Target& random_target() {
  static const std::array<Target, 3> targets = {parse_target("sm_90"), parse_target("gfx1201"),
                                                parse_target("gfx1200:xnack-")};
  return targets[static_cast<std::size_t>(random_in(0, 2))];
}

void check_same_plan(const AttentionPlan& kept, const AttentionPlan& fresh) {
  const auto fields = [](const AttentionPlan& p) {
    return std::make_tuple(p.prepare, p.attention, p.prepare_config, p.attention_config, p.spec.dtype, p.spec.head_dim,
                           p.spec.causal, p.spec.write_lse, p.head_dim, p.smooth_k, p.shape.batch, p.shape.heads_q,
                           p.shape.heads_kv, p.shape.seq_q, p.shape.seq_kv, p.workspace.total_bytes);
  };
  CHECK((fields(kept) == fields(fresh)));
  CHECK(kept.spec.v == fresh.spec.v);
  CHECK(kept.workspace.v_quant == fresh.workspace.v_quant);
  CHECK(kept.workspace.lse_delta == fresh.workspace.lse_delta);
}

}  // namespace

TEST_CASE("a repeated signature gets the plan planned first, equal to a fresh plan") {
  clear_plan_cache();
  for (int round = 0; round < 40; ++round) {
    const AttentionCall call = random_call();
    const Target& target = random_target();
    CAPTURE(target.full);
    CAPTURE(call.seq_q);
    CAPTURE(call.seq_kv);
    CAPTURE(call.head_dim);
    const auto first = cached_plan(call, target);
    check_same_plan(*first, plan_attention(call, target));
    // Pointers and strides are not part of a plan: another call of the same signature shares it.
    AttentionCall moved = call;
    moved.q = &round;
    moved.out = &moved;
    moved.q_strides = {7, 5, 3};
    moved.lse = call.want_lse ? reinterpret_cast<float*>(&moved) : nullptr;
    CHECK(cached_plan(moved, target) == first);
  }
}

TEST_CASE("every field a plan reads is part of the signature") {
  clear_plan_cache();
  const AttentionCall base = {.batch = 2, .heads_q = 8, .heads_kv = 4, .seq_q = 1000, .seq_kv = 1500, .head_dim = 64,
                              .sm_scale = 0.125f};
  const Target sm90 = parse_target("sm_90");
  const auto base_plan = cached_plan(base, sm90);
  std::vector<AttentionCall> variants(12, base);
  variants[0].batch = 3;
  variants[1].heads_q = 4;
  variants[2].heads_kv = 8, variants[2].heads_q = 8;
  variants[3].seq_q = 1001;
  variants[4].seq_kv = 1499;
  variants[5].head_dim = 128;
  variants[6].dtype = DType::fp16;
  variants[7].causal = true;
  variants[8].smooth_k = false;
  variants[9].want_lse = true;
  variants[10].sm_scale = 0.25f;
  variants[11].attention_config = {{"warps", 4}, {"rows_per_warp", 32}, {"block_n", 64}, {"stages", 2}, {"pv_fp16", 1}};
  for (std::size_t i = 0; i < variants.size(); ++i) {
    CAPTURE(i);
    const auto plan = cached_plan(variants[i], sm90);
    CHECK(plan != base_plan);
    check_same_plan(*plan, plan_attention(variants[i], sm90));
  }
  // The full target, features included, is part of it.
  CHECK(cached_plan(base, parse_target("gfx1201")) != cached_plan(base, parse_target("gfx1201:xnack-")));
  CHECK(cached_plan(base, sm90) == base_plan);
  // A key mask, and a mask per head (its workspace has a key_bias row per head): three plans.
  static const unsigned char mask_bytes = 1;
  AttentionCall masked = base;
  masked.heads_kv = masked.heads_q;
  masked.key_mask = {&mask_bytes, 1, 0, 0};
  AttentionCall per_head = masked;
  per_head.key_mask.heads = static_cast<int>(masked.heads_q);
  const auto masked_plan = cached_plan(masked, sm90), per_head_plan = cached_plan(per_head, sm90);
  CHECK(masked_plan != per_head_plan);
  CHECK(per_head_plan->workspace.key_bias.count == masked_plan->workspace.key_bias.count * 8);
  check_same_plan(*per_head_plan, plan_attention(per_head, sm90));
}

TEST_CASE("at most plan_cache_capacity signatures, the least recently used dropped first") {
  clear_plan_cache();
  const Target sm90 = parse_target("sm_90");
  AttentionCall call = {.seq_q = 64, .seq_kv = 64, .head_dim = 64, .sm_scale = 0.125f};
  const auto oldest = cached_plan(call, sm90);
  call.seq_q = 65;
  const auto touched = cached_plan(call, sm90);
  for (std::size_t i = 0; i < plan_cache_capacity; ++i) {
    call.seq_q = 1000 + static_cast<std::int64_t>(i);
    cached_plan(call, sm90);
    call.seq_q = 65;
    if (i == plan_cache_capacity / 2) CHECK(cached_plan(call, sm90) == touched);  // used again: kept
  }
  CHECK(cached_plan_count() == plan_cache_capacity);
  call.seq_q = 65;
  CHECK(cached_plan(call, sm90) == touched);
  call.seq_q = 64;
  CHECK(cached_plan(call, sm90) != oldest);  // dropped, planned afresh
  CHECK(cached_plan_count() == plan_cache_capacity);
}

TEST_CASE("a call that cannot be planned throws every time and is not kept") {
  clear_plan_cache();
  AttentionCall call = {.seq_q = 64, .seq_kv = 64, .head_dim = 264, .sm_scale = 0.125f};
  for (int i = 0; i < 2; ++i) CHECK_THROWS_AS(cached_plan(call, parse_target("sm_90")), Error);
  call.head_dim = 64;
  call.heads_q = 3, call.heads_kv = 2;
  CHECK_THROWS_AS(cached_plan(call, parse_target("sm_90")), Error);
  CHECK_THROWS_AS(cached_plan({.head_dim = 64, .sm_scale = 0.125f}, parse_target("sm_120")), Error);
  CHECK(cached_plan_count() == 0);
}

TEST_CASE("threads asking for one signature share one plan") {
  clear_plan_cache();
  const Target target = parse_target("gfx1201");
  const AttentionCall call = random_call();
  std::array<std::shared_ptr<const AttentionPlan>, 4> seen;
  std::vector<std::thread> threads;
  for (std::size_t t = 0; t < seen.size(); ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 200; ++i) seen[t] = cached_plan(call, target);
    });
  for (std::thread& thread : threads) thread.join();
  for (const auto& plan : seen) CHECK(plan == seen[0]);
  CHECK(cached_plan_count() == 1);
}
