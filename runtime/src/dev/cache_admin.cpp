#include "dev/cache_admin.hpp"

#include <algorithm>
#include <ctime>
#include <system_error>

#include <fmt/format.h>

#include "cache/entry_io.hpp"
#include "compiler/code_object_check.hpp"
#include "core/target.hpp"

namespace sagejit {
namespace fs = std::filesystem;

CacheStats cache_stat(const CodeCache& cache) {
  const CodeCacheSettings& settings = cache.settings();
  CacheStats stats;
  stats.disk_enabled = settings.user_dir.has_value() || settings.system_dir.has_value();
  stats.max_bytes = settings.max_bytes;
  stats.user_dir = settings.user_dir;
  stats.system_dir = settings.system_dir;
  if (const auto dir = cache.active_user_dir()) {
    const CacheDirListing listing = scan_cache_dir(*dir);
    stats.user_entries = listing.entries.size();
    for (const auto& entry : listing.entries) stats.user_bytes += entry.size;
    stats.temp_files = listing.temps.size();
  } else {
    stats.user_dir_problem = cache.user_dir_problem();
  }
  if (const auto dir = cache.active_system_dir()) {
    const CacheDirListing listing = scan_cache_dir(*dir);
    stats.system_entries = listing.entries.size();
    for (const auto& entry : listing.entries) stats.system_bytes += entry.size;
  } else {
    stats.system_dir_problem = cache.system_dir_problem();
  }
  stats.memory_entries = cache.memory_entries();
  return stats;
}

void check_cache_entry(CacheEntryInfo& info) {
  const auto key = key_of_entry_file_name(info.path.filename().string());
  const ReadResult read = read_trusted_file(info.path, info.system ? TrustedOwners::self_or_root : TrustedOwners::self);
  if (!key) {
    info.problem = "file name does not end in -<32 hex digit key>.sjco";
  } else if (!read.bytes) {
    info.problem = read.missing ? "removed while listing" : read.problem;
  } else {
    EntryCheck check = decode_entry(*read.bytes, key);
    info.valid = check.entry.has_value();
    info.problem = std::move(check.problem);
    if (check.entry) {
      info.label = std::move(check.entry->label);
      // Sound checksums over a payload that is no code object of its target are still a bad entry.
      const auto target = try_parse_target(info.label.target);
      info.problem = target ? code_object_problem(check.entry->payload, *target)
                            : fmt::format("metadata names no valid target (\"{}\")", info.label.target);
      info.valid = info.problem.empty();
    }
  }
}

std::vector<CacheEntryInfo> cache_list(const CodeCache& cache) {
  std::vector<CacheEntryInfo> out;
  auto add = [&](const fs::path& dir, bool system) {
    std::vector<CacheEntryInfo> part;
    for (const auto& file : scan_cache_dir(dir).entries) {
      CacheEntryInfo info;
      info.path = file.path;
      info.system = system;
      info.size = file.size;
      info.mtime_unix = file.mtime_unix;
      check_cache_entry(info);
      part.push_back(std::move(info));
    }
    std::sort(part.begin(), part.end(), [](const auto& a, const auto& b) {
      return a.mtime_unix != b.mtime_unix ? a.mtime_unix > b.mtime_unix : a.path < b.path;
    });
    out.insert(out.end(), part.begin(), part.end());
  };
  if (const auto dir = cache.active_user_dir()) add(*dir, false);
  if (const auto dir = cache.active_system_dir()) add(*dir, true);
  return out;
}

VerifyReport cache_verify(const CodeCache& cache, bool fix) {
  VerifyReport report;
  for (auto& entry : cache_list(cache)) {
    ++report.checked;
    if (entry.valid) continue;
    if (fix && !entry.system) {
      if (remove_cache_file(entry.path)) {
        ++report.removed;
        entry.removed = true;
      } else {
        entry.problem += " (could not remove it)";
      }
    }
    report.bad.push_back(std::move(entry));
  }
  if (const auto dir = cache.active_user_dir(); fix && dir) {
    const auto now = static_cast<std::int64_t>(std::time(nullptr));
    for (const auto& temp : scan_cache_dir(*dir).temps)
      if (now - temp.mtime_unix > stale_temp_seconds && remove_cache_file(temp.path)) ++report.removed;
  }
  return report;
}

PruneReport cache_prune(const CodeCache& cache, std::uint64_t max_bytes) {
  const auto dir = cache.active_user_dir();
  if (!dir) return {};
  return prune_cache_dir(*dir, max_bytes);
}

std::size_t cache_clear(const CodeCache& cache) {
  const auto dir = cache.active_user_dir();
  if (!dir) return 0;
  std::size_t removed = 0;
  const CacheDirListing listing = scan_cache_dir(*dir);
  for (const auto* files : {&listing.entries, &listing.temps})
    for (const auto& file : *files) removed += remove_cache_file(file.path) ? 1 : 0;
  std::error_code error;
  for (fs::directory_iterator it(*dir / "locks", error), end; !error && it != end; it.increment(error))
    if (it->path().extension() == ".lock") remove_cache_file(it->path());
  return removed;
}

}  // namespace sagejit
