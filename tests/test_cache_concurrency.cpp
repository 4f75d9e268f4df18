// Concurrency: 16 threads on one key compile once; 8 processes on one empty cache dir compile each key
// once and all succeed; a writer killed (SIGKILL) mid-publish leaves nothing that validates wrongly
// and the next run rebuilds.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <map>
#include <thread>

#include "cache/code_cache.hpp"
#include "cache_test_support.hpp"
#include "core/log.hpp"
#include "dev/cache_admin.hpp"

using namespace sagejit;
namespace fs = std::filesystem;

namespace {

// The payload a fake compile of `key` produces: deterministic per key and per test run.
std::vector<std::byte> payload_for(const CacheKey& key, std::uint64_t salt) {
  std::mt19937_64 generator(salt ^ CacheKeyHash{}(key));
  std::vector<std::byte> bytes(2048 + generator() % 2048);
  for (auto& byte : bytes) byte = static_cast<std::byte>(generator() & 0xff);
  return bytes;
}

// Appends one line per compile with O_APPEND, so lines from many processes never interleave.
void record_compile(const fs::path& journal, const CacheKey& key) {
  const int fd = ::open(journal.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
  const std::string line = fmt::format("{} {}\n", ::getpid(), key.hex());
  const ssize_t written = ::write(fd, line.data(), line.size());
  (void)written;
  ::close(fd);
}

std::map<std::string, int> compiles_per_key(const fs::path& journal) {
  std::map<std::string, int> counts;
  std::ifstream in(journal);
  std::string pid, key;
  while (in >> pid >> key) ++counts[key];
  return counts;
}

}  // namespace

TEST_CASE("16 threads asking for one key compile it once and all get it") {
  test::TempDir root;
  CodeCache cache(test::settings_for(root / "cache"));
  const CacheKey key = test::random_key();
  const auto payload = test::random_bytes(5000);
  std::atomic<int> compiles{0};
  std::atomic<int> ready{0};
  std::vector<CacheLookup> results(16);
  std::vector<std::thread> threads;
  for (int t = 0; t < 16; ++t)
    threads.emplace_back([&, t] {
      ++ready;
      while (ready.load() < 16) std::this_thread::yield();  // start together
      results[t] = cache.get_or_compile(key, test::test_label(), [&] {
        ++compiles;
        std::this_thread::sleep_for(std::chrono::milliseconds(30));  // widen the race window
        return payload;
      });
    });
  for (auto& thread : threads) thread.join();
  CHECK(compiles.load() == 1);
  int compiled = 0;
  for (const auto& result : results) {
    REQUIRE(result.code);
    CHECK(*result.code == payload);
    compiled += result.hit == CacheHit::compiled ? 1 : 0;
    CHECK(result.code == results[0].code);  // one shared object
  }
  CHECK(compiled == 1);
  CHECK(test::entry_files(root / "cache").size() == 1);
}

TEST_CASE("8 processes on one empty cache dir compile each key once and all succeed") {
  test::TempDir root;
  const fs::path dir = root / "cache";
  const fs::path journal = root / "compiles.txt";
  const std::uint64_t salt = test::rng()();
  std::vector<CacheKey> keys;
  for (int k = 0; k < 3; ++k) keys.push_back(test::random_key());

  std::vector<pid_t> children;
  for (int p = 0; p < 8; ++p) {
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      int failures = 0;
      try {
        CodeCache cache(test::settings_for(dir));
        for (std::size_t k = 0; k < keys.size(); ++k) {
          const CacheKey& key = keys[(k + static_cast<std::size_t>(p)) % keys.size()];  // different orders
          const auto lookup = cache.get_or_compile(key, test::test_label(), [&] {
            record_compile(journal, key);
            std::this_thread::sleep_for(std::chrono::milliseconds(40));
            return payload_for(key, salt);
          });
          failures += *lookup.code == payload_for(key, salt) ? 0 : 1;
        }
      } catch (...) {
        failures = 100;
      }
      ::_exit(failures);
    }
    children.push_back(pid);
  }
  for (const pid_t pid : children) {
    int status = 0;
    REQUIRE(::waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
  }
  const auto counts = compiles_per_key(journal);
  CHECK(counts.size() == keys.size());
  for (const auto& key : keys) CHECK(counts.count(key.hex()) == 1);
  for (const auto& [key, count] : counts) {
    INFO("key " << key);
    CHECK(count == 1);
  }
  CHECK(test::entry_files(dir).size() == keys.size());
}

TEST_CASE("a writer killed mid-publish leaves nothing that validates wrongly; the next run rebuilds") {
  log::set_level(log::Level::off);
  test::TempDir root;
  const fs::path dir = root / "cache";
  const CacheKey key = test::random_key();
  const auto payload = test::code_object_bytes(64 * 1024);
  int ready_pipe[2];
  REQUIRE(::pipe(ready_pipe) == 0);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    CodeCacheSettings settings = test::settings_for(dir);
    settings.publish_midway = [&] {
      const char byte = 'r';
      (void)!::write(ready_pipe[1], &byte, 1);  // half the entry is on disk: tell the parent, then hang
      for (;;) ::pause();
    };
    CodeCache cache(settings);
    (void)cache.get_or_compile(key, test::test_label(), [&] { return payload; });
    ::_exit(3);  // never reached
  }
  ::close(ready_pipe[1]);
  char byte = 0;
  REQUIRE(::read(ready_pipe[0], &byte, 1) == 1);
  ::close(ready_pipe[0]);
  REQUIRE(::kill(pid, SIGKILL) == 0);
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  CHECK(WIFSIGNALED(status));

  // Only a temp file is left; nothing under an entry name.
  CHECK(test::entry_files(dir).empty());
  std::vector<fs::path> temps;
  for (const auto& item : fs::directory_iterator(dir))
    if (item.path().filename().string().starts_with("tmp-")) temps.push_back(item.path());
  REQUIRE(temps.size() == 1);
  CodeCache admin(test::settings_for(dir));
  CHECK(cache_list(admin).empty());
  CHECK(cache_stat(admin).temp_files == 1);
  // Worst case, a non-atomic writer: the half-written bytes under the entry name do not validate.
  fs::rename(temps[0], dir / entry_file_name(key, test::test_label()));
  const auto listed = cache_list(admin);
  REQUIRE(listed.size() == 1);
  CHECK_FALSE(listed[0].valid);

  // The next run compiles (the dead writer's lock was released by the kernel) and publishes.
  int compiles = 0;
  const auto lookup = admin.get_or_compile(key, test::test_label(), test::counting_compile(compiles, payload));
  CHECK(lookup.hit == CacheHit::compiled);
  CHECK(compiles == 1);
  CHECK(*lookup.code == payload);
  const auto entries = cache_list(admin);
  REQUIRE(entries.size() == 1);
  CHECK(entries[0].valid);
  CodeCache fresh(test::settings_for(dir));
  CHECK(fresh.get_or_compile(key, test::test_label(), [&] { return payload; }).hit == CacheHit::user);
  log::set_level(log::Level::warn);
}
