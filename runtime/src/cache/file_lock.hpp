#pragma once
// An exclusive advisory lock on a per-key lock file (flock), held for the lifetime of the object.
// The kernel drops it when the holder dies, even by SIGKILL, so a crashed compile never wedges others.
// The holder writes its pid into the file, so a process that waits can say whom it waits for; the
// wait is bounded (SAGEJIT_LOCK_TIMEOUT), so a hung holder is an error, never a silent hang.
#include <chrono>
#include <filesystem>
#include <string>

namespace sagejit {

class FileLock {
 public:
  // Waits at most `timeout` for the lock, logging (info, then a warning after a few seconds) the pid
  // that holds it. On failure `held()` is false and `error()` says why; `timed_out()` tells a hung
  // holder (the caller gives up with an error) from a lock that cannot be taken at all (e.g. a
  // read-only dir: the caller proceeds without cross-process exclusion, costing a duplicate compile).
  FileLock(const std::filesystem::path& path, std::chrono::milliseconds timeout);
  ~FileLock();
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

  bool held() const { return fd_ >= 0; }
  bool timed_out() const { return timed_out_; }
  const std::string& error() const { return error_; }

 private:
  int fd_ = -1;
  bool timed_out_ = false;
  std::string error_;
};

}  // namespace sagejit
