#pragma once
// A directory only this user can read (mkdtemp creates it 0700) under $TMPDIR, removed with its
// contents when the object goes away. Used for the offline compiler's source, output and log, so
// other users can neither read our kernels nor swap the code object before we read it back.
#include <cstdint>
#include <string>

namespace sagejit {

// A private temp dir untouched this long belongs to a process that died (a compile takes seconds to
// minutes); the next PrivateTempDir with the same prefix removes it.
inline constexpr std::int64_t stale_private_dir_seconds = 24 * 3600;

class PrivateTempDir {
 public:
  // prefix: the directory name's start, e.g. "sagejit-clang". The first one of a prefix in a process
  // also removes that user's stale "<prefix>-*" dirs (stale_private_dir_seconds). Throws
  // Error(internal) on failure.
  explicit PrivateTempDir(const std::string& prefix);
  ~PrivateTempDir();
  PrivateTempDir(const PrivateTempDir&) = delete;
  PrivateTempDir& operator=(const PrivateTempDir&) = delete;

  const std::string& path() const noexcept { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

}  // namespace sagejit
