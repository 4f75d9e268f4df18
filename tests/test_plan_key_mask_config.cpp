// The config a masked call runs (KernelDesc::table_config_for): on gfx12 a tuning table's config runs
// key-masked calls at gfx12_key_mask_rows_per_wave rows per wave, everything else of it as chosen; on
// sm_90 a table's three-warpgroup config runs masked calls in the one-warpgroup form at three CTAs per
// SM; an unmasked call, other NVIDIA configs and an explicit config are not narrowed (an explicit masked 32-row
// gfx12 config is refused, naming the rule), and a table config passed explicitly with
// attention_config_from_table (sagejit-precompile) is fitted as the plan's own choice is.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>

#include "core/error.hpp"
#include "jit/kernel_config.hpp"
#include "kernels/attention_gfx12_desc.hpp"
#include "plan/attention_plan.hpp"
#include "common/key_mask.h"

using namespace sagejit;

namespace {

const unsigned char attend = 1;  // never read: planning takes only the mask's presence

AttentionCall call_of(DType dtype, std::int64_t head_dim, bool causal, std::int64_t seq_q, bool masked) {
  AttentionCall call{.batch = 2, .heads_q = 4, .heads_kv = 2, .seq_q = seq_q, .seq_kv = 777, .head_dim = head_dim,
                     .dtype = dtype, .causal = causal, .sm_scale = 0.125f};
  if (masked) call.key_mask = {&attend, SJ_KEY_MASK_BOOL, 0, 1};
  return call;
}

std::string unsupported_reason(const AttentionCall& call, const char* target) {
  try {
    (void)plan_attention(call, target);
  } catch (const Error& error) {
    CHECK(error.code() == ErrorCode::unsupported);
    return error.what();
  }
  return {};
}

}  // namespace

TEST_CASE("key-mask configs: on gfx12 a table's config runs masked calls at 16 rows per wave, the rest as chosen") {
  int planned = 0;
  for (const char* target : {"gfx1201", "gfx1200"})
    for (DType dtype : {DType::bf16, DType::fp16})
      for (std::int64_t head_dim : {40, 64, 128})
        for (bool causal : {false, true})
          for (std::int64_t seq_q : {100, 4096}) {  // the tables' short-sequence entries too
            CAPTURE(target);
            CAPTURE(head_dim);
            CAPTURE(causal);
            CAPTURE(seq_q);
            const AttentionPlan plain = plan_attention(call_of(dtype, head_dim, causal, seq_q, false), target);
            const AttentionPlan masked = plan_attention(call_of(dtype, head_dim, causal, seq_q, true), target);
            CHECK(masked.spec.key_mask);
            CHECK(masked.attention == plain.attention);
            TileConfig expected = plain.attention_config;
            expected["rows_per_wave"] = std::min(expected.at("rows_per_wave"), gfx12_key_mask_rows_per_wave);
            CHECK(masked.attention_config == expected);
            CHECK(check_kernel_config(*masked.attention, masked.attention_config, masked.spec, target).empty());
            ++planned;
          }
  CHECK(planned == 48);
}

TEST_CASE("key-mask configs: on sm_90 a table's three-warpgroup config runs masked calls with one warpgroup per CTA") {
  // 32768 tokens, bf16, D=128: the sm_90 table's three-warpgroup bucket.
  const std::int64_t seq = 32768;
  const bool causal = false;
  AttentionCall plain_call = call_of(DType::bf16, 128, causal, seq, false);
  plain_call.batch = 1;
  plain_call.seq_kv = seq;
  AttentionCall masked_call = plain_call;
  masked_call.key_mask = {&attend, SJ_KEY_MASK_BOOL, 0, 1};
  const AttentionPlan plain = plan_attention(plain_call, "sm_90");
  const AttentionPlan masked = plan_attention(masked_call, "sm_90");
  REQUIRE(plain.attention->name == "attention_sm90");
  CHECK(plain.attention_config.at("warps") == 12);  // configs/sm_90.json's entry for this bucket
  TileConfig expected = plain.attention_config;
  expected["warps"] = 4;
  expected["min_blocks"] = 3;
  CHECK(masked.attention == plain.attention);
  CHECK(masked.attention_config == expected);
  CHECK(check_kernel_config(*masked.attention, masked.attention_config, masked.spec, "sm_90").empty());
  // An explicit three-warpgroup config is run as asked, masked or not.
  masked_call.attention_config = plain.attention_config;
  CHECK(plan_attention(masked_call, "sm_90").attention_config.at("warps") == 12);
}

TEST_CASE("key-mask configs: other NVIDIA plans and unmasked gfx12 plans keep the table's config") {
  for (const char* target : {"sm_89", "sm_90"})
    for (bool causal : {false, true}) {
      CAPTURE(target);
      const AttentionPlan plain = plan_attention(call_of(DType::bf16, 128, causal, 4096, false), target);
      const AttentionPlan masked = plan_attention(call_of(DType::bf16, 128, causal, 4096, true), target);
      CHECK(masked.attention == plain.attention);
      CHECK(masked.attention_config == plain.attention_config);
    }
  const TileConfig fitted = kernel_table_config(attention_gfx12_kernel, {{"rows_per_wave", 32}}, Specialization{});
  CHECK(fitted.at("rows_per_wave") == 32);  // unmasked: as chosen (completed with the defaults)
  CHECK(fitted.size() == complete_config(attention_gfx12_kernel, {}).size());
}

TEST_CASE("key-mask configs: an explicit masked 32-row gfx12 config is refused; from a table it is fitted") {
  const TileConfig config{{"waves", 4}, {"rows_per_wave", 32}, {"block_n", 64}, {"stages", 2}};
  AttentionCall call = call_of(DType::fp16, 64, true, 4096, true);
  call.attention_config = config;
  const std::string reason = unsupported_reason(call, "gfx1201");
  CHECK(reason.find("key-mask variant runs at most 16 rows per wave") != std::string::npos);

  call.attention_config_from_table = true;
  const AttentionPlan plan = plan_attention(call, "gfx1201");
  TileConfig expected = config;
  expected["rows_per_wave"] = 16;
  CHECK(plan.attention_config == expected);

  AttentionCall unmasked = call_of(DType::fp16, 64, true, 4096, false);
  unmasked.attention_config = config;
  CHECK(plan_attention(unmasked, "gfx1201").attention_config == config);  // explicit: exactly as given
}
