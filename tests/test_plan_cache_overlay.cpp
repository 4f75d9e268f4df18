// The plan cache and tuning-table overlays (SAGEJIT_CONFIG_PATH). The process-wide tables are read
// at their first successful use and never change after (tuning/table_sources.cpp); until then every
// use retries, so an overlay set after a failed load is the one that applies. A cached plan must
// never shadow it: a call that failed on a bad overlay is not kept, and the plan after the fix is
// the overlay's. Its own binary: the process must not have loaded the tables before.
#include <doctest/doctest.h>

#include <cstdlib>
#include <fstream>

#include <nlohmann/json.hpp>

#include "cache_test_support.hpp"
#include "core/error.hpp"
#include "core/target.hpp"
#include "plan/attention_plan.hpp"
#include "plan/plan_cache.hpp"
#include "random_support.hpp"
#include "tuning/tuning_table.hpp"

using namespace sagejit;
using Json = nlohmann::json;

namespace {

// sm_90's shipped table with an entry for every bf16 D128 call (its sequences up to 8192) and the
// prepare default changed: such a call gets these configs.
const TileConfig overlay_attention = {{"block_n", 64}, {"min_blocks", 1}, {"pv_fp16", 0}, {"rows_per_warp", 16},
                                      {"stages", 2},   {"tma", 1},        {"warps", 4},   {"wgmma", 1}};
const TileConfig overlay_prepare = {{"threads", 128}};

void write_overlay(const std::filesystem::path& path) {
  std::ifstream shipped(std::string(SAGEJIT_SOURCE_DIR) + "/configs/sm_90.json");
  Json table = Json::parse(shipped);
  const Json problem = {{"causal", false}, {"dtype", "bf16"}, {"gqa_ratio", 1}, {"head_dim", 128},
                        {"seq_q", {1, 8192}}, {"seq_kv", {1, 8192}}};
  table["kernels"]["attention"]["entries"] = Json::array(
      {{{"problem", problem}, {"config", overlay_attention}, {"measured", nullptr}, {"reason", "test overlay"}}});
  table["kernels"]["prepare"]["default"] = overlay_prepare;
  table["kernels"]["prepare"]["entries"] = Json::array();
  std::ofstream(path) << table.dump(1);
}

ErrorCode error_code_of(const AttentionCall& call, const Target& target) {
  try {
    cached_plan(call, target);
  } catch (const Error& error) {
    return error.code();
  }
  FAIL("planned without an error");
  return ErrorCode::internal;
}

}  // namespace

TEST_CASE("an overlay applied after a failed load is not shadowed by a cached plan") {
  const Target sm90 = parse_target("sm_90");
  const AttentionCall call = {.batch = test::random_in(1, 4), .heads_q = 8, .heads_kv = 8,
                              .seq_q = test::random_in(64, 8192), .seq_kv = test::random_in(64, 8192),
                              .head_dim = 128, .sm_scale = 0.125f};
  CAPTURE(call.seq_q);
  CAPTURE(call.seq_kv);
  // The shipped tables choose other configs for this call (so the checks below can fail).
  const Lookup shipped = load_tuning_tables(std::nullopt).lookup(problem_key_of(call, "attention", sm90));
  REQUIRE(shipped.config != overlay_attention);

  test::TempDir dir;
  const std::string missing = (dir / "no_such_table.json").string();
  REQUIRE(::setenv("SAGEJIT_CONFIG_PATH", missing.c_str(), 1) == 0);
  for (int attempt = 0; attempt < 2; ++attempt) CHECK(error_code_of(call, sm90) == ErrorCode::config_error);
  CHECK(cached_plan_count() == 0);  // the failures are not kept

  write_overlay(dir / "sm_90.json");
  const std::string overlay = (dir / "sm_90.json").string();
  REQUIRE(::setenv("SAGEJIT_CONFIG_PATH", overlay.c_str(), 1) == 0);
  const auto plan = cached_plan(call, sm90);
  CHECK_MESSAGE(plan->attention_config == overlay_attention, config_id(plan->attention_config));
  CHECK(plan->prepare_config == overlay_prepare);
  CHECK(cached_plan(call, sm90) == plan);
  ::unsetenv("SAGEJIT_CONFIG_PATH");
}
