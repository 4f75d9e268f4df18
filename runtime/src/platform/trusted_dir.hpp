#pragma once
// Whether a directory or file may be trusted with executable code: the one rule for the code-object
// caches (cache/cache_location), the tools' output directories and the GPU runtime libraries that
// platform/runtime_discovery loads (docs/CACHE.md, "Trust": a directory or file another user could
// have written is refused).
#include <sys/stat.h>

#include <filesystem>
#include <optional>
#include <string>

namespace sagejit {

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

// Empty when the library file `file` may be loaded: the directory it was found in (`file`'s parent)
// and the directory of the file it resolves to pass check_trusted_dir (self_or_root), and that file is
// a regular file owned by this user or root and writable by nobody else; otherwise why not, naming
// `what` ("SAGEJIT_LIBRARY_DIRS entry /x: /x/libamdhip64.so.7").
std::string untrusted_library_file_reason(const std::filesystem::path& file, const std::string& what);

}  // namespace sagejit
