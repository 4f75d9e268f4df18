// A cache holds executable code: a dir writable by others or owned by another user is refused (memory
// only, one warning), entries likewise; the user dir is created 0700; an unwritable dir still works.
#include <doctest/doctest.h>

#include "skip_support.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <string>

#include "cache/code_cache.hpp"
#include "cache_test_support.hpp"
#include "core/error.hpp"
#include "core/log.hpp"

using namespace sagejit;
namespace fs = std::filesystem;

namespace {

// Runs a few lookups against `dir` and returns the stderr they produced; checks they all worked.
std::string lookups_on(const fs::path& dir, const fs::path& log_file) {
  log::set_level(log::Level::warn);
  test::StderrCapture capture(log_file);
  CodeCache cache(test::settings_for(dir));
  for (int i = 0; i < 3; ++i) {
    const auto payload = test::random_bytes(64 + i);
    const auto lookup = cache.get_or_compile(test::random_key(), test::test_label(), [&] { return payload; });
    CHECK(lookup.hit == CacheHit::compiled);
    CHECK(*lookup.code == payload);
  }
  CHECK_FALSE(cache.active_user_dir().has_value());
  return capture.finish();
}

}  // namespace

TEST_CASE("the user cache dir is created recursively with mode 0700") {
  test::TempDir root;
  const fs::path dir = root / "a/b/sagejit";
  CodeCache cache(test::settings_for(dir));
  const auto payload = test::random_bytes(100);
  CHECK(cache.get_or_compile(test::random_key(), test::test_label(), [&] { return payload; }).hit ==
        CacheHit::compiled);
  for (const fs::path& created : {root / "a", root / "a/b", dir}) {
    struct stat info {};
    REQUIRE(::stat(created.c_str(), &info) == 0);
    CHECK((info.st_mode & 0777) == 0700);
  }
  CHECK(test::entry_files(dir).size() == 1);
  struct stat info {};
  REQUIRE(::stat(test::entry_files(dir)[0].c_str(), &info) == 0);
  CHECK((info.st_mode & 0077) == 0);
}

TEST_CASE("a cache dir writable by others is refused: memory only, one warning") {
  test::TempDir root;
  const fs::path dir = root / "shared";
  fs::create_directories(dir);
  ::chmod(dir.c_str(), 0777);
  const std::string log = lookups_on(dir, root / "stderr.txt");
  CHECK(test::count_occurrences(log, "memory only") == 1);
  CHECK(log.find("writable by group or others") != std::string::npos);
  CHECK(test::entry_files(dir).empty());
}

TEST_CASE("a cache dir owned by another uid is refused") {
  if (::geteuid() != 0) {
    SAGEJIT_SKIP("needs root to chown a directory to another uid");
    return;
  }
  test::TempDir root;
  const fs::path dir = root / "theirs";
  fs::create_directories(dir);
  ::chmod(dir.c_str(), 0700);
  REQUIRE(::chown(dir.c_str(), 12345, 12345) == 0);
  const std::string log = lookups_on(dir, root / "stderr.txt");
  CHECK(test::count_occurrences(log, "memory only") == 1);
  CHECK(log.find("owned by uid 12345") != std::string::npos);
  CHECK(test::entry_files(dir).empty());
}

TEST_CASE("an unwritable cache dir works memory-only with one warning") {
  test::TempDir root;
  // A path below a regular file cannot be created, even by root (chmod alone does not stop root).
  test::write_bytes(root / "file", test::random_bytes(8));
  const std::string log = lookups_on(root / "file/cache", root / "stderr.txt");
  CHECK(test::count_occurrences(log, "memory only") == 1);
  CHECK(test::count_occurrences(log, "[sagejit") == 1);
}

TEST_CASE("an entry writable by others or owned by another uid is refused and rebuilt") {
  log::set_level(log::Level::off);
  test::TempDir root;
  test::CompiledEntry fixture(256);
  auto& [key, label, honest, compiles, compile] = fixture;
  const auto planted = test::random_bytes(256);
  {
    CodeCache cache(test::settings_for(root.path()));
    CHECK(cache.active_user_dir().has_value());
  }
  const fs::path entry = root / entry_file_name(key, label);
  // A well-formed entry with the right key: only its ownership/mode gives it away.
  test::write_bytes(entry, encode_entry(key, label, planted));
  SUBCASE("writable by others") { ::chmod(entry.c_str(), 0666); }
  SUBCASE("owned by another uid") {
    if (::geteuid() != 0) {
      SAGEJIT_SKIP("needs root to chown an entry to another uid");
      return;
    }
    ::chmod(entry.c_str(), 0600);
    REQUIRE(::chown(entry.c_str(), 12345, 12345) == 0);
  }
  SUBCASE("a symlink to an entry elsewhere") {
    const fs::path elsewhere = root / "elsewhere.bin";
    fs::rename(entry, elsewhere);
    fs::create_symlink(elsewhere, entry);
  }
  CodeCache cache(test::settings_for(root.path()));
  const CacheLookup lookup = cache.get_or_compile(key, label, compile);
  CHECK(lookup.hit == CacheHit::compiled);
  CHECK(*lookup.code == honest);
  CHECK(compiles == 1);
  struct stat info {};
  REQUIRE(::lstat(entry.c_str(), &info) == 0);
  CHECK(S_ISREG(info.st_mode));
  CHECK(info.st_uid == ::geteuid());
  CHECK((info.st_mode & 0077) == 0);
  log::set_level(log::Level::warn);
}

TEST_CASE("SAGEJIT_DISABLE_CACHE=1 keeps everything in memory") {
  test::TempDir root;
  ::setenv("SAGEJIT_CACHE_DIR", (root / "cache").c_str(), 1);
  ::setenv("SAGEJIT_DISABLE_CACHE", "1", 1);
  const CodeCacheSettings settings = CodeCacheSettings::from_environment();
  CHECK_FALSE(settings.user_dir.has_value());
  CHECK_FALSE(settings.system_dir.has_value());
  ::unsetenv("SAGEJIT_DISABLE_CACHE");
  const CodeCacheSettings enabled = CodeCacheSettings::from_environment();
  CHECK(enabled.user_dir == root / "cache");
  ::setenv("SAGEJIT_CACHE_MAX_SIZE", "3M", 1);
  CHECK(CodeCacheSettings::from_environment().max_bytes == 3u << 20);
  ::setenv("SAGEJIT_CACHE_MAX_SIZE", "lots", 1);
  CHECK_THROWS_AS(CodeCacheSettings::from_environment(), Error);
  ::unsetenv("SAGEJIT_CACHE_MAX_SIZE");
  ::unsetenv("SAGEJIT_CACHE_DIR");
  CodeCache cache(settings);
  const auto payload = test::random_bytes(32);
  const CacheKey key = test::random_key();
  CHECK(cache.get_or_compile(key, test::test_label(), [&] { return payload; }).hit == CacheHit::compiled);
  CHECK(cache.get_or_compile(key, test::test_label(), [&] { return payload; }).hit == CacheHit::memory);
  CHECK_FALSE(fs::exists(root / "cache"));
}

TEST_CASE("byte sizes parse with binary units and reject anything else") {
  CHECK(parse_byte_size("0", "X", "0 = no cap") == 0);
  CHECK(parse_byte_size("1536", "X", "0 = no cap") == 1536);
  CHECK(parse_byte_size("2G", "X", "0 = no cap") == (2ull << 30));
  CHECK(parse_byte_size("512MiB", "X", "0 = no cap") == (512ull << 20));
  CHECK(parse_byte_size("4k", "X", "0 = no cap") == 4096);
  for (const char* bad : {"", "G", "-1", "1.5G", "10X", "99999999999999999999"})
    CHECK_THROWS_AS(parse_byte_size(bad, "SAGEJIT_CACHE_MAX_SIZE", "0 = no cap"), Error);
}
