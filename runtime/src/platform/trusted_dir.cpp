#include "platform/trusted_dir.hpp"

#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <fmt/format.h>

namespace sagejit {
namespace fs = std::filesystem;
namespace {

// Why an ancestor directory of a cache may not be trusted ("" when it may): owned by this user or
// root, and writable by nobody else unless sticky (like /tmp: others cannot rename or remove what is ours).
std::string untrusted_ancestor_reason(const struct stat& info, const fs::path& path) {
  const uid_t self = ::geteuid();
  if (info.st_uid != self && info.st_uid != 0)
    return fmt::format("its parent {} is owned by uid {}, not by this user (uid {}) or root", path.string(), info.st_uid,
                       self);
  if ((info.st_mode & (S_IWGRP | S_IWOTH)) != 0 && (info.st_mode & S_ISVTX) == 0)
    return fmt::format("its parent {} is writable by group or others without the sticky bit (mode {:o})", path.string(),
                       info.st_mode & 07777);
  return {};
}

struct Walk {
  std::string problem;
  bool missing = false;  // a component does not exist (the problem names it)
};

// Walks `dir` (absolute) from "/" down, checking every directory on the way. A symlinked component
// is followed only because the directory holding it passed the check (nobody else can have planted
// it); its target is then checked from "/" again. With `create`, missing components are made with
// `create->parents` / `create->last` (then chmod-ed to exactly that, whatever the umask).
Walk walk(const fs::path& dir, TrustedOwners owners, const std::string& what, const std::optional<DirModes>& create,
          int depth) {
  if (depth > 8) return {fmt::format("{}: too many levels of symbolic links", dir.string())};
  std::vector<fs::path> parts;
  for (const auto& part : dir.relative_path())
    if (!part.empty() && part != ".") parts.push_back(part);
  fs::path current = "/";
  struct stat info {};
  if (::lstat("/", &info) != 0) return {fmt::format("cannot stat /: {}", std::strerror(errno))};
  if (parts.empty()) return {fmt::format("{} is the root directory /, which cannot be a cache directory", what)};
  if (auto reason = untrusted_ancestor_reason(info, current); !reason.empty()) return {what + ": " + reason};
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const bool last = i + 1 == parts.size();
    if (parts[i] == "..") {
      current = current.parent_path();  // already checked on the way down
      continue;
    }
    const fs::path next = current / parts[i];
    if (::lstat(next.c_str(), &info) != 0) {
      if (errno != ENOENT) return {fmt::format("cannot stat {}: {}", next.string(), std::strerror(errno))};
      if (!create) return {fmt::format("{} does not exist", next.string()), true};
      const mode_t mode = last ? create->last : create->parents;
      if (::mkdir(next.c_str(), mode) == 0) {
        ::chmod(next.c_str(), mode);  // our new directory in a checked parent: exactly this mode
      } else if (errno != EEXIST) {
        return {fmt::format("cannot create {}: {}", next.string(), std::strerror(errno))};
      }
      if (::lstat(next.c_str(), &info) != 0)
        return {fmt::format("cannot stat {}: {}", next.string(), std::strerror(errno))};
    }
    if (S_ISLNK(info.st_mode)) {
      char target[PATH_MAX];
      if (::realpath(next.c_str(), target) == nullptr)
        return {fmt::format("cannot resolve the symbolic link {}: {}", next.string(), std::strerror(errno)),
                errno == ENOENT};
      fs::path rest = target;
      for (std::size_t j = i + 1; j < parts.size(); ++j) rest /= parts[j];
      return walk(rest, owners, what, create, depth + 1);
    }
    if (!S_ISDIR(info.st_mode)) return {fmt::format("{} is not a directory", next.string())};
    const std::string reason = last ? untrusted_reason(info, owners, what) : untrusted_ancestor_reason(info, next);
    if (!reason.empty()) return {last ? reason : what + ": " + reason};
    current = next;
  }
  return {};
}

}  // namespace

std::string untrusted_reason(const struct stat& info, TrustedOwners owners, const std::string& what) {
  const uid_t self = ::geteuid();
  const bool owner_ok = info.st_uid == self || (owners == TrustedOwners::self_or_root && info.st_uid == 0);
  if (!owner_ok)
    return fmt::format("{} is owned by uid {}, not by this user (uid {}){}", what, info.st_uid, self,
                       owners == TrustedOwners::self_or_root ? " or root" : "");
  if ((info.st_mode & (S_IWGRP | S_IWOTH)) != 0)
    return fmt::format("{} is writable by group or others (mode {:o})", what, info.st_mode & 07777);
  return {};
}

DirCheck check_trusted_dir(const fs::path& dir, TrustedOwners owners, const std::string& what,
                           const std::optional<DirModes>& create) {
  if (dir.empty()) return {fmt::format("{}: the path is empty", what)};
  std::error_code error;
  const fs::path absolute = fs::absolute(dir, error);
  if (error) return {fmt::format("{}: {}", what, error.message())};
  const Walk result = walk(absolute, owners, what, create, 0);
  return {result.problem, result.missing};
}

std::string untrusted_library_file_reason(const fs::path& file, const std::string& what) {
  if (!file.is_absolute()) return fmt::format("{}: {} is not an absolute path", what, file.string());
  if (auto found_in = check_trusted_dir(file.parent_path(), TrustedOwners::self_or_root,
                                        fmt::format("{}: its directory {}", what, file.parent_path().string()));
      !found_in.problem.empty())
    return found_in.problem;
  char resolved[PATH_MAX];
  if (::realpath(file.c_str(), resolved) == nullptr)
    return fmt::format("{}: cannot resolve {}: {}", what, file.string(), std::strerror(errno));
  const fs::path real = resolved;
  if (real.parent_path() != file.parent_path())
    if (auto target_in = check_trusted_dir(real.parent_path(), TrustedOwners::self_or_root,
                                           fmt::format("{}: the directory {} of its target {}", what,
                                                       real.parent_path().string(), real.string()));
        !target_in.problem.empty())
      return target_in.problem;
  struct stat info {};
  if (::stat(real.c_str(), &info) != 0)
    return fmt::format("{}: cannot stat {}: {}", what, real.string(), std::strerror(errno));
  if (!S_ISREG(info.st_mode)) return fmt::format("{}: {} is not a regular file", what, real.string());
  return untrusted_reason(info, TrustedOwners::self_or_root, fmt::format("{}: the file {}", what, real.string()));
}

}  // namespace sagejit
