// Tuning-table lookup: every fallback level, the tie-break rules, arch handling and the shipped tables.
#include <doctest/doctest.h>

#include <algorithm>
#include <random>
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

Json config(int block_n, int warps) { return {{"block_n", block_n}, {"warps", warps}}; }

Json problem(Json extra = Json::object()) {
  Json p = {{"dtype", "bf16"}, {"head_dim", 128}, {"causal", false}};
  p.update(extra);
  return p;
}

Json measured_entry(Json problem_json, Json config_json, double time_us) {
  return {{"problem", problem_json},
          {"config", config_json},
          {"measured", {{"device", "NVIDIA H200"}, {"date", "2026-11-30"}, {"tool", "test"}, {"time_us", time_us}, {"tops", 1.0}}}};
}

Json unmeasured_entry(Json problem_json, Json config_json) {
  return {{"problem", problem_json}, {"config", config_json}, {"measured", nullptr}, {"reason", "hand-picked for the test"}};
}

Json table(const std::string& arch, Json entries) {
  return {{"schema", 1},
          {"arch", arch},
          {"kernels",
           {{"attention",
             {{"params", {{"block_n", {32, 64, 128}}, {"warps", {4, 8}}}},
              {"default", config(64, 4)},
              {"entries", std::move(entries)}}}}}};
}

TuningTables tables_of(std::vector<Json> files) {
  std::vector<TableFile> parsed;
  for (std::size_t i = 0; i < files.size(); ++i)
    parsed.push_back(validate_table(files[i], "layer0_" + std::to_string(i) + ".json"));
  TuningTables tables;
  tables.add_layer(std::move(parsed));
  tables.check_aliases();
  return tables;
}

ProblemKey key(int seq_q, int seq_kv, int gqa = 1) {
  return {.kernel = "attention", .arch = "sm_90", .dtype = DType::bf16, .head_dim = 128, .causal = false,
          .gqa_ratio = gqa, .seq_q = seq_q, .seq_kv = seq_kv};
}

// The message of the Error that looking `k` up throws, once its code is checked to be `expected`.
std::string lookup_error(const TuningTables& tables, const ProblemKey& k, ErrorCode expected) {
  try {
    tables.lookup(k);
  } catch (const Error& e) {
    CHECK(e.code() == expected);
    return e.what();
  }
  FAIL("no error for " << describe(k));
  return {};
}

}  // namespace

TEST_CASE("exact: an entry whose ranges contain the shape and whose other fields equal the key") {
  const auto tables = tables_of({table("sm_90", {measured_entry(problem({{"seq_q", {1024, 4096}}, {"seq_kv", {1024, 4096}}, {"gqa_ratio", 1}}),
                                                                config(128, 8), 50.0)})});
  for (int i = 0; i < 20; ++i) {
    const int q = random_in(1024, 4096), kv = random_in(1024, 4096);
    const Lookup found = tables.lookup(key(q, kv));
    CHECK(found.level == MatchLevel::exact);
    CHECK(found.config == TileConfig{{"block_n", 128}, {"warps", 8}});
    CHECK(found.source == "layer0_0.json");
    CHECK(found.pointer == "/kernels/attention/entries/0");
  }
  // Range bounds are inclusive.
  CHECK(tables.lookup(key(1024, 4096)).level == MatchLevel::exact);
  CHECK(tables.lookup(key(4096, 1024)).level == MatchLevel::exact);
  CHECK(tables.lookup(key(4097, 1024)).level != MatchLevel::exact);
}

TEST_CASE("exact: the more specific entry wins over a wider one") {
  std::vector<Json> entries = {
      measured_entry(problem(), config(32, 4), 10.0),  // any shape, any gqa: fastest, but least specific
      measured_entry(problem({{"seq_q", {1, 100000}}, {"seq_kv", {1, 100000}}}), config(64, 4), 20.0),
      measured_entry(problem({{"seq_q", {2048, 4096}}, {"seq_kv", {1, 100000}}}), config(64, 8), 30.0),
      measured_entry(problem({{"seq_q", {2048, 4096}}, {"seq_kv", {1, 100000}}, {"gqa_ratio", 2}}), config(128, 8), 40.0),
  };
  std::shuffle(entries.begin(), entries.end(), logged_rng());  // file order must not matter
  const auto tables = tables_of({table("sm_90", entries)});
  const int q = random_in(2048, 4096), kv = random_in(1, 100000);
  CHECK(tables.lookup(key(q, kv, 2)).config == TileConfig{{"block_n", 128}, {"warps", 8}});
  CHECK(tables.lookup(key(q, kv, 1)).config == TileConfig{{"block_n", 64}, {"warps", 8}});
  CHECK(tables.lookup(key(random_in(1, 2047), kv, 1)).config == TileConfig{{"block_n", 64}, {"warps", 4}});
  CHECK(tables.lookup(key(200000, kv, 1)).config == TileConfig{{"block_n", 32}, {"warps", 4}});
}

TEST_CASE("bucket: the entry's ranges meet the key's power-of-two buckets") {
  const auto tables = tables_of({table("sm_90", {measured_entry(problem({{"seq_q", {6000, 8000}}, {"seq_kv", {6000, 8000}}}),
                                                                config(128, 4), 70.0)})});
  // 5000 lies in the bucket [4097, 8192], which meets [6000, 8000].
  const Lookup found = tables.lookup(key(random_in(4097, 5999), random_in(4097, 8192)));
  CHECK(found.level == MatchLevel::bucket);
  CHECK(found.config == TileConfig{{"block_n", 128}, {"warps", 4}});
  // 8193 is in the next bucket: only nearest.
  CHECK(tables.lookup(key(8193, 7000)).level == MatchLevel::nearest);
  // A gqa mismatch is not a bucket match.
  const auto gqa_tables = tables_of({table("sm_90", {measured_entry(problem({{"seq_q", {6000, 8000}}, {"gqa_ratio", 4}}), config(32, 8), 5.0)})});
  CHECK(gqa_tables.lookup(key(5000, 5000, 4)).level == MatchLevel::bucket);
  CHECK(gqa_tables.lookup(key(5000, 5000, 8)).level == MatchLevel::nearest);
  // The bucket of 1 is [1, 1]; 1024's is [513, 1024].
  const auto small = tables_of({table("sm_90", {measured_entry(problem({{"seq_q", {513, 600}}}), config(32, 4), 5.0)})});
  CHECK(small.lookup(key(1024, 3)).level == MatchLevel::bucket);
  CHECK(small.lookup(key(512, 3)).level == MatchLevel::nearest);
}

TEST_CASE("nearest: smallest log2 distance of the sequence lengths, then of gqa") {
  const auto tables = tables_of({table("sm_90", {
      measured_entry(problem({{"seq_q", {1024, 2048}}, {"seq_kv", {1024, 2048}}}), config(32, 4), 10.0),
      measured_entry(problem({{"seq_q", {16384, 32768}}, {"seq_kv", {16384, 32768}}}), config(128, 8), 90.0),
  })});
  // 6000: log2(6000/2048) = 1.55 per dim vs log2(16384/6000) = 1.45 per dim.
  Lookup found = tables.lookup(key(6000, 6000));
  CHECK(found.level == MatchLevel::nearest);
  CHECK(found.config == TileConfig{{"block_n", 128}, {"warps", 8}});
  // 5000: 1.29 vs 1.71.
  found = tables.lookup(key(5000, 5000));
  CHECK(found.level == MatchLevel::nearest);
  CHECK(found.config == TileConfig{{"block_n", 32}, {"warps", 4}});
  // Distances add over both lengths: q far below the first, kv just above it.
  CHECK(tables.lookup(key(100000, 3000)).config == TileConfig{{"block_n", 128}, {"warps", 8}});

  const auto gqa = tables_of({table("sm_90", {
      measured_entry(problem({{"gqa_ratio", 1}}), config(32, 4), 10.0),
      measured_entry(problem({{"gqa_ratio", 4}}), config(64, 8), 10.0),
  })});
  const int q = random_in(1, 70000);
  found = gqa.lookup(key(q, q, 8));
  CHECK(found.level == MatchLevel::nearest);
  CHECK(found.config == TileConfig{{"block_n", 64}, {"warps", 8}});
  CHECK(gqa.lookup(key(q, q, 2)).config == TileConfig{{"block_n", 32}, {"warps", 4}});  // |1-0| = |1-2|: tie -> smaller config
}

TEST_CASE("default: nothing with the same dtype, head_dim and causal") {
  const auto tables = tables_of({table("sm_90", {measured_entry(problem(), config(128, 8), 10.0)})});
  ProblemKey k = key(random_in(1, 100000), random_in(1, 100000));
  k.dtype = DType::fp16;
  Lookup found = tables.lookup(k);
  CHECK(found.level == MatchLevel::default_config);
  CHECK(found.config == TileConfig{{"block_n", 64}, {"warps", 4}});
  CHECK(found.pointer == "/kernels/attention/default");
  k = key(100, 100);
  k.causal = true;
  CHECK(tables.lookup(k).level == MatchLevel::default_config);
  k = key(100, 100);
  k.head_dim = 64;
  CHECK(tables.lookup(k).level == MatchLevel::default_config);
  CHECK(to_string(MatchLevel::default_config) == "default");
}

TEST_CASE("duplicates: a measured entry beats an unmeasured one, then the lowest time wins") {
  const Json p = problem({{"seq_q", {1, 8192}}, {"seq_kv", {1, 8192}}});
  std::vector<Json> entries = {unmeasured_entry(p, config(32, 4)), measured_entry(p, config(64, 4), 120.0),
                               measured_entry(p, config(128, 8), 100.5), measured_entry(p, config(32, 8), 250.0)};
  for (int round = 0; round < 8; ++round) {
    std::shuffle(entries.begin(), entries.end(), logged_rng());
    const auto tables = tables_of({table("sm_90", entries)});
    CHECK(tables.lookup(key(random_in(1, 8192), random_in(1, 8192))).config == TileConfig{{"block_n", 128}, {"warps", 8}});
  }
  // Equal times: the smaller config wins, whatever the order.
  std::vector<Json> tied = {measured_entry(p, config(64, 8), 100.0), measured_entry(p, config(64, 4), 100.0)};
  for (int round = 0; round < 4; ++round) {
    std::shuffle(tied.begin(), tied.end(), logged_rng());
    CHECK(tables_of({table("sm_90", tied)}).lookup(key(100, 100)).config == TileConfig{{"block_n", 64}, {"warps", 4}});
  }
}

TEST_CASE("arch: target features are ignored, aliases resolve, unknown arch/kernel are errors") {
  const Json alias = {{"schema", 1}, {"arch", "gfx1200"}, {"alias_of", "gfx1201"}};
  const auto tables = tables_of({table("gfx1201", {measured_entry(problem(), config(32, 8), 10.0)}), alias});
  ProblemKey k = key(4096, 4096);
  k.arch = "gfx1201:sramecc-:xnack-";
  CHECK(tables.lookup(k).level == MatchLevel::exact);
  k.arch = "gfx1200";
  const Lookup found = tables.lookup(k);
  CHECK(found.config == TileConfig{{"block_n", 32}, {"warps", 8}});
  CHECK(tables.space("attention", "gfx1200:xnack-").default_config == TileConfig{{"block_n", 64}, {"warps", 4}});
  CHECK(tables.archs() == std::vector<std::string>{"gfx1200", "gfx1201"});

  k.arch = "gfx1100";
  const std::string no_table = lookup_error(tables, k, ErrorCode::unsupported);
  CHECK(no_table.find("gfx1100") != std::string::npos);
  CHECK(no_table.find("gfx1201") != std::string::npos);
  k.arch = "gfx1201";
  k.kernel = "softmax";
  CHECK_THROWS_AS(tables.lookup(k), Error);
  CHECK_THROWS_AS(tables.space("softmax", "gfx1201"), Error);
  k.kernel = "attention";
  k.dtype = DType::fp32;
  CHECK(lookup_error(tables, k, ErrorCode::unsupported).find("fp32") != std::string::npos);
  k.dtype = DType::bf16;
  k.seq_kv = 0;
  CHECK(lookup_error(tables, k, ErrorCode::invalid_argument).find("seq_kv") != std::string::npos);
}

TEST_CASE("shipped tables: embedded, valid, canonical, with the documented spaces and defaults") {
  REQUIRE(embedded_config_files_count >= 4);
  for (std::size_t i = 0; i < embedded_config_files_count; ++i) {
    const EmbeddedFile& file = embedded_config_files[i];
    CAPTURE(file.path);
    const Json document = parse_table_json(file.contents, file.path);
    CHECK_NOTHROW(validate_table(document, file.path));
    // Byte-stable form, so autotuner merges produce minimal diffs.
    CHECK(canonical_table_text(document) == std::string(file.contents));
  }
  const TuningTables tables = load_tuning_tables(std::nullopt);
  for (const char* arch : {"sm_90", "sm_89", "gfx1201", "gfx1200"}) {
    CAPTURE(arch);
    for (const char* kernel : {"attention", "prepare"}) {
      const KernelSpace& space = tables.space(kernel, arch);
      CHECK_FALSE(space.params.empty());
      ProblemKey k;
      k.kernel = kernel;
      k.arch = arch;
      k.seq_q = random_in(1, 65536);
      k.seq_kv = random_in(1, 65536);
      const Lookup found = tables.lookup(k);
      // Whatever level matched, the config lies in the space.
      for (const auto& [name, value] : found.config) {
        REQUIRE(space.params.contains(name));
        const auto& allowed = space.params.at(name);
        CHECK(std::find(allowed.begin(), allowed.end(), value) != allowed.end());
      }
    }
  }
  CHECK(tables.space("attention", "gfx1201").default_config ==
        TileConfig{{"block_n", 32}, {"rows_per_wave", 32}, {"stages", 2}, {"waves", 4}});
  CHECK(tables.space("attention", "gfx1200").params == tables.space("attention", "gfx1201").params);
  CHECK(tables.space("prepare", "sm_90").default_config == TileConfig{{"threads", 256}});
  CHECK(tables.space("attention", "sm_90").params.at("block_n") == std::vector<int>{32, 64, 128});
}
