#pragma once
// A directory only this user can read (mkdtemp creates it 0700) under $TMPDIR, removed with its
// contents when the object goes away. Used for the offline compiler's source, output and log, so
// other users can neither read our kernels nor swap the code object before we read it back.
#include <string>

namespace sagejit {

class PrivateTempDir {
 public:
  // prefix: the directory name's start, e.g. "sagejit-clang". Throws Error(internal) on failure.
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
