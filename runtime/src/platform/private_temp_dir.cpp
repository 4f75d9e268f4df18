#include "platform/private_temp_dir.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <mutex>
#include <set>
#include <vector>

#include "core/env.hpp"
#include "core/error.hpp"
#include "core/log.hpp"
#include "platform/safe_file.hpp"

namespace sagejit {
namespace {

std::string temp_base() { return env::get("TMPDIR").value_or("/tmp"); }

// Once per prefix and process: removes "<prefix>-*" directories in `base` that this user owns and
// nobody touched for `stale_private_dir_seconds` (left by a compile killed before its destructor
// ran). Entries are examined with lstat and removed through O_NOFOLLOW descriptors: a symlink named
// like one is never followed, another user's directory never touched.
void sweep_stale_once(const std::string& base, const std::string& prefix) {
  static std::mutex mutex;
  static std::set<std::string> swept;
  {
    std::lock_guard lock(mutex);
    if (!swept.insert(base + "\n" + prefix).second) return;
  }
  const FileDescriptor base_fd(::open(base.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!base_fd) return;
  DIR* stream = ::fdopendir(::dup(base_fd.get()));
  if (stream == nullptr) return;
  std::vector<std::string> stale;
  const std::string start = prefix + "-";
  const auto now = static_cast<std::int64_t>(std::time(nullptr));
  while (const dirent* item = ::readdir(stream)) {
    const std::string name = item->d_name;
    if (!name.starts_with(start)) continue;
    struct stat info {};
    if (::fstatat(base_fd.get(), name.c_str(), &info, AT_SYMLINK_NOFOLLOW) != 0) continue;
    if (S_ISDIR(info.st_mode) && info.st_uid == ::geteuid() &&
        now - static_cast<std::int64_t>(info.st_mtime) > stale_private_dir_seconds)
      stale.push_back(name);
  }
  ::closedir(stream);
  for (const std::string& name : stale) {
    std::string problem;
    if (remove_tree_at(base_fd.get(), name, problem))
      log::debug("removed the stale temporary directory {}/{}", base, name);
    else
      log::debug("could not remove the stale temporary directory {}/{}: {}", base, name, problem);
  }
}

}  // namespace

PrivateTempDir::PrivateTempDir(const std::string& prefix) {
  const std::string base = temp_base();
  sweep_stale_once(base, prefix);
  std::string pattern = base + "/" + prefix + "-XXXXXX";
  std::vector<char> buffer(pattern.begin(), pattern.end());
  buffer.push_back('\0');
  if (::mkdtemp(buffer.data()) == nullptr)
    fail(ErrorCode::internal, "could not create a private temporary directory '{}' (TMPDIR={}): {}", pattern, base,
         std::strerror(errno));
  path_ = buffer.data();
}

PrivateTempDir::~PrivateTempDir() {
  std::string problem;
  if (!remove_tree(path_, problem)) log::warn("could not remove temporary directory {}: {}", path_, problem);
}

}  // namespace sagejit
