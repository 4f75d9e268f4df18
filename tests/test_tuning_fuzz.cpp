// Fuzz-style: truncated and randomly mutated tables must give Error(config_error) or a valid table,
// never a crash or another exception. (A libFuzzer target for the same loader: tests/fuzz/.)
#include <doctest/doctest.h>

#include <cctype>
#include <random>
#include <string>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "dev/table_merge.hpp"
#include "tuning/tuning_table.hpp"
#include "random_support.hpp"
#include "tuning_table_example.hpp"

using namespace sagejit;

namespace {

// Exercises a table that loaded: lookup at several shapes, merge and canonical round trip.
void use(const TableFile& file, const nlohmann::json& document) {
  if (!file.alias_of.empty()) return;
  TuningTables tables;
  tables.add_layer({file});
  for (const auto& [kernel, table] : file.kernels)
    for (int n : {1, 700, 4096, 1 << 20}) {
      ProblemKey key{kernel, file.arch + ":xnack-", DType::bf16, 128, false, 2, n, n};
      tables.lookup(key);
      key.dtype = DType::fp16;
      key.head_dim = 64;
      key.causal = true;
      tables.lookup(key);
    }
  const nlohmann::json merged = merge_entries(document, nlohmann::json::object());
  const std::string text = canonical_table_text(merged);
  CHECK(canonical_table_text(merge_entries(parse_table_json(text, "round-trip"), nlohmann::json::object())) == text);
}

// 0: rejected with Error, 1: accepted.
int load(const std::string& text) {
  try {
    const nlohmann::json document = parse_table_json(text, "fuzz.json");
    use(validate_table(document, "fuzz.json"), document);
    return 1;
  } catch (const Error& e) {
    if (e.code() != ErrorCode::config_error) FAIL_CHECK("unexpected error code " << to_string(e.code()) << ": " << e.what());
    if (std::string(e.what()).rfind("fuzz.json: ", 0) != 0 && std::string(e.what()).rfind("merge: ", 0) != 0)
      FAIL_CHECK("message does not name the file: " << e.what());
    return 0;
  } catch (const std::exception& e) {
    FAIL_CHECK("not a sagejit::Error: " << e.what() << "\ninput: " << text);
    return 0;
  }
}

}  // namespace

TEST_CASE("every truncation of a valid table is rejected with Error") {
  const std::string text = test::example_table_text;
  REQUIRE(load(text) == 1);
  int accepted = 0;
  for (std::size_t length = 0; length < text.size(); ++length) accepted += load(text.substr(0, length));
  // Only prefixes that end after the final '}' (plus trailing whitespace) can be valid: there are none.
  CHECK(accepted == 0);
}

TEST_CASE("randomly mutated tables give Error or a valid table, never a crash") {
  std::mt19937& rng = test::logged_rng();
  const std::string base = test::example_table_text;
  const std::string alphabet = "{}[]\":,-.0123456789eE+ truefalsnul\\/xabc\n\x01\xff";
  auto random_index = [&](std::size_t size) { return std::uniform_int_distribution<std::size_t>(0, size - 1)(rng); };
  int rejected = 0, accepted = 0;
  for (int variant = 0; variant < 3000; ++variant) {
    std::string text = base;
    const int mutations = 1 + static_cast<int>(random_index(4));
    for (int m = 0; m < mutations && !text.empty(); ++m) {
      const std::size_t at = random_index(text.size());
      switch (random_index(6)) {
        case 0: text[at] = alphabet[random_index(alphabet.size())]; break;                     // replace
        case 1: text.insert(at, 1, alphabet[random_index(alphabet.size())]); break;              // insert
        case 2: text.erase(at, 1 + random_index(8)); break;                                      // delete
        case 3: text.insert(at, text.substr(random_index(text.size()), random_index(40))); break;  // duplicate
        case 4:                                                                                  // bump a digit
          if (std::isdigit(static_cast<unsigned char>(text[at]))) text[at] = static_cast<char>('0' + random_index(10));
          break;
        default: text[at] = static_cast<char>(random_index(256)); break;                         // any byte
      }
    }
    (load(text) ? accepted : rejected) += 1;
  }
  MESSAGE("mutants: " << rejected << " rejected, " << accepted << " accepted");
  CHECK(rejected > 0);
}
