#pragma once
// The files of one cache directory: listing entries and temp files, and pruning them oldest first.
// The runtime prunes the user dir after each publish (SAGEJIT_CACHE_MAX_SIZE); the cache admin verbs
// (dev/cache_admin.hpp) list, verify and clear through the same listing.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <vector>

namespace sagejit {

// A temp file older than this belongs to a writer that died (a live publish takes milliseconds).
inline constexpr std::int64_t stale_temp_seconds = 3600;

struct CacheDirFile {
  std::filesystem::path path;
  std::uint64_t size = 0;
  std::int64_t mtime_unix = 0;
};

struct CacheDirListing {
  std::vector<CacheDirFile> entries;  // *.sjco
  std::vector<CacheDirFile> temps;    // tmp-*
};

// Lists entries and temp files without following symlinks; a file vanishing meanwhile is skipped.
CacheDirListing scan_cache_dir(const std::filesystem::path& dir);

// unlink(); a directory named like an entry is removed with its contents, never through a symlink.
// True when the path is gone (removed now or already missing).
bool remove_cache_file(const std::filesystem::path& path);

struct PruneReport {
  std::size_t removed = 0;
  std::uint64_t freed_bytes = 0;
  std::uint64_t remaining_bytes = 0;
  std::size_t temp_removed = 0;
};

// Removes stale temp files, then entries least recently used first (by mtime: a hit touches its
// entry) until the entries total at most `max_bytes` (0 removes them all).
PruneReport prune_cache_dir(const std::filesystem::path& dir, std::uint64_t max_bytes);

}  // namespace sagejit
