// Issue 18, the cache's side: no directory another user controls is trusted (every component checked,
// "/" refused), waits are bounded and say whom they wait for, a FIFO or a directory named like an
// entry neither hangs nor wedges the cache, a read-only cache is read, an inspection creates nothing,
// relative XDG_CACHE_HOME/HOME are ignored, and verify rejects a payload that is no code object.
#include <doctest/doctest.h>

#include "skip_support.hpp"

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <optional>
#include <string>

#include "cache/cache_location.hpp"
#include "cache/code_cache.hpp"
#include "cache/file_lock.hpp"
#include "cache_test_support.hpp"
#include "core/error.hpp"
#include "core/log.hpp"
#include "dev/cache_admin.hpp"

#include "hardening_test_support.hpp"

using namespace sagejit;
namespace fs = std::filesystem;

namespace {

constexpr uid_t nobody = 65534;

using test::ScopedEnv;
using test::error_of;

}  // namespace

TEST_CASE("a cache below a parent that others may write is refused; a sticky one (/tmp) is accepted") {
  const test::QuietLog quiet;
  test::TempDir root;  // under /tmp: root-owned, 1777, sticky
  const fs::path parent = test::make_dir(root / "shared", 0777);
  CodeCache below_shared(test::settings_for(parent / "mine"));
  CHECK_FALSE(below_shared.active_user_dir().has_value());
  CHECK(below_shared.user_dir_problem().find("parent " + parent.string()) != std::string::npos);
  CHECK_FALSE(fs::exists(parent / "mine"));  // nothing created inside a dir someone else controls

  ::chmod(parent.c_str(), 01777);  // sticky: others cannot rename or remove our entries
  CodeCache below_sticky(test::settings_for(parent / "mine"));
  CHECK(below_sticky.active_user_dir().has_value());
}

TEST_CASE("a symlink on the way is followed only from a trusted directory, and its target is checked") {
  const test::QuietLog quiet;
  test::TempDir root;
  fs::create_directories(root / "real/cache");
  ::chmod((root / "real/cache").c_str(), 0700);
  // A link in our own dir to our own dir: fine.
  fs::create_symlink(root / "real", root / "link");
  CHECK(check_trusted_dir(root / "link/cache", TrustedOwners::self, "cache").problem.empty());
  // A link planted in a dir others may write (the parent/cache -> rootdir) is never followed.
  fs::create_directories(root / "open");
  ::chmod((root / "open").c_str(), 0777);
  fs::create_symlink(root / "real/cache", root / "open/cache");
  const DirCheck planted = check_trusted_dir(root / "open/cache", TrustedOwners::self, "cache");
  CHECK(planted.problem.find("writable by group or others") != std::string::npos);
  // The target of a link must pass too.
  ::chmod((root / "real/cache").c_str(), 0770);
  CHECK(check_trusted_dir(root / "link/cache", TrustedOwners::self, "cache").problem.find("writable") !=
        std::string::npos);
}

TEST_CASE("every parent is checked: one owned by another user is refused (root only)") {
  if (::geteuid() != 0) {
    SAGEJIT_SKIP("needs root to chown a directory to another uid");
    return;
  }
  const test::QuietLog quiet;
  test::TempDir root;
  fs::create_directories(root / "theirs/mine");
  ::chmod((root / "theirs").c_str(), 0755);
  ::chmod((root / "theirs/mine").c_str(), 0700);
  REQUIRE(::chown((root / "theirs").c_str(), nobody, nobody) == 0);
  CodeCache cache(test::settings_for(root / "theirs/mine"));
  CHECK_FALSE(cache.active_user_dir().has_value());
  CHECK(cache.user_dir_problem().find("owned by uid 65534") != std::string::npos);
}

TEST_CASE("missing parents are created with exactly the requested modes, whatever the umask") {
  test::TempDir root;
  const mode_t old_umask = ::umask(0);
  CodeCacheSettings settings = test::settings_for(root / "a/b/c");
  settings.user_dir_modes = DirModes{0755, 0700};
  CodeCache cache(settings);
  const bool usable = cache.active_user_dir().has_value();
  ::umask(old_umask);
  REQUIRE(usable);
  CHECK((fs::status(root / "a").permissions() & fs::perms::all) == static_cast<fs::perms>(0755));
  CHECK((fs::status(root / "a/b").permissions() & fs::perms::all) == static_cast<fs::perms>(0755));
  CHECK((fs::status(root / "a/b/c").permissions() & fs::perms::all) == static_cast<fs::perms>(0700));
}

TEST_CASE("the root directory is never a cache directory") {
  const test::QuietLog quiet;
  CodeCache cache(test::settings_for("/"));
  CHECK_FALSE(cache.active_user_dir().has_value());
  CHECK(cache.user_dir_problem().find("root directory") != std::string::npos);
}

TEST_CASE("an inspection (create_user_dir = false) creates no directory") {
  test::TempDir root;
  CodeCacheSettings settings = test::settings_for(root / "not/yet");
  settings.create_user_dir = false;
  CodeCache cache(settings);
  CHECK_FALSE(cache.active_user_dir().has_value());
  CHECK(cache.user_dir_problem().find("does not exist") != std::string::npos);
  CHECK(cache_stat(cache).user_entries == 0);
  CHECK_FALSE(fs::exists(root / "not"));
}

TEST_CASE("a relative XDG_CACHE_HOME or HOME is ignored (XDG base directory spec)") {
  ScopedEnv no_override("SAGEJIT_CACHE_DIR", std::nullopt);
  {
    ScopedEnv xdg("XDG_CACHE_HOME", "relative/cache");
    ScopedEnv home("HOME", "/home/someone");
    CHECK(default_user_cache_dir() == fs::path("/home/someone/.cache/sagejit"));
  }
  {
    ScopedEnv xdg("XDG_CACHE_HOME", std::nullopt);
    ScopedEnv home("HOME", "relative-home");
    CHECK_FALSE(default_user_cache_dir().has_value());
  }
  {
    ScopedEnv xdg("XDG_CACHE_HOME", "/var/cache/x");
    CHECK(default_user_cache_dir() == fs::path("/var/cache/x/sagejit"));
  }
}

TEST_CASE("a lock held by a hung process: the wait names its pid and gives up after the bound") {
  const test::QuietLog quiet;
  test::TempDir root;
  const fs::path dir = root / "cache";
  CodeCacheSettings settings = test::settings_for(dir);
  settings.lock_timeout = std::chrono::milliseconds(300);
  CodeCache cache(settings);
  REQUIRE(cache.active_user_dir().has_value());
  const CacheKey key = test::random_key();
  // flock locks belong to an open file description: this second one blocks the cache's like another process's.
  const FileLock holder(dir / "locks" / (key.hex() + ".lock"), std::chrono::seconds(1));
  REQUIRE(holder.held());
  int compiles = 0;
  const std::string message =
      error_of([&] { cache.get_or_compile(key, test::test_label(), test::counting_compile(compiles, test::random_bytes(64))); });
  CHECK(message.find(fmt::format("held by pid {}", ::getpid())) != std::string::npos);
  CHECK(message.find("SAGEJIT_LOCK_TIMEOUT") != std::string::npos);
  CHECK(compiles == 0);
}

TEST_CASE("SAGEJIT_LOCK_TIMEOUT must be a whole number of seconds") {
  ScopedEnv bad("SAGEJIT_LOCK_TIMEOUT", "soon");
  const std::string message = error_of([] { (void)CodeCacheSettings::from_environment(); });
  CHECK(message.find("SAGEJIT_LOCK_TIMEOUT=\"soon\"") != std::string::npos);
  ScopedEnv good("SAGEJIT_LOCK_TIMEOUT", "7");
  CHECK(CodeCacheSettings::from_environment().lock_timeout == std::chrono::seconds(7));
}

// A cache in a fresh private directory, the log quiet.
struct CacheOnDisk {
  const test::QuietLog quiet;
  const test::TempDir root;
  const fs::path dir = root / "cache";
  CodeCache cache{test::settings_for(dir)};
};

TEST_CASE_FIXTURE(CacheOnDisk, "a FIFO named like an entry neither hangs a lookup nor verify") {
  REQUIRE(cache.active_user_dir().has_value());
  test::CompiledEntry fixture(128);
  const fs::path entry = dir / entry_file_name(fixture.key, fixture.label);
  REQUIRE(::mkfifo(entry.c_str(), 0600) == 0);
  const VerifyReport report = cache_verify(cache, false);
  REQUIRE(report.bad.size() == 1);
  CHECK(report.bad[0].problem.find("FIFO") != std::string::npos);
  const CacheLookup lookup = cache.get_or_compile(fixture.key, fixture.label, fixture.compile);
  CHECK(lookup.hit == CacheHit::compiled);
  CHECK(fixture.compiles == 1);
  struct stat info {};
  REQUIRE(::lstat(entry.c_str(), &info) == 0);
  CHECK(S_ISREG(info.st_mode));  // the FIFO was replaced by the entry
}

TEST_CASE_FIXTURE(CacheOnDisk,
                  "a directory named like an entry is removed by verify --fix and by a lookup; the cache stays on disk") {
  REQUIRE(cache.active_user_dir().has_value());
  test::CompiledEntry first(128), second(128);
  const fs::path first_entry = dir / entry_file_name(first.key, first.label);
  fs::create_directories(first_entry / "inside");
  // A symlink inside must be removed as a link, never followed.
  test::write_bytes(root / "victim", test::random_bytes(16));
  fs::create_symlink(root / "victim", first_entry / "inside/link");
  const VerifyReport fixed = cache_verify(cache, true);
  REQUIRE(fixed.bad.size() == 1);
  CHECK(fixed.bad[0].removed);
  CHECK(fixed.removed == 1);
  CHECK_FALSE(fs::exists(first_entry));
  CHECK(fs::exists(root / "victim"));

  const fs::path second_entry = dir / entry_file_name(second.key, second.label);
  fs::create_directories(second_entry);
  CHECK(cache.get_or_compile(second.key, second.label, second.compile).hit == CacheHit::compiled);
  CHECK(cache.active_user_dir().has_value());  // not memory-only
  CHECK(fs::is_regular_file(second_entry));
}

TEST_CASE("an entry larger than the size cap is not stored, and says so") {
  test::TempDir root;
  CodeCacheSettings settings = test::settings_for(root / "cache");
  settings.max_bytes = 1;
  CodeCache cache(settings);
  test::StderrCapture capture(root / "stderr.txt");
  log::set_level(log::Level::warn);
  test::CompiledEntry fixture(256);
  CHECK(cache.get_or_compile(fixture.key, fixture.label, fixture.compile).hit == CacheHit::compiled);
  const std::string log = capture.finish();
  CHECK(test::entry_files(root / "cache").empty());
  CHECK(log.find("SAGEJIT_CACHE_MAX_SIZE") != std::string::npos);
}

TEST_CASE("verify rejects an entry whose checksums hold but whose payload is no code object of its target") {
  const test::QuietLog quiet;
  test::TempDir root;
  CodeCache cache(test::settings_for(root / "cache"));
  const CacheKey good = test::random_key(), foreign = test::random_key();
  (void)cache.get_or_compile(good, test::test_label(), [] { return test::code_object_bytes(256); });
  (void)cache.get_or_compile(foreign, test::test_label(), [] { return test::random_bytes(256); });
  const VerifyReport report = cache_verify(cache, false);
  CHECK(report.checked == 2);
  REQUIRE(report.bad.size() == 1);
  CHECK(report.bad[0].path.filename().string().find(foreign.hex()) != std::string::npos);
  CHECK(report.bad[0].problem.find("ELF") != std::string::npos);
}

TEST_CASE("a read-only cache (0500) with valid entries is read, not ignored (root: run as nobody)") {
  if (::geteuid() != 0) {
    SAGEJIT_SKIP("needs root to run a child as another user (root can write a 0500 dir)");
    return;
  }
  test::TempDir root;
  ::chmod(root.path().c_str(), 0755);  // nobody must reach the cache
  const fs::path dir = root / "cache";
  test::CompiledEntry fixture(256);
  {
    CodeCache filler(test::settings_for(dir));
    (void)filler.get_or_compile(fixture.key, fixture.label, fixture.compile);
  }
  fs::remove_all(dir / "locks");
  for (const auto& file : test::entry_files(dir)) REQUIRE(::chown(file.c_str(), nobody, nobody) == 0);
  REQUIRE(::chown(dir.c_str(), nobody, nobody) == 0);
  REQUIRE(::chmod(dir.c_str(), 0500) == 0);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    if (::setgid(nobody) != 0 || ::setuid(nobody) != 0) ::_exit(10);
    log::set_level(log::Level::off);
    CodeCache cache(test::settings_for(dir));
    if (!cache.active_user_dir()) ::_exit(11);
    if (cache.user_dir_writable()) ::_exit(12);
    int compiles = 0;
    const auto hit = cache.get_or_compile(fixture.key, fixture.label, test::counting_compile(compiles, {}));
    if (hit.hit != CacheHit::user || compiles != 0 || *hit.code != fixture.compiled) ::_exit(13);
    const auto missed = cache.get_or_compile(test::random_key(), fixture.label, test::counting_compile(compiles, test::random_bytes(8)));
    if (missed.hit != CacheHit::compiled || compiles != 1) ::_exit(14);
    ::_exit(0);
  }
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFEXITED(status));
  // 11: ignored as before the fix; 12: thought writable; 13: the entry was not read; 14: no compile.
  CHECK(WEXITSTATUS(status) == 0);
  CHECK(test::entry_files(dir).size() == 1);
}
