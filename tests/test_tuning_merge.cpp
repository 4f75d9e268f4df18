// Merging autotuner results into a table and writing it back: deterministic, idempotent, byte-stable.
#include <doctest/doctest.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/embedded_file.hpp"
#include "dev/table_merge.hpp"
#include "random_support.hpp"
#include "tuning/tuning_table.hpp"

using namespace sagejit;
using test::logged_rng;
using test::random_in;
using Json = nlohmann::json;

namespace {

// The shipped table's schema, spaces and defaults with no entries: the merge tests count entries,
// so they must not depend on what the autotuner has measured into the shipped file.
Json shipped(const std::string& name) {
  for (std::size_t i = 0; i < embedded_config_files_count; ++i) {
    if (embedded_config_files[i].path != name) continue;
    Json table = Json::parse(embedded_config_files[i].contents);
    for (auto& [kernel, space] : table["kernels"].items()) space["entries"] = Json::array();
    return table;
  }
  FAIL("no embedded " << name);
  return {};
}

const std::vector<int> block_ns = {32, 64, 128}, warps = {4, 8}, rows = {16, 32}, stages = {1, 2}, pv = {0, 1},
                       wgmma = {0, 1}, min_blocks = {1, 3}, tma = {0, 1};
int pick(const std::vector<int>& values) { return values[random_in(0, static_cast<int>(values.size()) - 1)]; }

Json random_config() {
  return {{"block_n", pick(block_ns)}, {"warps", pick(warps)}, {"rows_per_warp", pick(rows)}, {"stages", pick(stages)}, {"pv_fp16", pick(pv)},
          {"wgmma", pick(wgmma)}, {"min_blocks", pick(min_blocks)}, {"tma", pick(tma)}};
}

Json problem_for(int i) {
  const int lo = 1 << (4 + i % 10);
  return {{"dtype", i % 2 ? "fp16" : "bf16"}, {"head_dim", i % 3 ? 128 : 64}, {"causal", i % 5 == 0},
          {"gqa_ratio", 1 + i % 4}, {"seq_q", {lo, lo * 2}}, {"seq_kv", {lo, lo * 4}}};
}

// An autotuner result: random configs and timings, every candidate's timing kept.
Json tuned_entry(const Json& problem) {
  Json candidates = Json::array();
  double best = 1e30;
  Json best_config;
  for (int c = 0; c < 4; ++c) {
    const Json config = random_config();
    if (random_in(0, 3) == 0) {
      candidates.push_back({{"config", config}, {"time_us", nullptr}, {"reason", "failed the oracle"}});
      continue;
    }
    const double time = random_in(1000, 900000) / 100.0;
    candidates.push_back({{"config", config}, {"time_us", time}});
    if (time < best) best = time, best_config = config;
  }
  if (best_config.is_null()) {
    return {{"problem", problem}, {"config", random_config()}, {"measured", nullptr},
            {"reason", "every candidate failed; default kept"}, {"candidates", candidates}};
  }
  return {{"problem", problem},
          {"config", best_config},
          {"measured", {{"device", "NVIDIA H200"}, {"date", "2026-11-30"}, {"tool", "sagejit-autotune 0.1.0"}, {"time_us", best}, {"tops", 123.25}}},
          {"candidates", candidates}};
}

// `entry` as the autotuner writes a winner: measured, and so without the "reason" of an unmeasured
// entry (a table rejects "reason" beside "measured"). tuned_entry() returns an unmeasured entry with a
// reason when every candidate failed, so tests that force a measurement go through here.
Json measured_as(Json entry, double time_us, const std::string& date) {
  entry["measured"] = {{"device", "NVIDIA H200"}, {"date", date}, {"tool", "t"}, {"time_us", time_us}, {"tops", 1.0}};
  entry.erase("reason");
  return entry;
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

TEST_CASE("merging is deterministic, independent of entry order, and idempotent") {
  const Json base = shipped("sm_90.json");
  Json entries = Json::array();
  for (int i = 0; i < 12; ++i) entries.push_back(tuned_entry(problem_for(i)));
  const Json merged = merge_entries(base, {{"attention", entries}});
  const std::string text = canonical_table_text(merged);
  CHECK(merged["kernels"]["attention"]["entries"].size() == 12);

  Json shuffled = entries;
  std::shuffle(shuffled.begin(), shuffled.end(), logged_rng());
  CHECK(canonical_table_text(merge_entries(base, {{"attention", shuffled}})) == text);
  // Again, and into the result itself: nothing changes.
  CHECK(canonical_table_text(merge_entries(merged, {{"attention", shuffled}})) == text);
  CHECK(canonical_table_text(merge_entries(merged, Json::object())) == text);
  // Split in two runs: the same result.
  Json first = Json::array(), second = Json::array();
  for (std::size_t i = 0; i < entries.size(); ++i) (i % 2 ? first : second).push_back(entries[i]);
  CHECK(canonical_table_text(merge_entries(merge_entries(base, {{"attention", second}}), {{"attention", first}})) == text);
  // The merged table loads, and every merged entry is found again.
  const TableFile file = validate_table(merged, "sm_90.json");
  TuningTables tables;
  tables.add_layer({file});
  for (int i = 0; i < 12; ++i) {
    const Json p = problem_for(i);
    ProblemKey k{"attention", "sm_90", p["dtype"] == "bf16" ? DType::bf16 : DType::fp16, p["head_dim"].get<int>(),
                 p["causal"].get<bool>(), p["gqa_ratio"].get<int>(), p["seq_q"][1].get<int>(), p["seq_kv"][0].get<int>()};
    CHECK(tables.lookup(k).level == MatchLevel::exact);
  }
}

TEST_CASE("duplicates: lower measured time wins, unmeasured never beats measured, candidates are kept") {
  const Json base = shipped("sm_90.json");
  const Json problem = problem_for(random_in(0, 100));
  const Json slow = measured_as(tuned_entry(problem), 200.5, "2026-11-29");
  const Json fast = measured_as(tuned_entry(problem), 100.25, "2026-11-30");
  Json unmeasured = tuned_entry(problem);
  unmeasured["measured"] = nullptr;
  unmeasured["reason"] = "guess";
  std::vector<Json> all = {slow, fast, unmeasured};
  std::string expected;
  for (int round = 0; round < 6; ++round) {
    std::shuffle(all.begin(), all.end(), logged_rng());
    Json table = base;
    for (const Json& e : all) table = merge_entries(table, {{"attention", {e}}});  // one run at a time
    const Json& entries = table["kernels"]["attention"]["entries"];
    REQUIRE(entries.size() == 1);
    CHECK(entries[0]["config"] == fast["config"]);
    CHECK(entries[0]["measured"]["time_us"] == 100.25);
    // Every distinct candidate of the three runs survives.
    std::set<std::string> distinct;
    for (const Json* e : {&slow, &fast, static_cast<const Json*>(&unmeasured)})
      for (const Json& c : e->at("candidates")) distinct.insert(c.dump());
    CHECK(entries[0]["candidates"].size() == distinct.size());
    if (round == 0) expected = canonical_table_text(table);
    CHECK(canonical_table_text(table) == expected);
  }
  // Only unmeasured entries: still deterministic (the smaller config wins, numerically: 32 < 128).
  Json a = unmeasured, b = unmeasured;
  a["config"]["block_n"] = 32;
  b["config"]["block_n"] = 128;
  CHECK(merge_entries(base, {{"attention", {b, a}}})["kernels"]["attention"]["entries"][0]["config"]["block_n"] == 32);
}

TEST_CASE("the merged table depends only on the set of entries: every order, every split into runs") {
  const Json base = shipped("sm_90.json");
  const int index = static_cast<int>(random_in(0, 100));
  const Json problem = problem_for(index);
  // Every kind of entry for one problem: measured (two with one time: the config, then the text
  // decides), unmeasured with a reason, an all-failed autotuner result; plus another problem's entry.
  Json unmeasured = tuned_entry(problem);
  unmeasured["measured"] = nullptr;
  unmeasured["reason"] = "guess";
  Json all_failed = unmeasured;
  all_failed["reason"] = "every candidate failed; default kept";
  all_failed["config"] = random_config();
  std::vector<Json> entries = {measured_as(tuned_entry(problem), 50.5, "2026-11-30"),
                               measured_as(tuned_entry(problem), 50.5, "2026-11-29"), unmeasured, all_failed,
                               tuned_entry(problem_for(index + 1))};  // another dtype: another problem
  std::sort(entries.begin(), entries.end());
  std::string expected;
  int orders = 0;
  do {
    // All in one run, one entry per run, and the first half into a table that then takes the rest.
    const Json one_run = merge_entries(base, {{"attention", entries}});
    Json one_at_a_time = base;
    for (const Json& e : entries) one_at_a_time = merge_entries(one_at_a_time, {{"attention", {e}}});
    const Json first_half(std::vector<Json>(entries.begin(), entries.begin() + 2));
    const Json second_half(std::vector<Json>(entries.begin() + 2, entries.end()));
    const Json halves = merge_entries(merge_entries(base, {{"attention", first_half}}), {{"attention", second_half}});
    if (expected.empty()) expected = canonical_table_text(one_run);
    REQUIRE(canonical_table_text(one_run) == expected);
    REQUIRE(canonical_table_text(one_at_a_time) == expected);
    REQUIRE(canonical_table_text(halves) == expected);
    ++orders;
  } while (std::next_permutation(entries.begin(), entries.end()));
  CHECK(orders == 120);
  // The winner is a measured one with the lowest time, and it carries no reason.
  const Json merged = Json::parse(expected)["kernels"]["attention"]["entries"];
  for (const Json& entry : merged)
    if (entry["problem"] == problem) {
      CHECK(entry["measured"]["time_us"] == 50.5);
      CHECK_FALSE(entry.contains("reason"));
    }
}

TEST_CASE("merge rejects bad input naming where it is") {
  const Json base = shipped("sm_90.json");
  Json bad = tuned_entry(problem_for(3));
  bad["config"]["block_n"] = 48;
  try {
    merge_entries(base, {{"attention", {tuned_entry(problem_for(1)), bad}}});
    FAIL("accepted");
  } catch (const Error& e) {
    CHECK(e.code() == ErrorCode::config_error);
    CHECK(std::string(e.what()) == "merge: new entries: /kernels/attention/entries/1/config/block_n: 48 is not one of [32, 64, 128]");
  }
  CHECK_THROWS_AS(merge_entries(base, {{"softmax", Json::array()}}), Error);
  CHECK_THROWS_AS(merge_entries(Json{{"schema", 1}, {"arch", "gfx1200"}, {"alias_of", "gfx1201"}}, Json::object()), Error);
  CHECK_THROWS_AS(merge_entries(base, Json::array()), Error);
}

TEST_CASE("write_table: sorted keys, 2-space indent, trailing newline, byte-stable") {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("sagejit_tuning_" + std::to_string(::getpid()) + "_" + std::to_string(random_in(0, 1 << 30)));
  std::filesystem::create_directories(dir);
  const auto path = dir / "sm_90.json";
  Json entries = Json::array();
  for (int i = 0; i < 5; ++i) entries.push_back(tuned_entry(problem_for(random_in(0, 1000))));
  const Json table = merge_entries(shipped("sm_90.json"), {{"attention", entries}});
  write_table(path.string(), table);
  const std::string text = read_file(path);
  CHECK(text == canonical_table_text(table));
  CHECK(text.back() == '\n');
  CHECK(text.find("{\n  \"arch\": \"sm_90\",\n  \"kernels\": {\n") == 0);
  // Re-reading and re-writing gives the same bytes.
  write_table(path.string(), parse_table_json(text, path.string()));
  CHECK(read_file(path) == text);
  CHECK(validate_table(Json::parse(text), path.string()).kernels.at("attention").entries.size() <= 5);
  // An invalid table is not written.
  Json bad = table;
  bad["schema"] = 7;
  CHECK_THROWS_AS(write_table(path.string(), bad), Error);
  CHECK(read_file(path) == text);
  std::filesystem::remove_all(dir);
}
