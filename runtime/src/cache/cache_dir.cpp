#include "cache/cache_dir.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <ctime>
#include <string>
#include <system_error>

#include "cache/cache_entry.hpp"
#include "cache/entry_io.hpp"
#include "platform/safe_file.hpp"

namespace sagejit {
namespace fs = std::filesystem;

CacheDirListing scan_cache_dir(const fs::path& dir) {
  CacheDirListing listing;
  std::error_code error;
  for (fs::directory_iterator it(dir, error), end; !error && it != end; it.increment(error)) {
    const std::string name = it->path().filename().string();
    const bool is_entry = name.ends_with(entry_suffix);
    const bool is_temp = name.starts_with(temp_file_prefix);
    if (!is_entry && !is_temp) continue;
    struct stat info {};
    if (::lstat(it->path().c_str(), &info) != 0) continue;
    CacheDirFile file{it->path(), static_cast<std::uint64_t>(info.st_size), static_cast<std::int64_t>(info.st_mtime)};
    (is_entry ? listing.entries : listing.temps).push_back(std::move(file));
  }
  return listing;
}

bool remove_cache_file(const fs::path& path) {
  if (::unlink(path.c_str()) == 0 || errno == ENOENT) return true;
  // A directory named like an entry (unlink gives EISDIR, or EPERM on some systems) would block
  // every publish of its key: remove it, without following any symlink inside.
  std::string problem;
  return (errno == EISDIR || errno == EPERM) && remove_tree(path, problem);
}

PruneReport prune_cache_dir(const fs::path& dir, std::uint64_t max_bytes) {
  PruneReport report;
  CacheDirListing listing = scan_cache_dir(dir);
  const auto now = static_cast<std::int64_t>(std::time(nullptr));
  for (const auto& temp : listing.temps)
    if (now - temp.mtime_unix > stale_temp_seconds && remove_cache_file(temp.path)) ++report.temp_removed;
  std::uint64_t total = 0;
  for (const auto& entry : listing.entries) total += entry.size;
  // Oldest first; ties broken by name so concurrent pruners agree.
  std::sort(listing.entries.begin(), listing.entries.end(), [](const CacheDirFile& a, const CacheDirFile& b) {
    return a.mtime_unix != b.mtime_unix ? a.mtime_unix < b.mtime_unix : a.path < b.path;
  });
  for (const auto& entry : listing.entries) {
    if (total <= max_bytes) break;
    if (remove_cache_file(entry.path)) {
      ++report.removed;
      report.freed_bytes += entry.size;
    }
    total -= entry.size;
  }
  report.remaining_bytes = total;
  return report;
}

}  // namespace sagejit
