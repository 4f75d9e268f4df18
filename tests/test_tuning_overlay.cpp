// Overlays (SAGEJIT_CONFIG_PATH): precedence over the shipped tables and between items, directories,
// bad overlays as errors at first use, and SAGEJIT_RECORD_MISSES.
#include <doctest/doctest.h>

#include <unistd.h>

#include <cstdlib>
#include <functional>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "random_support.hpp"
#include "tuning/tuning_table.hpp"

using namespace sagejit;
using test::logged_rng;
using test::random_in;
using Json = nlohmann::json;

namespace {

const std::string data_dir = std::string(SAGEJIT_SOURCE_DIR) + "/tests/data/tuning";

ProblemKey key(std::string arch, DType dtype, int head_dim, bool causal, int seq_q, int seq_kv, int gqa = 1) {
  return {.kernel = "attention", .arch = std::move(arch), .dtype = dtype, .head_dim = head_dim, .causal = causal,
          .gqa_ratio = gqa, .seq_q = seq_q, .seq_kv = seq_kv};
}

std::string error_of(const std::function<void()>& action, ErrorCode expected = ErrorCode::config_error) {
  try {
    action();
  } catch (const Error& e) {
    CHECK(e.code() == expected);
    return e.what();
  }
  FAIL("no error");
  return {};
}

TableFile small_table(const std::string& name, Json entries) {
  const Json table = {{"schema", 1},
                      {"arch", "sm_90"},
                      {"kernels",
                       {{"attention",
                         {{"params", {{"block_n", {32, 64}}}}, {"default", {{"block_n", 32}}}, {"entries", entries}}}}}};
  return validate_table(table, name);
}

Json entry(Json problem, int block_n, std::optional<double> time_us) {
  Json e = {{"problem", problem}, {"config", {{"block_n", block_n}}}};
  if (time_us)
    e["measured"] = {{"device", "NVIDIA H200"}, {"date", "2026-11-30"}, {"tool", "test"}, {"time_us", *time_us}, {"tops", 2.0}};
  else
    e["measured"] = nullptr, e["reason"] = "hand-picked";
  return e;
}

std::filesystem::path temp_path(const std::string& stem) {
  return std::filesystem::temp_directory_path() /
         (stem + "_" + std::to_string(::getpid()) + "_" + std::to_string(random_in(0, 1 << 30)) + ".jsonl");
}

}  // namespace

TEST_CASE("an overlay wins over the shipped tables, the default and the space included") {
  const std::string a = data_dir + "/overlay_a.json";
  const TuningTables tables = load_tuning_tables(a);
  const Lookup found = tables.lookup(key("sm_90", DType::bf16, 128, false, 4096, 4096));
  CHECK(found.level == MatchLevel::exact);
  CHECK(found.source == a);
  CHECK(found.pointer == "/kernels/attention/entries/0");
  CHECK(found.config.at("block_n") == 128);
  // Shipped tables still serve what the overlay does not define.
  CHECK(tables.lookup(key("sm_89", DType::bf16, 128, false, 4096, 4096)).source == "configs/sm_89.json");
}

TEST_CASE("earlier SAGEJIT_CONFIG_PATH items win over later ones, even over a faster measurement") {
  const std::string a = data_dir + "/overlay_a.json", b = data_dir + "/overlay_b.json";
  const ProblemKey k = key("sm_90:sramecc+", DType::bf16, 128, false, 4096, 4096);
  CHECK(load_tuning_tables(a + ":" + b).lookup(k).source == a);  // a: 900 us, b: 10 us
  CHECK(load_tuning_tables(b + ":" + a).lookup(k).source == b);
  // A lower-precedence overlay still contributes entries the higher one lacks.
  const Lookup fp16 = load_tuning_tables(a + ":" + b).lookup(key("sm_90", DType::fp16, 64, true, random_in(1, 99999), 7));
  CHECK(fp16.level == MatchLevel::exact);
  CHECK(fp16.source == b);
  CHECK(fp16.pointer == "/kernels/attention/entries/1");
}

TEST_CASE("a directory item contributes every *.json in it; empty items are ignored") {
  const std::string dir = data_dir + "/overlay_dir";
  TuningTables tables = load_tuning_tables(":" + dir + "::");
  const Lookup causal = tables.lookup(key("sm_90", DType::bf16, 128, true, random_in(1, 65536), random_in(1, 100000)));
  CHECK(causal.level == MatchLevel::exact);
  CHECK(causal.source == dir + "/sm_90_causal.json");
  // An arch aliased to gfx1201 (gfx1150 here) follows the gfx1201 overlay too.
  tables.add_layer({validate_table(Json{{"schema", 1}, {"arch", "gfx1150"}, {"alias_of", "gfx1201"}}, "alias.json")});
  const Lookup rdna = tables.lookup(key("gfx1150", DType::fp16, 128, false, random_in(1, 9999), random_in(1, 9999)));
  CHECK(rdna.level == MatchLevel::exact);
  CHECK(rdna.source == dir + "/gfx1201_fp16.json");
  // An overlay may add an arch and a kernel family.
  ProblemKey softmax = key("sm_100", DType::bf16, 128, false, 10, 10);
  softmax.kernel = "softmax";
  const Lookup added = tables.lookup(softmax);
  CHECK(added.level == MatchLevel::default_config);
  CHECK(added.config == TileConfig{{"threads", 64}});
  CHECK(tables.space("softmax", "sm_100").params.at("threads") == std::vector<int>{64, 128});
}

TEST_CASE("precedence applies within a level; a better level beats precedence") {
  const Json exact_problem = {{"dtype", "bf16"}, {"head_dim", 128}, {"causal", false}, {"seq_q", {1000, 2000}}};
  const Json far_problem = {{"dtype", "bf16"}, {"head_dim", 128}, {"causal", false}, {"seq_q", {60000, 65536}}};
  TuningTables tables;
  tables.add_layer({small_table("shipped.json", {entry(exact_problem, 32, 5.0)})});
  tables.add_layer({small_table("overlay.json", {entry(far_problem, 64, 1.0)})});
  const int q = random_in(1000, 2000);
  Lookup found = tables.lookup(key("sm_90", DType::bf16, 128, false, q, q));
  CHECK(found.level == MatchLevel::exact);
  CHECK(found.source == "shipped.json");
  // Same level: the overlay wins although slower and unmeasured.
  tables.add_layer({small_table("overlay2.json", {entry(exact_problem, 64, std::nullopt)})});
  found = tables.lookup(key("sm_90", DType::bf16, 128, false, q, q));
  CHECK(found.source == "overlay2.json");
  CHECK(found.config.at("block_n") == 64);
}

TEST_CASE("files of one layer must agree on a kernel's space and on aliases") {
  Json other_space = {{"schema", 1},
                      {"arch", "sm_90"},
                      {"kernels", {{"attention", {{"params", {{"block_n", {32, 64}}}}, {"default", {{"block_n", 64}}}, {"entries", Json::array()}}}}}};
  TuningTables tables;
  std::string message = error_of([&] {
    tables.add_layer({small_table("one.json", Json::array()), validate_table(other_space, "two.json")});
  });
  CHECK(message.find("one.json") != std::string::npos);
  CHECK(message.find("two.json") != std::string::npos);

  TuningTables dangling;
  dangling.add_layer({validate_table(Json{{"schema", 1}, {"arch", "gfx1200"}, {"alias_of", "gfx1201"}}, "alias.json")});
  message = error_of([&] { dangling.check_aliases(); });
  CHECK(message.find("alias.json: /alias_of: no table for arch \"gfx1201\"") != std::string::npos);

  TuningTables chain;
  chain.add_layer({validate_table(Json{{"schema", 1}, {"arch", "gfx1200"}, {"alias_of", "gfx1201"}}, "a.json"),
                   validate_table(Json{{"schema", 1}, {"arch", "gfx1201"}, {"alias_of", "gfx1151"}}, "b.json")});
  message = error_of([&] { chain.check_aliases(); });
  CHECK(message.find("itself an alias") != std::string::npos);
}

TEST_CASE("a bad overlay is an error naming the file, the JSON pointer and the expectation") {
  const std::string invalid = data_dir + "/invalid";
  struct Case {
    std::string file;
    std::string expected;
  };
  for (const Case& c : {Case{"bad_block_n.json", ": /kernels/attention/entries/0/config/block_n: 48 is not one of [32, 64, 128]"},
                        Case{"unknown_key.json", ": /kernels/attention/entries/0/problem: unknown key \"seqq\""},
                        Case{"sm_89.json", ": /arch: \"sm_90\" does not match the file name (expected \"sm_89\")"},
                        Case{"malformed.json", ": malformed JSON: "}}) {
    CAPTURE(c.file);
    const std::string path = invalid + "/" + c.file;
    const std::string message = error_of([&] { load_tuning_tables(data_dir + "/overlay_a.json:" + path); });
    CHECK(message.rfind(path + c.expected, 0) == 0);
    if (c.file == "malformed.json") CHECK(message.find("line ") != std::string::npos);
  }
  // A directory holding a bad file fails naming that file.
  CHECK(error_of([&] { load_tuning_tables(invalid); }).rfind(invalid + "/", 0) == 0);
  const std::string missing = data_dir + "/no_such_table.json";
  CHECK(error_of([&] { load_tuning_tables(missing); }).find(missing + ": no such file or directory") != std::string::npos);
}

TEST_CASE("tuning_tables(): a bad SAGEJIT_CONFIG_PATH throws config_error at every use") {
  const std::string bad = data_dir + "/invalid/bad_block_n.json";
  REQUIRE(::setenv("SAGEJIT_CONFIG_PATH", bad.c_str(), 1) == 0);
  for (int attempt = 0; attempt < 2; ++attempt) {
    const std::string message = error_of([] { tuning_tables().lookup(key("sm_90", DType::bf16, 128, false, 1, 1)); });
    CHECK(message.find(bad) != std::string::npos);
  }
  ::unsetenv("SAGEJIT_CONFIG_PATH");
}

TEST_CASE("SAGEJIT_RECORD_MISSES: one line per distinct non-exact lookup, read back for the autotuner") {
  const auto path = temp_path("sagejit_misses");
  TuningTables tables;
  tables.add_layer({small_table("t.json", {entry({{"dtype", "bf16"}, {"head_dim", 128}, {"causal", false}, {"seq_q", {1, 1000}}}, 64, 3.0)})});
  tables.record_misses_to(path.string());
  const std::vector<ProblemKey> misses = {key("sm_90", DType::bf16, 128, false, random_in(5000, 9000), random_in(1, 99)),
                                          key("sm_90", DType::fp16, 128, false, random_in(1, 99), random_in(1, 99)),
                                          key("sm_90", DType::bf16, 128, false, random_in(1001, 1024), 77, random_in(2, 8))};
  for (int round = 0; round < 3; ++round) {
    CHECK(tables.lookup(key("sm_90", DType::bf16, 128, false, random_in(1, 1000), random_in(1, 9999))).level == MatchLevel::exact);
    for (const ProblemKey& k : misses) CHECK(tables.lookup(k).level != MatchLevel::exact);
  }
  const std::vector<ProblemKey> read = read_recorded_misses(path.string());
  CHECK(read == misses);
  {
    std::ifstream in(path);
    int lines = 0;
    for (std::string line; std::getline(in, line);) ++lines;
    CHECK(lines == 3);
  }
  // Lines appended by several processes may repeat; the reader deduplicates.
  { std::ofstream(path, std::ios::app) << problem_key_to_json(misses[1]).dump() << "\n"; }
  CHECK(read_recorded_misses(path.string()) == misses);
  { std::ofstream(path, std::ios::app) << "{\"kernel\": \"attention\", \"arch\": \n"; }
  const std::string message = error_of([&] { read_recorded_misses(path.string()); });
  CHECK(message.rfind(path.string() + ":5: malformed JSON line", 0) == 0);
  std::filesystem::remove(path);
  CHECK(read_recorded_misses(path.string()).empty());
}
