#pragma once
// The content-keyed code-object cache (docs/CACHE.md): memory, then the read-only system
// directory, then the user directory, then compile. One compile per key across threads (a per-key
// slot mutex) and across processes (a per-key flock, re-checked after acquiring; the wait is bounded
// by SAGEJIT_LOCK_TIMEOUT). Entries are published atomically and validated on every read; a bad one
// is logged, removed and rebuilt. Anything wrong with the directories degrades to memory-only with
// one warning, never an error; a read-only user dir is still read.
#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "cache/cache_entry.hpp"
#include "cache/cache_key.hpp"
#include "cache/cache_location.hpp"
#include "cache/prebuilt_manifest.hpp"

namespace sagejit {

enum class CacheHit { memory, system, user, compiled };
std::string_view to_string(CacheHit hit) noexcept;

using CodeObject = std::shared_ptr<const std::vector<std::byte>>;

inline constexpr std::uint64_t default_cache_max_bytes = std::uint64_t{1} << 30;

// "1073741824", "512K", "300M", "2G", "1T" (binary units, optional trailing "B"/"iB"). Throws
// Error(invalid_argument) naming `what`, the accepted forms and `zero_means` (what 0 does there:
// "0 = no cap" for SAGEJIT_CACHE_MAX_SIZE, "0 removes every entry" for prune --max-size).
std::uint64_t parse_byte_size(std::string_view text, std::string_view what, std::string_view zero_means);

inline constexpr std::chrono::seconds default_lock_timeout{900};

struct CodeCacheSettings {
  std::optional<std::filesystem::path> user_dir;    // nullopt: memory-only
  std::optional<std::filesystem::path> system_dir;  // nullopt: none
  std::uint64_t max_bytes = default_cache_max_bytes;  // user-dir cap; 0 = unlimited
  // false: never create the user dir or its locks/ (inspection: sagejit-cache, --dry-run); a missing
  // dir is then simply not in use.
  bool create_user_dir = true;
  DirModes user_dir_modes;  // modes of the user dir and the parents it creates
  // How long to wait for another process compiling the same key (SAGEJIT_LOCK_TIMEOUT).
  std::chrono::milliseconds lock_timeout = default_lock_timeout;
  // Tests only: runs after half of an entry is written to its temp file (to kill a writer mid-publish).
  std::function<void()> publish_midway;

  // From SAGEJIT_CACHE_DIR / XDG_CACHE_HOME / HOME, SAGEJIT_SYSTEM_CACHE_DIR, SAGEJIT_CACHE_MAX_SIZE,
  // SAGEJIT_LOCK_TIMEOUT and SAGEJIT_DISABLE_CACHE (which leaves both dirs unset).
  static CodeCacheSettings from_environment();
};

struct CacheLookup {
  CodeObject code;
  CacheHit hit = CacheHit::compiled;
  double ms = 0;  // time spent in get_or_compile, compile included
};

class CodeCache {
 public:
  explicit CodeCache(CodeCacheSettings settings);
  CodeCache(const CodeCache&) = delete;
  CodeCache& operator=(const CodeCache&) = delete;

  // Returns the code object of `key`, running `compile` only when no valid copy exists anywhere; of
  // the threads and processes asking for one key at once, one compiles and the others wait for it.
  // `label` names the entry (kernel, config, target, compiler). Exceptions from `compile` propagate
  // and leave nothing cached, so the next call tries again.
  CacheLookup get_or_compile(const CacheKey& key, const EntryLabel& label,
                             const std::function<std::vector<std::byte>()>& compile);

  // The code object of `key` when it is in memory or in the system dir, without compiling, locking
  // or touching the user dir: how a run finds code objects another compiler built ahead of time.
  std::optional<CacheLookup> find_prebuilt(const CacheKey& key, const EntryLabel& label);
  // The compilers that built the system dir's entries (cache/prebuilt_manifest.hpp); empty without
  // a usable system dir.
  std::vector<PrebuiltCompiler> prebuilt_compilers() const;
  // Forgets `key` in memory and removes its user-dir entry: for a code object the runtime rejected.
  void evict(const CacheKey& key, const EntryLabel& label);

  // The user dir when it is in use (exists, trusted), else nullopt (memory-only). A read-only one is
  // in use for reading: its entries are found, new code objects stay in memory.
  std::optional<std::filesystem::path> active_user_dir() const;
  // True when the active user dir takes new entries.
  bool user_dir_writable() const;
  // The system dir when it is searched (exists, trusted), else nullopt.
  std::optional<std::filesystem::path> active_system_dir() const;
  // Why a configured dir is not in use ("" when it is); for the cache admin verbs (dev/cache_admin.hpp).
  std::string user_dir_problem() const;
  std::string system_dir_problem() const;
  // Code objects held in memory.
  std::size_t memory_entries() const;
  const CodeCacheSettings& settings() const { return settings_; }

 private:
  struct Slot {
    std::mutex mutex;
    CodeObject code;
  };
  std::shared_ptr<Slot> slot_for(const CacheKey& key);
  // The code object of `key` from memory or the read-only system dir (the caller holds slot's mutex).
  std::optional<CacheLookup> memory_or_system(Slot& slot, const CacheKey& key, const EntryLabel& label,
                                              std::chrono::steady_clock::time_point start) const;
  std::optional<std::filesystem::path> user_dir() const;  // prepares it on first use
  std::optional<std::filesystem::path> system_dir() const;
  void go_memory_only(const std::string& reason) const;
  CodeObject read_entry(const std::filesystem::path& path, const CacheKey& key, bool system, bool remove_bad) const;
  void publish(const std::filesystem::path& dir, const CacheKey& key, const EntryLabel& label,
               const std::vector<std::byte>& code);

  CodeCacheSettings settings_;
  mutable std::mutex slots_mutex_;
  std::unordered_map<CacheKey, std::shared_ptr<Slot>, CacheKeyHash> slots_;

  mutable std::once_flag user_dir_once_;
  mutable std::mutex problem_mutex_;       // guards user_dir_problem_
  mutable std::string user_dir_problem_;   // why the user dir is not in use
  mutable std::atomic<bool> user_dir_usable_{false};
  mutable std::atomic<bool> user_dir_writable_{false};
  mutable std::atomic<bool> memory_only_warned_{false};
  mutable std::once_flag system_dir_once_;
  mutable std::string system_dir_problem_;
};

// The process-wide cache, configured from the environment on first call.
CodeCache& code_cache();

}  // namespace sagejit
