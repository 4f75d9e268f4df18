#pragma once
// Where the caches live and whether a directory or file may be trusted. A cache holds executable
// code, so a directory or entry that another user could have written is refused (docs/CACHE.md, "Trust");
// there is never a fallback to a shared location such as /tmp.
#include <filesystem>
#include <optional>
#include <string>

// The trust rule itself (check_trusted_dir, untrusted_reason) is platform/trusted_dir.hpp.
#include "platform/trusted_dir.hpp"

namespace sagejit {

// SAGEJIT_CACHE_DIR, else $XDG_CACHE_HOME/sagejit, else $HOME/.cache/sagejit; nullopt when none of
// these is set (then the cache is memory-only). A relative XDG_CACHE_HOME or HOME is ignored (the XDG
// base directory spec), so the cache never lands below the current directory.
std::optional<std::filesystem::path> default_user_cache_dir();
// SAGEJIT_SYSTEM_CACHE_DIR, else <install datadir>/sagejit/cache.
std::filesystem::path default_system_cache_dir();

// check_trusted_dir for a user cache (owned by this user), creating it when `create` is set, and
// whether it is writable (a read-only cache is still read).
DirCheck prepare_user_cache_dir(const std::filesystem::path& dir, const std::optional<DirModes>& create);

// Empty when `dir` passes check_trusted_dir for reading (self or root); else the reason.
std::string check_system_cache_dir(const std::filesystem::path& dir);

}  // namespace sagejit
