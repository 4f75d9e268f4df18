#pragma once
// The cache admin verbs of `sagejit-cache` (stat, list, verify, prune, clear) over a CodeCache's
// directories. A host application never needs them: they live in the dev library, apart from the
// runtime's lookup/compile/publish path (cache/code_cache.hpp).
//
//   CodeCache& cache = code_cache();
//   const CacheStats stats = cache_stat(cache);
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "cache/cache_dir.hpp"
#include "cache/cache_entry.hpp"
#include "cache/code_cache.hpp"

namespace sagejit {

struct CacheEntryInfo {
  std::filesystem::path path;
  bool system = false;  // in the read-only system dir
  std::uint64_t size = 0;
  std::int64_t mtime_unix = 0;
  bool valid = false;
  std::string problem;  // why not valid
  bool removed = false; // cache_verify with fix: it was removed
  EntryLabel label;     // from the entry's metadata when valid
};

struct CacheStats {
  bool disk_enabled = false;
  std::optional<std::filesystem::path> user_dir;
  std::string user_dir_problem;  // empty when the user dir is in use
  std::optional<std::filesystem::path> system_dir;
  std::string system_dir_problem;  // empty when the system dir is searched
  std::size_t user_entries = 0;
  std::uint64_t user_bytes = 0;
  std::size_t system_entries = 0;
  std::uint64_t system_bytes = 0;
  std::size_t temp_files = 0;  // left by writers that died mid-publish (removed by prune/verify --fix)
  std::uint64_t max_bytes = 0;
  std::size_t memory_entries = 0;
};

struct VerifyReport {
  std::size_t checked = 0;
  std::vector<CacheEntryInfo> bad;  // invalid entries (user and system)
  std::size_t removed = 0;          // with fix: bad user entries and stale temp files removed
};

CacheStats cache_stat(const CodeCache& cache);
// Reads and checks the entry at info.path (in the system dir when info.system): sets valid, problem
// and label, as `verify` does (header, key of its file name, checksums, a code object of its target).
void check_cache_entry(CacheEntryInfo& info);
// User then system entries, newest first; every entry is read and checked.
std::vector<CacheEntryInfo> cache_list(const CodeCache& cache);
// Checks every entry; with `fix`, removes the bad user entries and stale temp files.
VerifyReport cache_verify(const CodeCache& cache, bool fix);
// LRU by mtime (a hit touches its entry) down to `max_bytes`; 0 = remove all. Nothing without a user dir.
PruneReport cache_prune(const CodeCache& cache, std::uint64_t max_bytes);
// Removes every user-dir entry, temp and lock file; returns the entries and temp files removed.
std::size_t cache_clear(const CodeCache& cache);

}  // namespace sagejit
