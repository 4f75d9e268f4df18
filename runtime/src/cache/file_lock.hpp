#pragma once
// An exclusive advisory lock on a per-key lock file (flock), held for the lifetime of the object.
// The kernel drops it when the holder dies, even by SIGKILL, so a crashed compile never wedges others.
#include <filesystem>
#include <string>

namespace sagejit {

class FileLock {
 public:
  // Blocks until the lock is held. On failure (e.g. read-only dir) `held()` is false and `error()`
  // says why; the caller then proceeds without cross-process exclusion (it only costs a duplicate compile).
  explicit FileLock(const std::filesystem::path& path);
  ~FileLock();
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

  bool held() const { return fd_ >= 0; }
  const std::string& error() const { return error_; }

 private:
  int fd_ = -1;
  std::string error_;
};

}  // namespace sagejit
