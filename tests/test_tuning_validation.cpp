// Schema validation: every rejected input gives Error(config_error) naming the file, the JSON pointer
// and the expectation.
#include <doctest/doctest.h>

#include <functional>
#include <string>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "tuning/table_file.hpp"
#include "tuning_table_example.hpp"

using namespace sagejit;
using Json = nlohmann::json;

namespace {

Json valid_table() { return Json::parse(test::example_table_text); }

// The message of the error that validating `document` as `source` throws.
std::string error_for(const Json& document, const std::string& source = "configs/x.json") {
  try {
    validate_table(document, source);
  } catch (const Error& e) {
    CHECK(e.code() == ErrorCode::config_error);
    return e.what();
  }
  FAIL("the table was accepted: " << document.dump());
  return {};
}

std::string error_after(const std::function<void(Json&)>& mutate) {
  Json document = valid_table();
  mutate(document);
  return error_for(document);
}

Json& entry0(Json& t) { return t["kernels"]["attention"]["entries"][0]; }

}  // namespace

TEST_CASE("the example table of configs/README.md is valid") {
  const TableFile file = validate_table(valid_table(), "configs/gfx1201.json");
  CHECK(file.arch == "gfx1201");
  REQUIRE(file.kernels.at("attention").entries.size() == 2);
  const TableEntry& e = file.kernels.at("attention").entries[0];
  CHECK(e.measured->time_us == doctest::Approx(123.4));
  CHECK(e.problem.seq_q->hi == 65536);
  CHECK(e.pointer == "/kernels/attention/entries/0");
  CHECK(file.kernels.at("attention").entries[1].reason == "carried over from the sm_90 table");
  CHECK_FALSE(file.kernels.at("attention").entries[1].problem.gqa_ratio.has_value());
  CHECK(config_id(e.config) == "block_n=64,rows_per_wave=32,stages=2,waves=4");
}

TEST_CASE("each validation error names the file, the JSON pointer and what was expected") {
  struct Case {
    std::function<void(Json&)> mutate;
    std::string expected;  // the whole message after "configs/x.json: "
  };
  const Case cases[] = {
      {[](Json& t) { entry0(t)["config"]["block_n"] = 48; },
       "/kernels/attention/entries/0/config/block_n: 48 is not one of [32, 64]"},
      {[](Json& t) { t["kernels"]["attention"]["default"]["waves"] = 3; },
       "/kernels/attention/default/waves: 3 is not one of [2, 4, 8]"},
      {[](Json& t) { entry0(t)["config"].erase("stages"); },
       "/kernels/attention/entries/0/config: missing parameter \"stages\" (one of [1, 2])"},
      {[](Json& t) { entry0(t)["config"]["warps"] = 4; },
       "/kernels/attention/entries/0/config: unknown parameter \"warps\" (expected one of: block_n, rows_per_wave, stages, waves)"},
      {[](Json& t) { entry0(t)["config"]["block_n"] = 64.0; },
       "/kernels/attention/entries/0/config/block_n: expected an integer, found a number 64.0"},
      {[](Json& t) { t["schema"] = 2; }, "/schema: 2 is not a supported schema version (expected 1)"},
      {[](Json& t) { t["schema"] = "1"; }, "/schema: \"1\" is not a supported schema version (expected 1)"},
      {[](Json& t) { t.erase("schema"); }, "/: missing required key \"schema\""},
      {[](Json& t) { t["comment"] = "hi"; }, "/: unknown key \"comment\" (expected one of: alias_of, arch, kernels, schema)"},
      {[](Json& t) { t["arch"] = "rdna4"; },
       "/arch: \"rdna4\" is not an arch name (expected sm_<digits> or gfx<hex digits>, e.g. sm_90, gfx1201)"},
      {[](Json& t) { t["alias_of"] = "gfx1200"; },
       "/: expected exactly one of \"kernels\" (the tables) and \"alias_of\" (an arch whose tables to use)"},
      {[](Json& t) { t["kernels"]["attention"]["tuned"] = true; },
       "/kernels/attention: unknown key \"tuned\" (expected one of: default, entries, params)"},
      {[](Json& t) { t["kernels"]["attention"]["params"]["waves"] = {2, 4, 2}; },
       "/kernels/attention/params/waves/2: 2 is listed twice (values must be distinct)"},
      {[](Json& t) { t["kernels"]["prepare"]["params"]["threads"] = Json::array(); },
       "/kernels/prepare/params/threads: expected a non-empty array of integers, found []"},
      {[](Json& t) { t["kernels"]["prepare"]["entries"] = Json::object(); },
       "/kernels/prepare/entries: expected an array, found an object {}"},
      {[](Json& t) { entry0(t)["problem"]["seqq"] = {1, 2}; },
       "/kernels/attention/entries/0/problem: unknown key \"seqq\" (expected one of: causal, dtype, gqa_ratio, head_dim, seq_kv, seq_q)"},
      {[](Json& t) { entry0(t)["problem"]["dtype"] = "fp32"; },
       "/kernels/attention/entries/0/problem/dtype: \"fp32\" is not one of [\"bf16\", \"fp16\"]"},
      {[](Json& t) { entry0(t)["problem"]["head_dim"] = 96; },
       "/kernels/attention/entries/0/problem/head_dim: 96 is not one of [64, 128, 256]"},
      {[](Json& t) { entry0(t)["problem"]["causal"] = 0; },
       "/kernels/attention/entries/0/problem/causal: expected true or false, found 0"},
      {[](Json& t) { entry0(t)["problem"]["gqa_ratio"] = 0; },
       "/kernels/attention/entries/0/problem/gqa_ratio: 0 is out of range [1, 2147483647]"},
      {[](Json& t) { entry0(t)["problem"]["seq_q"] = {4096, 1024}; },
       "/kernels/attention/entries/0/problem/seq_q: range [4096, 1024] is empty (expected lo <= hi)"},
      {[](Json& t) { entry0(t)["problem"]["seq_kv"] = 1024; },
       "/kernels/attention/entries/0/problem/seq_kv: expected an inclusive range [lo, hi] of two integers, found 1024"},
      {[](Json& t) { entry0(t)["problem"]["seq_kv"] = {0, 5}; },
       "/kernels/attention/entries/0/problem/seq_kv/0: 0 is out of range [1, 2147483647]"},
      {[](Json& t) { entry0(t)["problem"].erase("causal"); },
       "/kernels/attention/entries/0/problem: missing required key \"causal\""},
      {[](Json& t) { entry0(t)["measured"] = nullptr; },
       "/kernels/attention/entries/0: missing required key \"reason\" (an unmeasured entry must say why it has this config)"},
      {[](Json& t) { entry0(t)["reason"] = "fast"; },
       "/kernels/attention/entries/0/reason: not allowed when \"measured\" is given (only with null)"},
      {[](Json& t) { t["kernels"]["attention"]["entries"][1]["reason"] = ""; },
       "/kernels/attention/entries/1/reason: expected a non-empty string, found an empty string \"\""},
      {[](Json& t) { entry0(t)["measured"]["date"] = "30.11.2026"; },
       "/kernels/attention/entries/0/measured/date: \"30.11.2026\" is not a date (expected YYYY-MM-DD)"},
      {[](Json& t) { entry0(t)["measured"]["time_us"] = -1; },
       "/kernels/attention/entries/0/measured/time_us: -1 must be a finite number > 0"},
      {[](Json& t) { entry0(t)["measured"].erase("tops"); },
       "/kernels/attention/entries/0/measured: missing required key \"tops\""},
      {[](Json& t) { entry0(t)["measured"]["gpu"] = "x"; },
       "/kernels/attention/entries/0/measured: unknown key \"gpu\" (expected one of: date, device, time_us, tool, tops)"},
      {[](Json& t) { entry0(t)["candidates"][1].erase("reason"); },
       "/kernels/attention/entries/0/candidates/1: missing required key \"reason\" (required when time_us is null)"},
      {[](Json& t) { entry0(t)["candidates"][0]["config"]["waves"] = 16; },
       "/kernels/attention/entries/0/candidates/0/config/waves: 16 is not one of [2, 4, 8]"},
      {[](Json& t) { entry0(t)["candidates"] = "all"; },
       "/kernels/attention/entries/0/candidates: expected an array, found \"all\""},
      {[](Json& t) { t["kernels"]["a/b~c"] = 1; },
       "/kernels/a~1b~0c: expected a kernel table (an object), found an integer 1"},
  };
  for (const Case& c : cases) {
    const std::string message = error_after(c.mutate);
    CHECK(message == "configs/x.json: " + c.expected);
  }
}

TEST_CASE("the arch must match a file named after an arch; aliases are well formed") {
  Json t = valid_table();
  CHECK(error_for(t, "overlays/sm_89.json") ==
        "overlays/sm_89.json: /arch: \"gfx1201\" does not match the file name (expected \"sm_89\")");
  CHECK_NOTHROW(validate_table(t, "overlays/my-gfx1201-tunings.json"));
  const Json alias = {{"schema", 1}, {"arch", "gfx1200"}, {"alias_of", "gfx1201"}};
  CHECK(validate_table(alias, "configs/gfx1200.json").alias_of == "gfx1201");
  CHECK(error_for({{"schema", 1}, {"arch", "gfx1200"}, {"alias_of", "gfx1200"}}) ==
        "configs/x.json: /alias_of: \"gfx1200\" aliases itself (expected another arch)");
  CHECK(error_for({{"schema", 1}, {"arch", "gfx1200"}}) ==
        "configs/x.json: /: expected exactly one of \"kernels\" (the tables) and \"alias_of\" (an arch whose tables to use)");
  CHECK(error_for(Json::array()) == "configs/x.json: /: expected a tuning table (an object), found an array []");
  CHECK(is_arch_name("sm_90a"));
  CHECK(is_arch_name("gfx90a"));
  CHECK_FALSE(is_arch_name("sm_"));
  CHECK_FALSE(is_arch_name("gfx1201:xnack-"));
  // The same forms as core/target (one rule): sm_100f is a processor, sm_9 and gfx12g are not.
  CHECK(is_arch_name("sm_100f"));
  CHECK_FALSE(is_arch_name("sm_9"));
  CHECK_FALSE(is_arch_name("gfx12g"));
}

TEST_CASE("malformed JSON: the parse error position, duplicate keys and excessive nesting") {
  auto parse_error = [](const std::string& text) {
    try {
      parse_table(text, "user.json");
    } catch (const Error& e) {
      CHECK(e.code() == ErrorCode::config_error);
      return std::string(e.what());
    }
    FAIL("accepted: " << text);
    return std::string();
  };
  std::string message = parse_error("{\n  \"schema\": 1,\n  \"arch\": gfx1201\n}");
  CHECK(message.rfind("user.json: malformed JSON: ", 0) == 0);
  CHECK(message.find("line 3, column") != std::string::npos);
  message = parse_error("{\"schema\": 1, \"arch\": \"sm_90\", \"schema\": 1, \"alias_of\": \"sm_89\"}");
  CHECK(message == "user.json: malformed JSON: object key \"schema\" appears twice");
  message = parse_error(std::string(5000, '[') + std::string(5000, ']'));
  CHECK(message.find("nested deeper than") != std::string::npos);
  CHECK(parse_error("").rfind("user.json: malformed JSON: ", 0) == 0);
  CHECK(parse_error(valid_table().dump() + "x").find("malformed JSON") != std::string::npos);
  CHECK_NOTHROW(parse_table(valid_table().dump(2), "user.json"));
}
