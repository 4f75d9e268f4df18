// Entry validation: corrupt, truncated, wrong-version, foreign and wrong-key files are rebuilt, never
// fatal; the system cache is searched first and its entries are validated and must match their key.
#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <functional>
#include <string>

#include "cache/cache_entry.hpp"
#include "cache/code_cache.hpp"
#include "cache_test_support.hpp"
#include "core/log.hpp"

using namespace sagejit;
namespace fs = std::filesystem;

TEST_CASE("an entry round-trips and every damaged variant is rejected with a reason") {
  const CacheKey key = test::random_key();
  const auto payload = test::random_bytes(1000 + test::rng()() % 1000);
  EntryLabel label = test::test_label();
  label.compile_ms = 12.5;
  const auto bytes = encode_entry(key, label, payload);
  const EntryCheck good = decode_entry(bytes, key);
  REQUIRE(good.entry.has_value());
  CHECK(good.entry->payload == payload);
  CHECK(good.entry->label.kernel == label.kernel);
  CHECK(good.entry->label.config == label.config);
  CHECK(good.entry->label.compile_ms == doctest::Approx(12.5));

  auto flipped = bytes;
  flipped[bytes.size() - 1 - test::rng()() % payload.size()] ^= std::byte{0x10};
  CHECK(decode_entry(flipped, key).problem.find("payload checksum") != std::string::npos);
  auto metadata_flipped = bytes;
  metadata_flipped[entry_header_size + 2] ^= std::byte{0x01};
  CHECK(decode_entry(metadata_flipped, key).problem.find("header checksum") != std::string::npos);
  CHECK(decode_entry(std::span(bytes).first(bytes.size() - 7), key).problem.find("length") != std::string::npos);
  CHECK(decode_entry(std::span(bytes).first(20), key).problem.find("truncated") != std::string::npos);
  CHECK(decode_entry(test::random_bytes(bytes.size()), key).problem.find("magic") != std::string::npos);
  CHECK(decode_entry(encode_entry(key, label, payload, cache_format_version + 1), key).problem.find("version") !=
        std::string::npos);
  CHECK(decode_entry(bytes, test::random_key()).problem.find("key") != std::string::npos);
  CHECK(decode_entry(std::vector<std::byte>{}, key).problem.find("truncated") != std::string::npos);
}

TEST_CASE("entry names are readable, path-safe and carry the key") {
  const CacheKey key = test::random_key();
  EntryLabel label = test::test_label("../../evil kernel");
  const std::string name = entry_file_name(key, label);
  CHECK(name.find('/') == std::string::npos);
  CHECK(name.find(' ') == std::string::npos);
  CHECK(name.ends_with(key.hex() + ".sjco"));
  CHECK(key_of_entry_file_name(name) == key);
  CHECK_FALSE(key_of_entry_file_name("notes.txt").has_value());
  CHECK(entry_file_name(key, test::test_label()) == "probe-block_128_scale_3-gfx1201_xnack_-" + key.hex() + ".sjco");
}

TEST_CASE("corrupt, truncated, wrong-version, foreign and wrong-key entries are rebuilt, not fatal") {
  const test::QuietLog quiet;  // the warnings are expected here
  test::TempDir root;
  test::CompiledEntry fixture(4096);
  auto& [key, label, payload, compiles, compile] = fixture;
  {  // populate
    CodeCache cache(test::settings_for(root.path()));
    CHECK(cache.get_or_compile(key, label, compile).hit == CacheHit::compiled);
  }
  const fs::path entry = root / entry_file_name(key, label);
  const auto good = test::read_bytes(entry);
  REQUIRE(good.size() > entry_header_size);

  const std::vector<std::pair<const char*, std::function<std::vector<std::byte>()>>> damages{
      {"corrupt payload byte",
       [&] {
         auto bytes = good;
         bytes[entry_header_size + 100 + test::rng()() % 1000] ^= std::byte{0x40};
         return bytes;
       }},
      {"truncated", [&] { return std::vector<std::byte>(good.begin(), good.begin() + good.size() / 2); }},
      {"empty", [&] { return std::vector<std::byte>{}; }},
      {"wrong format version", [&] { return encode_entry(key, label, payload, cache_format_version + 7); }},
      {"foreign file", [&] { return test::random_bytes(good.size()); }},
      {"another key's entry", [&] { return encode_entry(test::random_key(), label, payload); }},
  };
  for (const auto& [what, damage] : damages) {
    INFO("damage: " << what);
    test::write_bytes(entry, damage());
    ::chmod(entry.c_str(), 0600);
    CodeCache cache(test::settings_for(root.path()));  // fresh memory, warm (damaged) disk
    const int before = compiles;
    const CacheLookup lookup = cache.get_or_compile(key, label, compile);
    CHECK(lookup.hit == CacheHit::compiled);
    CHECK(compiles == before + 1);
    CHECK(*lookup.code == payload);
    // The rebuilt entry replaced the bad one and is served from disk next time.
    CHECK(decode_entry(test::read_bytes(entry), key).entry.has_value());
    CodeCache again(test::settings_for(root.path()));
    CHECK(again.get_or_compile(key, label, compile).hit == CacheHit::user);
    CHECK(compiles == before + 1);
  }
}

TEST_CASE("the system cache is searched first, validated, and must match the key") {
  const test::QuietLog quiet;
  test::TempDir root;
  const fs::path system = test::make_dir(root / "system", 0755);
  test::CompiledEntry fixture(555);
  auto& [key, label, compiled_payload, compiles, compile] = fixture;
  const auto system_payload = test::random_bytes(777);
  const fs::path entry = system / entry_file_name(key, label);
  test::write_bytes(entry, encode_entry(key, label, system_payload));
  ::chmod(entry.c_str(), 0644);

  CodeCacheSettings settings = test::settings_for(root / "user");
  settings.system_dir = system;
  {
    CodeCache cache(settings);
    const CacheLookup lookup = cache.get_or_compile(key, label, compile);
    CHECK(lookup.hit == CacheHit::system);
    CHECK(*lookup.code == system_payload);
    CHECK(compiles == 0);
    CHECK(cache.get_or_compile(key, label, compile).hit == CacheHit::memory);
    CHECK((!fs::exists(root / "user") || test::entry_files(root / "user").empty()));  // a system hit is not copied
  }
  SUBCASE("an entry under this key's name holding another key is ignored, never removed") {
    test::write_bytes(entry, encode_entry(test::random_key(), label, system_payload));
  }
  SUBCASE("a corrupt system entry is ignored, never removed") {
    auto bytes = encode_entry(key, label, system_payload);
    bytes.back() ^= std::byte{1};
    test::write_bytes(entry, bytes);
  }
  SUBCASE("a system entry writable by others is refused") {
    test::write_bytes(entry, encode_entry(key, label, system_payload));
    ::chmod(entry.c_str(), 0666);
  }
  SUBCASE("a system dir writable by others is refused") {
    test::write_bytes(entry, encode_entry(key, label, system_payload));
    ::chmod(system.c_str(), 0777);
  }
  CodeCache cache(settings);
  const CacheLookup lookup = cache.get_or_compile(key, label, compile);
  CHECK(lookup.hit == CacheHit::compiled);
  CHECK(*lookup.code == compiled_payload);
  CHECK(compiles == 1);
  CHECK(fs::exists(entry));
}
