#include "cache/code_cache.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstring>
#include <ctime>

#include "cache/cache_location.hpp"
#include "cache/entry_io.hpp"
#include "cache/file_lock.hpp"
#include "core/env.hpp"
#include "core/error.hpp"
#include "core/log.hpp"

namespace sagejit {
namespace fs = std::filesystem;
namespace {

// A temp file older than this belongs to a writer that died (a live publish takes milliseconds).
constexpr std::int64_t stale_temp_seconds = 3600;

double elapsed_ms(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - since).count();
}

struct DirFile {
  fs::path path;
  std::uint64_t size = 0;
  std::int64_t mtime_unix = 0;
};

struct DirListing {
  std::vector<DirFile> entries;  // *.sjco
  std::vector<DirFile> temps;    // tmp-*
};

// Lists entries and temp files without following symlinks; a file vanishing meanwhile is skipped.
DirListing scan(const fs::path& dir) {
  DirListing listing;
  std::error_code error;
  for (fs::directory_iterator it(dir, error), end; !error && it != end; it.increment(error)) {
    const std::string name = it->path().filename().string();
    const bool is_entry = name.ends_with(entry_suffix);
    const bool is_temp = name.starts_with(temp_file_prefix);
    if (!is_entry && !is_temp) continue;
    struct stat info {};
    if (::lstat(it->path().c_str(), &info) != 0) continue;
    DirFile file{it->path(), static_cast<std::uint64_t>(info.st_size), static_cast<std::int64_t>(info.st_mtime)};
    (is_entry ? listing.entries : listing.temps).push_back(std::move(file));
  }
  return listing;
}

bool remove_file(const fs::path& path) { return ::unlink(path.c_str()) == 0 || errno == ENOENT; }

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

std::uint64_t parse_byte_size(std::string_view text, std::string_view what) {
  auto invalid = [&]() -> std::uint64_t {
    fail(ErrorCode::invalid_argument,
         "{}=\"{}\" is not a size; use bytes or a number with K, M, G or T (binary units), e.g. 2G; 0 = no cap",
         what, text);
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
  if (auto size = env::get("SAGEJIT_CACHE_MAX_SIZE")) settings.max_bytes = parse_byte_size(*size, "SAGEJIT_CACHE_MAX_SIZE");
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
    const std::string problem = prepare_user_cache_dir(*settings_.user_dir);
    if (!problem.empty()) return go_memory_only(problem);
    if (::mkdir((*settings_.user_dir / "locks").c_str(), 0700) != 0 && errno != EEXIST)
      return go_memory_only(fmt::format("cannot create {}: {}", (*settings_.user_dir / "locks").string(),
                                        std::strerror(errno)));
    user_dir_usable_.store(true);
    log::debug("code-object cache: user dir {}", settings_.user_dir->string());
  });
  if (!user_dir_usable_.load()) return std::nullopt;
  return settings_.user_dir;
}

std::optional<fs::path> CodeCache::active_user_dir() const { return user_dir(); }

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
    remove_file(path);
  }
  return nullptr;
}

void CodeCache::publish(const fs::path& dir, const CacheKey& key, const EntryLabel& label,
                        const std::vector<std::byte>& code) {
  const auto bytes = encode_entry(key, label, code);
  try {
    publish_file_atomically(dir, entry_file_name(key, label), bytes, settings_.publish_midway);
  } catch (const Error& error) {
    go_memory_only(error.what());
    return;
  }
  if (settings_.max_bytes > 0) {
    const PruneReport report = prune_dir(dir, settings_.max_bytes);
    if (report.removed > 0)
      log::info("code-object cache: pruned {} old entries ({} bytes) to stay under {} bytes", report.removed,
                report.freed_bytes, settings_.max_bytes);
  }
}

std::optional<CacheLookup> CodeCache::find_prebuilt(const CacheKey& key, const EntryLabel& label) {
  const auto start = std::chrono::steady_clock::now();
  const auto slot = slot_for(key);
  std::lock_guard slot_lock(slot->mutex);
  if (slot->code) return CacheLookup{slot->code, CacheHit::memory, elapsed_ms(start)};
  const auto dir = system_dir();
  if (!dir) return std::nullopt;
  auto code = read_entry(*dir / entry_file_name(key, label), key, /*system=*/true, /*remove_bad=*/true);
  if (!code) return std::nullopt;
  slot->code = std::move(code);
  return CacheLookup{slot->code, CacheHit::system, elapsed_ms(start)};
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
  if (slot->code) return {slot->code, CacheHit::memory, elapsed_ms(start)};

  auto found = [&](CodeObject code, CacheHit hit) {
    slot->code = std::move(code);
    return CacheLookup{slot->code, hit, elapsed_ms(start)};
  };
  const std::string file_name = entry_file_name(key, label);
  if (const auto dir = system_dir())
    if (auto code = read_entry(*dir / file_name, key, /*system=*/true, /*remove_bad=*/true))
      return found(std::move(code), CacheHit::system);

  const auto dir = user_dir();
  std::optional<FileLock> process_lock;
  if (dir) {
    // Lock-free first look: the common case (another run already published it) costs one read.
    if (auto code = read_entry(*dir / file_name, key, false, /*remove_bad=*/false)) {
      ::utimensat(AT_FDCWD, (*dir / file_name).c_str(), nullptr, 0);  // LRU: a hit makes it newest
      return found(std::move(code), CacheHit::user);
    }
    ::mkdir((*dir / "locks").c_str(), 0700);  // again, in case `sagejit-cache clear` removed it
    process_lock.emplace(*dir / "locks" / (key.hex() + ".lock"));
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
  if (dir && user_dir_usable_.load()) publish(*dir, key, stored, *code);
  return found(std::move(code), CacheHit::compiled);
}

void CodeCache::evict(const CacheKey& key, const EntryLabel& label) {
  const auto slot = slot_for(key);
  {
    std::lock_guard lock(slot->mutex);
    slot->code.reset();
  }
  if (const auto dir = user_dir()) remove_file(*dir / entry_file_name(key, label));
}

PruneReport CodeCache::prune_dir(const fs::path& dir, std::uint64_t max_bytes) const {
  PruneReport report;
  DirListing listing = scan(dir);
  const auto now = static_cast<std::int64_t>(std::time(nullptr));
  for (const auto& temp : listing.temps)
    if (now - temp.mtime_unix > stale_temp_seconds && remove_file(temp.path)) ++report.temp_removed;
  std::uint64_t total = 0;
  for (const auto& entry : listing.entries) total += entry.size;
  // Oldest first; ties broken by name so concurrent pruners agree.
  std::sort(listing.entries.begin(), listing.entries.end(), [](const DirFile& a, const DirFile& b) {
    return a.mtime_unix != b.mtime_unix ? a.mtime_unix < b.mtime_unix : a.path < b.path;
  });
  for (const auto& entry : listing.entries) {
    if (total <= max_bytes) break;
    if (remove_file(entry.path)) {
      ++report.removed;
      report.freed_bytes += entry.size;
    }
    total -= entry.size;
  }
  report.remaining_bytes = total;
  return report;
}

CacheStats CodeCache::stat() const {
  CacheStats stats;
  stats.disk_enabled = settings_.user_dir.has_value() || settings_.system_dir.has_value();
  stats.max_bytes = settings_.max_bytes;
  stats.user_dir = settings_.user_dir;
  stats.system_dir = settings_.system_dir;
  if (const auto dir = user_dir()) {
    const DirListing listing = scan(*dir);
    stats.user_entries = listing.entries.size();
    for (const auto& entry : listing.entries) stats.user_bytes += entry.size;
    stats.temp_files = listing.temps.size();
  } else if (settings_.user_dir) {
    std::lock_guard lock(problem_mutex_);
    stats.user_dir_problem = user_dir_problem_;
  } else {
    stats.user_dir_problem = "disabled (SAGEJIT_DISABLE_CACHE or no HOME)";
  }
  if (const auto dir = system_dir()) {
    const DirListing listing = scan(*dir);
    stats.system_entries = listing.entries.size();
    for (const auto& entry : listing.entries) stats.system_bytes += entry.size;
  } else {
    stats.system_dir_problem = settings_.system_dir ? system_dir_problem_ : "disabled";
  }
  {
    std::lock_guard lock(slots_mutex_);
    for (const auto& [key, slot] : slots_) stats.memory_entries += slot->code ? 1 : 0;
  }
  return stats;
}

std::vector<CacheEntryInfo> CodeCache::list() const {
  std::vector<CacheEntryInfo> out;
  auto add = [&](const fs::path& dir, bool system) {
    std::vector<CacheEntryInfo> part;
    for (const auto& file : scan(dir).entries) {
      CacheEntryInfo info;
      info.path = file.path;
      info.system = system;
      info.size = file.size;
      info.mtime_unix = file.mtime_unix;
      const auto key = key_of_entry_file_name(file.path.filename().string());
      const ReadResult read = read_trusted_file(file.path, system ? TrustedOwners::self_or_root : TrustedOwners::self);
      if (!key) {
        info.problem = "file name does not end in -<32 hex digit key>.sjco";
      } else if (!read.bytes) {
        info.problem = read.missing ? "removed while listing" : read.problem;
      } else {
        EntryCheck check = decode_entry(*read.bytes, key);
        info.valid = check.entry.has_value();
        info.problem = std::move(check.problem);
        if (check.entry) info.label = std::move(check.entry->label);
      }
      part.push_back(std::move(info));
    }
    std::sort(part.begin(), part.end(), [](const auto& a, const auto& b) {
      return a.mtime_unix != b.mtime_unix ? a.mtime_unix > b.mtime_unix : a.path < b.path;
    });
    out.insert(out.end(), part.begin(), part.end());
  };
  if (const auto dir = user_dir()) add(*dir, false);
  if (const auto dir = system_dir()) add(*dir, true);
  return out;
}

VerifyReport CodeCache::verify(bool fix) {
  VerifyReport report;
  for (auto& entry : list()) {
    ++report.checked;
    if (entry.valid) continue;
    if (fix && !entry.system && remove_file(entry.path)) ++report.removed;
    report.bad.push_back(std::move(entry));
  }
  if (const auto dir = user_dir(); fix && dir) {
    const auto now = static_cast<std::int64_t>(std::time(nullptr));
    for (const auto& temp : scan(*dir).temps)
      if (now - temp.mtime_unix > stale_temp_seconds && remove_file(temp.path)) ++report.removed;
  }
  return report;
}

PruneReport CodeCache::prune(std::uint64_t max_bytes) {
  const auto dir = user_dir();
  if (!dir) return {};
  return prune_dir(*dir, max_bytes);
}

std::size_t CodeCache::clear() {
  const auto dir = user_dir();
  if (!dir) return 0;
  std::size_t removed = 0;
  const DirListing listing = scan(*dir);
  for (const auto* files : {&listing.entries, &listing.temps})
    for (const auto& file : *files) removed += remove_file(file.path) ? 1 : 0;
  std::error_code error;
  for (fs::directory_iterator it(*dir / "locks", error), end; !error && it != end; it.increment(error))
    if (it->path().extension() == ".lock") remove_file(it->path());
  return removed;
}

}  // namespace sagejit
