#pragma once
// Where the caches live and whether a directory or file may be trusted. A cache holds executable
// code, so a directory or entry that another user could have written is refused (DESIGN.md section 7);
// there is never a fallback to a shared location such as /tmp.
#include <sys/stat.h>

#include <filesystem>
#include <optional>
#include <string>

namespace sagejit {

// SAGEJIT_CACHE_DIR, else $XDG_CACHE_HOME/sagejit, else $HOME/.cache/sagejit; nullopt when none of
// these is set (then the cache is memory-only).
std::optional<std::filesystem::path> default_user_cache_dir();
// SAGEJIT_SYSTEM_CACHE_DIR, else <install datadir>/sagejit/cache.
std::filesystem::path default_system_cache_dir();

// Who may own a trusted directory or entry: the current effective user, or also root (system cache,
// installed by a package).
enum class TrustedOwners { self, self_or_root };

// Empty when `info` (from stat/fstat) is owned by an allowed user and not writable by group/others;
// otherwise why not, naming `what`.
std::string untrusted_reason(const struct stat& info, TrustedOwners owners, const std::string& what);

// Creates `dir` and missing parents with mode 0700, then checks it is a trusted, writable directory.
// Returns empty when usable, else the reason (for the one warning).
std::string prepare_user_cache_dir(const std::filesystem::path& dir);

// Empty when `dir` exists, is a directory and is trusted for reading (self or root); else the reason.
std::string check_system_cache_dir(const std::filesystem::path& dir);

}  // namespace sagejit
