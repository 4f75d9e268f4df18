// Size cap and maintenance: LRU prune keeps the newest (a hit counts as use); stat, list, verify and
// clear as the sagejit-cache tool uses them.
#include <doctest/doctest.h>

#include <sys/stat.h>
#include <utime.h>

#include <ctime>
#include <string>

#include "cache/code_cache.hpp"
#include "cache_test_support.hpp"
#include "core/log.hpp"
#include "dev/cache_admin.hpp"

using namespace sagejit;
namespace fs = std::filesystem;

namespace {

void set_mtime(const fs::path& path, std::time_t when) {
  struct utimbuf times {when, when};
  REQUIRE(::utime(path.c_str(), &times) == 0);
}

struct Filled {
  std::vector<CacheKey> keys;  // oldest first
  std::vector<fs::path> files;
  std::uint64_t entry_size = 0;
};

// Publishes `count` entries of equal size and ages them: keys[0] oldest.
Filled fill(CodeCache& cache, const fs::path& dir, int count) {
  Filled filled;
  const std::time_t now = std::time(nullptr);
  for (int i = 0; i < count; ++i) {
    const CacheKey key = test::random_key();
    const auto payload = test::code_object_bytes(10000);
    (void)cache.get_or_compile(key, test::test_label(), [&] { return payload; });
    const fs::path file = dir / entry_file_name(key, test::test_label());
    set_mtime(file, now - 1000 + 10 * i);
    filled.keys.push_back(key);
    filled.files.push_back(file);
    filled.entry_size = fs::file_size(file);
  }
  return filled;
}

}  // namespace

TEST_CASE("LRU prune keeps the newest entries, and a hit makes an entry newest") {
  test::TempDir root;
  const fs::path dir = root / "cache";
  CodeCache cache(test::settings_for(dir));
  const Filled filled = fill(cache, dir, 6);

  // A disk hit from a fresh process (fresh memory) on the oldest entry touches it.
  CodeCache other(test::settings_for(dir));
  int compiles = 0;
  CHECK(other.get_or_compile(filled.keys[0], test::test_label(), test::counting_compile(compiles, test::random_bytes(1)))
            .hit == CacheHit::user);
  CHECK(compiles == 0);

  // Keep room for three entries: the touched one and the two newest survive.
  const PruneReport report = cache_prune(cache, 3 * filled.entry_size + filled.entry_size / 2);
  CHECK(report.removed == 3);
  CHECK(report.freed_bytes >= 3 * filled.entry_size - 100);
  CHECK(fs::exists(filled.files[0]));
  CHECK_FALSE(fs::exists(filled.files[1]));
  CHECK_FALSE(fs::exists(filled.files[2]));
  CHECK_FALSE(fs::exists(filled.files[3]));
  CHECK(fs::exists(filled.files[4]));
  CHECK(fs::exists(filled.files[5]));
  CHECK(cache_stat(cache).user_entries == 3);
}

TEST_CASE("publishing over the size cap prunes the oldest and keeps the new entry") {
  test::TempDir root;
  const fs::path dir = root / "cache";
  CodeCacheSettings settings = test::settings_for(dir);
  CodeCache filler(settings);
  const Filled filled = fill(filler, dir, 4);
  settings.max_bytes = 3 * filled.entry_size + filled.entry_size / 2;  // room for three
  CodeCache capped(settings);
  const CacheKey key = test::random_key();
  const auto payload = test::random_bytes(10000);
  CHECK(capped.get_or_compile(key, test::test_label(), [&] { return payload; }).hit == CacheHit::compiled);
  CHECK(fs::exists(dir / entry_file_name(key, test::test_label())));
  CHECK_FALSE(fs::exists(filled.files[0]));
  CHECK_FALSE(fs::exists(filled.files[1]));
  CHECK(fs::exists(filled.files[2]));
  CHECK(fs::exists(filled.files[3]));
  CHECK(cache_stat(capped).user_bytes <= settings.max_bytes);
}

TEST_CASE("stat, list, verify --fix and clear") {
  log::set_level(log::Level::off);
  test::TempDir root;
  const fs::path dir = root / "cache";
  CodeCache cache(test::settings_for(dir));
  const Filled filled = fill(cache, dir, 3);
  // Damage the middle entry and add a stale temp file from a dead writer.
  auto bytes = test::read_bytes(filled.files[1]);
  bytes[bytes.size() / 2] ^= std::byte{0x08};
  test::write_bytes(filled.files[1], bytes);
  set_mtime(filled.files[1], std::time(nullptr) - 990);  // keep its place in the age order
  test::write_bytes(dir / "tmp-999999-0000000000000000", test::random_bytes(100));
  set_mtime(dir / "tmp-999999-0000000000000000", std::time(nullptr) - 7200);

  const CacheStats stats = cache_stat(cache);
  CHECK(stats.user_entries == 3);
  CHECK(stats.temp_files == 1);
  std::uint64_t total = 0;
  for (const auto& file : filled.files) total += fs::file_size(file);
  CHECK(stats.user_bytes == total);
  CHECK(stats.user_dir_problem.empty());

  const auto entries = cache_list(cache);
  REQUIRE(entries.size() == 3);
  CHECK(entries[0].path == filled.files[2]);  // newest first
  CHECK(entries[0].valid);
  CHECK(entries[0].label.kernel == "probe");
  CHECK(entries[0].label.config == "block=128,scale=3");
  CHECK_FALSE(entries[1].valid);
  CHECK(entries[1].problem.find("checksum") != std::string::npos);

  const VerifyReport dry = cache_verify(cache, false);
  CHECK(dry.checked == 3);
  CHECK(dry.bad.size() == 1);
  CHECK(dry.removed == 0);
  CHECK(fs::exists(filled.files[1]));
  const VerifyReport fixed = cache_verify(cache, true);
  CHECK(fixed.bad.size() == 1);
  CHECK(fixed.removed == 2);  // the bad entry and the stale temp file
  CHECK_FALSE(fs::exists(filled.files[1]));
  CHECK(cache_stat(cache).temp_files == 0);

  CHECK(cache_clear(cache) == 2);
  CHECK(test::entry_files(dir).empty());
  CHECK(cache_stat(cache).user_entries == 0);
  log::set_level(log::Level::warn);
}
