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
// these is set (then the cache is memory-only). A relative XDG_CACHE_HOME or HOME is ignored (the XDG
// base directory spec), so the cache never lands below the current directory.
std::optional<std::filesystem::path> default_user_cache_dir();
// SAGEJIT_SYSTEM_CACHE_DIR, else <install datadir>/sagejit/cache.
std::filesystem::path default_system_cache_dir();

// Who may own a trusted directory or entry: the current effective user, or also root (system cache,
// installed by a package).
enum class TrustedOwners { self, self_or_root };

// Empty when `info` (from stat/fstat) is owned by an allowed user and not writable by group/others;
// otherwise why not, naming `what`.
std::string untrusted_reason(const struct stat& info, TrustedOwners owners, const std::string& what);

// Modes of directories a check creates: the missing parents and the last component.
struct DirModes {
  mode_t parents = 0700;
  mode_t last = 0700;
};

struct DirCheck {
  std::string problem;    // empty when the directory may be used
  bool missing = false;   // the problem is only that a component does not exist
  bool writable = false;  // prepare_user_cache_dir: we may create files in it
};

// Checks that `dir` is a directory we may trust with executable code: it and every directory above
// it, from "/", is owned by this user or root, `dir` by an allowed owner (`owners`) and writable by no
// one else, its ancestors writable by no one else unless sticky (/tmp). A symlink on the way is
// followed only where the directory holding it passed the check, and its target is checked too.
// "/" itself is refused. With `create`, missing components are created with exactly those modes
// (whatever the umask). `what` names the directory in the problem.
DirCheck check_trusted_dir(const std::filesystem::path& dir, TrustedOwners owners, const std::string& what,
                           const std::optional<DirModes>& create = std::nullopt);

// check_trusted_dir for a user cache (owned by this user), creating it when `create` is set, and
// whether it is writable (a read-only cache is still read).
DirCheck prepare_user_cache_dir(const std::filesystem::path& dir, const std::optional<DirModes>& create);

// Empty when `dir` passes check_trusted_dir for reading (self or root); else the reason.
std::string check_system_cache_dir(const std::filesystem::path& dir);

}  // namespace sagejit
