#include "cache/code_cache.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstring>
#include <ctime>

#include "cache/cache_dir.hpp"
#include "cache/cache_location.hpp"
#include "cache/entry_io.hpp"
#include "cache/file_lock.hpp"
#include "core/env.hpp"
#include "core/error.hpp"
#include "core/log.hpp"

namespace sagejit {
namespace fs = std::filesystem;
namespace {

double elapsed_ms(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - since).count();
}

}  // namespace

std::string_view to_string(CacheHit hit) noexcept {
  switch (hit) {
    case CacheHit::memory: return "memory";
    case CacheHit::system: return "system";
    case CacheHit::user: return "user";
    case CacheHit::compiled: return "compiled";
  }
  return "?";
}

std::uint64_t parse_byte_size(std::string_view text, std::string_view what, std::string_view zero_means) {
  auto invalid = [&]() -> std::uint64_t {
    fail(ErrorCode::invalid_argument,
         "{}=\"{}\" is not a size; use bytes or a number with K, M, G or T (binary units), e.g. 2G; {}", what, text,
         zero_means);
  };
  std::size_t digits = 0;
  std::uint64_t value = 0;
  while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits]))) {
    if (value > (UINT64_MAX - 9) / 10) return invalid();
    value = value * 10 + static_cast<std::uint64_t>(text[digits] - '0');
    ++digits;
  }
  if (digits == 0) return invalid();
  std::string unit(text.substr(digits));
  std::transform(unit.begin(), unit.end(), unit.begin(), [](unsigned char c) { return std::toupper(c); });
  if (unit.ends_with("IB")) unit.resize(unit.size() - 2);
  else if (unit.size() > 1 && unit.ends_with("B")) unit.pop_back();
  int shift = 0;
  if (unit.empty() || unit == "B") shift = 0;
  else if (unit == "K") shift = 10;
  else if (unit == "M") shift = 20;
  else if (unit == "G") shift = 30;
  else if (unit == "T") shift = 40;
  else return invalid();
  if (shift > 0 && value > (UINT64_MAX >> shift)) return invalid();
  return value << shift;
}

CodeCacheSettings CodeCacheSettings::from_environment() {
  CodeCacheSettings settings;
  if (auto size = env::get("SAGEJIT_CACHE_MAX_SIZE"))
    settings.max_bytes = parse_byte_size(*size, "SAGEJIT_CACHE_MAX_SIZE", "0 = no cap");
  settings.lock_timeout = env::seconds("SAGEJIT_LOCK_TIMEOUT", default_lock_timeout);
  if (env::flag("SAGEJIT_DISABLE_CACHE")) return settings;  // memory only
  settings.user_dir = default_user_cache_dir();
  settings.system_dir = default_system_cache_dir();
  return settings;
}

CodeCache::CodeCache(CodeCacheSettings settings) : settings_(std::move(settings)) {}

CodeCache& code_cache() {
  static CodeCache cache(CodeCacheSettings::from_environment());
  return cache;
}

void CodeCache::go_memory_only(const std::string& reason) const {
  {
    std::lock_guard lock(problem_mutex_);
    user_dir_problem_ = reason;
  }
  user_dir_usable_.store(false);
  if (!memory_only_warned_.exchange(true))
    log::warn("code-object cache: {}; keeping compiled kernels in memory only (set SAGEJIT_CACHE_DIR to a "
              "directory of your own, mode 0700)",
              reason);
}

std::optional<fs::path> CodeCache::user_dir() const {
  if (!settings_.user_dir) return std::nullopt;
  std::call_once(user_dir_once_, [this] {
    const std::optional<DirModes> create =
        settings_.create_user_dir ? std::optional<DirModes>(settings_.user_dir_modes) : std::nullopt;
    const DirCheck check = prepare_user_cache_dir(*settings_.user_dir, create);
    if (!check.problem.empty()) {
      if (!check.missing || settings_.create_user_dir) return go_memory_only(check.problem);
      std::lock_guard lock(problem_mutex_);  // not created by an inspection: nothing to warn about
      user_dir_problem_ = check.problem;
      return;
    }
    bool writable = check.writable;
    if (writable && settings_.create_user_dir && ::mkdir((*settings_.user_dir / "locks").c_str(), 0700) != 0 &&
        errno != EEXIST)
      writable = false;
    user_dir_writable_.store(writable);
    user_dir_usable_.store(true);
    if (!writable && settings_.create_user_dir)
      log::warn("code-object cache: {} is read-only: using its entries, keeping new code objects in memory",
                settings_.user_dir->string());
    log::debug("code-object cache: user dir {}{}", settings_.user_dir->string(), writable ? "" : " (read-only)");
  });
  if (!user_dir_usable_.load()) return std::nullopt;
  return settings_.user_dir;
}

std::optional<fs::path> CodeCache::active_user_dir() const { return user_dir(); }

bool CodeCache::user_dir_writable() const { return user_dir() && user_dir_writable_.load(); }

std::optional<fs::path> CodeCache::system_dir() const {
  if (!settings_.system_dir) return std::nullopt;
  std::call_once(system_dir_once_, [this] {
    system_dir_problem_ = check_system_cache_dir(*settings_.system_dir);
    if (system_dir_problem_.empty()) {
      log::debug("code-object cache: system dir {}", settings_.system_dir->string());
    } else {
      struct stat info {};
      // A missing system dir is normal (nothing precompiled was installed); anything else is worth a warning.
      if (::stat(settings_.system_dir->c_str(), &info) == 0)
        log::warn("code-object cache: not using the system cache: {}", system_dir_problem_);
      else
        log::debug("code-object cache: no system cache ({})", system_dir_problem_);
    }
  });
  if (!system_dir_problem_.empty()) return std::nullopt;
  return settings_.system_dir;
}

std::shared_ptr<CodeCache::Slot> CodeCache::slot_for(const CacheKey& key) {
  std::lock_guard lock(slots_mutex_);
  auto& slot = slots_[key];
  if (!slot) slot = std::make_shared<Slot>();
  return slot;
}

CodeObject CodeCache::read_entry(const fs::path& path, const CacheKey& key, bool system, bool remove_bad) const {
  const ReadResult read = read_trusted_file(path, system ? TrustedOwners::self_or_root : TrustedOwners::self);
  if (read.missing) return nullptr;
  std::string problem = read.problem;
  if (read.bytes) {
    EntryCheck check = decode_entry(*read.bytes, key);
    if (check.entry) return std::make_shared<const std::vector<std::byte>>(std::move(check.entry->payload));
    problem = std::move(check.problem);
  }
  if (!remove_bad) {
    log::debug("code-object cache: {}: {}", path.string(), problem);
    return nullptr;
  }
  if (system) {
    log::warn("code-object cache: ignoring system entry {}: {}", path.string(), problem);
  } else {
    log::warn("code-object cache: removing bad entry {}: {}; it will be rebuilt", path.string(), problem);
    remove_cache_file(path);
  }
  return nullptr;
}

void CodeCache::publish(const fs::path& dir, const CacheKey& key, const EntryLabel& label,
                        const std::vector<std::byte>& code) {
  const auto bytes = encode_entry(key, label, code);
  if (settings_.max_bytes > 0 && bytes.size() > settings_.max_bytes) {
    log::warn("code-object cache: not storing {} ({} bytes): larger than the cache cap of {} bytes "
              "(SAGEJIT_CACHE_MAX_SIZE)",
              entry_file_name(key, label), bytes.size(), settings_.max_bytes);
    return;
  }
  try {
    publish_file_atomically(dir, entry_file_name(key, label), bytes, settings_.publish_midway);
  } catch (const Error& error) {
    go_memory_only(error.what());
    return;
  }
  if (settings_.max_bytes > 0) {
    const PruneReport report = prune_cache_dir(dir, settings_.max_bytes);
    if (report.removed > 0)
      log::info("code-object cache: pruned {} old entries ({} bytes) to stay under {} bytes", report.removed,
                report.freed_bytes, settings_.max_bytes);
  }
}

std::optional<CacheLookup> CodeCache::memory_or_system(Slot& slot, const CacheKey& key, const EntryLabel& label,
                                                    std::chrono::steady_clock::time_point start) const {
  if (slot.code) return CacheLookup{slot.code, CacheHit::memory, elapsed_ms(start)};
  const auto dir = system_dir();
  if (!dir) return std::nullopt;
  auto code = read_entry(*dir / entry_file_name(key, label), key, /*system=*/true, /*remove_bad=*/true);
  if (!code) return std::nullopt;
  slot.code = std::move(code);
  return CacheLookup{slot.code, CacheHit::system, elapsed_ms(start)};
}

std::optional<CacheLookup> CodeCache::find_prebuilt(const CacheKey& key, const EntryLabel& label) {
  const auto start = std::chrono::steady_clock::now();
  const auto slot = slot_for(key);
  std::lock_guard slot_lock(slot->mutex);
  return memory_or_system(*slot, key, label, start);
}

std::vector<PrebuiltCompiler> CodeCache::prebuilt_compilers() const {
  const auto dir = system_dir();
  return dir ? read_prebuilt_manifest(*dir) : std::vector<PrebuiltCompiler>{};
}

CacheLookup CodeCache::get_or_compile(const CacheKey& key, const EntryLabel& label,
                                      const std::function<std::vector<std::byte>()>& compile) {
  const auto start = std::chrono::steady_clock::now();
  const auto slot = slot_for(key);
  std::lock_guard slot_lock(slot->mutex);  // other threads asking for this key wait here
  if (auto found = memory_or_system(*slot, key, label, start)) return *std::move(found);

  auto found = [&](CodeObject code, CacheHit hit) {
    slot->code = std::move(code);
    return CacheLookup{slot->code, hit, elapsed_ms(start)};
  };
  auto compile_in_memory = [&] { return found(std::make_shared<const std::vector<std::byte>>(compile()), CacheHit::compiled); };
  const std::string file_name = entry_file_name(key, label);

  const auto dir = user_dir();
  std::optional<FileLock> process_lock;
  if (dir) {
    // Lock-free first look: the common case (another run already published it) costs one read.
    if (auto code = read_entry(*dir / file_name, key, false, /*remove_bad=*/false)) {
      ::utimensat(AT_FDCWD, (*dir / file_name).c_str(), nullptr, 0);  // LRU: a hit makes it newest
      return found(std::move(code), CacheHit::user);
    }
    if (!user_dir_writable_.load()) return compile_in_memory();
    ::mkdir((*dir / "locks").c_str(), 0700);  // again, in case `sagejit-cache clear` removed it
    process_lock.emplace(*dir / "locks" / (key.hex() + ".lock"), settings_.lock_timeout);
    if (process_lock->timed_out()) fail(ErrorCode::cache_error, "code-object cache: {}", process_lock->error());
    if (!process_lock->held())
      log::warn("code-object cache: {}; compiling without cross-process exclusion", process_lock->error());
    // Re-check under the lock: another process may have compiled it while we waited. A bad entry is
    // removed here, where no writer of this key can be mid-publish.
    if (auto code = read_entry(*dir / file_name, key, false, /*remove_bad=*/true)) {
      ::utimensat(AT_FDCWD, (*dir / file_name).c_str(), nullptr, 0);
      return found(std::move(code), CacheHit::user);
    }
  }

  const auto compile_start = std::chrono::steady_clock::now();
  auto code = std::make_shared<const std::vector<std::byte>>(compile());
  EntryLabel stored = label;
  stored.compile_ms = elapsed_ms(compile_start);
  stored.created_unix = static_cast<std::int64_t>(std::time(nullptr));
  if (dir && user_dir_usable_.load() && user_dir_writable_.load()) publish(*dir, key, stored, *code);
  return found(std::move(code), CacheHit::compiled);
}

void CodeCache::evict(const CacheKey& key, const EntryLabel& label) {
  const auto slot = slot_for(key);
  {
    std::lock_guard lock(slot->mutex);
    slot->code.reset();
  }
  if (const auto dir = user_dir()) remove_cache_file(*dir / entry_file_name(key, label));
}

std::optional<fs::path> CodeCache::active_system_dir() const { return system_dir(); }

std::string CodeCache::user_dir_problem() const {
  if (user_dir()) return {};
  if (!settings_.user_dir) return "disabled (SAGEJIT_DISABLE_CACHE, or no absolute XDG_CACHE_HOME or HOME)";
  std::lock_guard lock(problem_mutex_);
  return user_dir_problem_;
}

std::string CodeCache::system_dir_problem() const {
  if (system_dir()) return {};
  return settings_.system_dir ? system_dir_problem_ : "disabled";
}

std::size_t CodeCache::memory_entries() const {
  std::lock_guard lock(slots_mutex_);
  std::size_t count = 0;
  for (const auto& [key, slot] : slots_) count += slot->code ? 1 : 0;
  return count;
}

}  // namespace sagejit
