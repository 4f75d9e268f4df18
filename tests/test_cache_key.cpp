// The cache key changes with each of its components and with nothing else (not the cache path).
#include <doctest/doctest.h>

#include <cstdlib>
#include <functional>
#include <set>
#include <string>

#include "cache/cache_key.hpp"
#include "cache/code_cache.hpp"
#include "cache_test_support.hpp"

using namespace sagejit;

namespace {

CacheKeyInputs random_inputs() {
  CacheKeyInputs inputs;
  inputs.source = test::random_text(200);
  inputs.options = {"-O3", "-DX=" + test::random_text(4), "--offload-arch=gfx1201"};
  inputs.target = "gfx1201:xnack-";
  inputs.compiler_identity = "hiprtc 5.2." + std::to_string(test::rng()() % 100000);
  inputs.runtime_version = "";
  inputs.environment = {{"HIPRTC_COMPILE_OPTIONS_APPEND", std::nullopt}};
  return inputs;
}

}  // namespace

TEST_CASE("every key component changes the key") {
  const CacheKeyInputs base = random_inputs();
  const CacheKey base_key = make_cache_key(base);
  CHECK(make_cache_key(base) == base_key);  // deterministic

  const std::vector<std::pair<const char*, std::function<void(CacheKeyInputs&)>>> changes{
      {"source", [](CacheKeyInputs& in) { in.source[in.source.size() / 2] ^= 1; }},
      {"source (header text appended)", [](CacheKeyInputs& in) { in.source += "\n"; }},
      {"option value", [](CacheKeyInputs& in) { in.options[1] += "1"; }},
      {"option added", [](CacheKeyInputs& in) { in.options.push_back("-ffast-math"); }},
      {"option order", [](CacheKeyInputs& in) { std::swap(in.options[0], in.options[2]); }},
      {"target arch", [](CacheKeyInputs& in) { in.target = "gfx1200:xnack-"; }},
      {"target feature suffix", [](CacheKeyInputs& in) { in.target = "gfx1201:xnack+"; }},
      {"compiler identity", [](CacheKeyInputs& in) { in.compiler_identity += ".1"; }},
      {"runtime version", [](CacheKeyInputs& in) { in.runtime_version = "HIP 6.4.1"; }},
      {"format version", [](CacheKeyInputs& in) { in.format_version += 1; }},
      {"env var set", [](CacheKeyInputs& in) { in.environment[0].second = "-O0"; }},
      {"env var set but empty vs unset", [](CacheKeyInputs& in) { in.environment[0].second = ""; }},
      {"env var added", [](CacheKeyInputs& in) { in.environment.emplace_back("OTHER", "1"); }},
      {"field boundary", [](CacheKeyInputs& in) {
         in.options[0] += in.options[1];
         in.options.erase(in.options.begin() + 1);
       }},
  };
  std::set<std::string> seen{base_key.hex()};
  for (const auto& [what, change] : changes) {
    CacheKeyInputs changed = base;
    change(changed);
    const std::string hex = make_cache_key(changed).hex();
    INFO("component: " << what);
    CHECK(hex != base_key.hex());
    CHECK(seen.insert(hex).second);  // every change gives a distinct key
  }
}

TEST_CASE("whitespace-only differences in options do not change the key") {
  CacheKeyInputs a = random_inputs();
  CacheKeyInputs b = a;
  b.options = {"  -O3 ", "", b.options[1] + "\t", "--offload-arch=gfx1201", " "};
  CHECK(make_cache_key(a) == make_cache_key(b));
  CHECK(normalise_options({"  -a   b ", "\t", "-c"}) == std::vector<std::string>{"-a b", "-c"});
}

TEST_CASE("key hex round-trips and rejects malformed text") {
  const CacheKey key = make_cache_key(random_inputs());
  CHECK(key.hex().size() == 32);
  CHECK(CacheKey::from_hex(key.hex()) == key);
  CHECK_FALSE(CacheKey::from_hex("xyz").has_value());
  CHECK_FALSE(CacheKey::from_hex(std::string(32, 'G')).has_value());
}

TEST_CASE("the cache path is not part of the key or of the entry name") {
  test::TempDir root;
  const CacheKey key = make_cache_key(random_inputs());
  const auto payload = test::random_bytes(300);
  for (const char* sub : {"one", "two/deeper"}) {
    CodeCache cache(test::settings_for(root / sub));
    const auto lookup = cache.get_or_compile(key, test::test_label(), [&] { return payload; });
    CHECK(lookup.hit == CacheHit::compiled);
  }
  const auto one = test::entry_files(root / "one");
  const auto two = test::entry_files(root / "two/deeper");
  REQUIRE(one.size() == 1);
  REQUIRE(two.size() == 1);
  CHECK(one[0].filename() == two[0].filename());
  const auto a = decode_entry(test::read_bytes(one[0]), key), b = decode_entry(test::read_bytes(two[0]), key);
  REQUIRE(a.entry.has_value());
  REQUIRE(b.entry.has_value());
  CHECK(a.entry->payload == payload);
  CHECK(b.entry->payload == payload);
  CHECK(one[0].filename().string().find(key.hex()) != std::string::npos);
}
