#include "platform/safe_file.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <random>
#include <utility>

#include <fmt/format.h>

namespace sagejit {
namespace fs = std::filesystem;

FileDescriptor::~FileDescriptor() {
  if (fd_ >= 0) ::close(fd_);
}

FileDescriptor& FileDescriptor::operator=(FileDescriptor&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.release();
  }
  return *this;
}

int FileDescriptor::release() noexcept { return std::exchange(fd_, -1); }

OpenedFile open_regular_file(const fs::path& path, Symlinks symlinks) {
  OpenedFile opened;
  const int no_follow = symlinks == Symlinks::refuse ? O_NOFOLLOW : 0;
  opened.fd = FileDescriptor(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | no_follow));
  if (!opened.fd) {
    if (errno == ENOENT) opened.missing = true;
    else if (errno == ELOOP) opened.problem = "a symbolic link (not followed)";
    else opened.problem = fmt::format("cannot open: {}", std::strerror(errno));
    return opened;
  }
  if (::fstat(opened.fd.get(), &opened.info) != 0) {
    opened.problem = fmt::format("cannot stat: {}", std::strerror(errno));
  } else if (!S_ISREG(opened.info.st_mode)) {
    opened.problem = S_ISDIR(opened.info.st_mode)  ? "a directory, not a regular file"
                     : S_ISFIFO(opened.info.st_mode) ? "a FIFO, not a regular file"
                                                     : "not a regular file";
  }
  if (!opened.problem.empty()) opened.fd = FileDescriptor();
  return opened;
}

std::optional<std::vector<std::byte>> read_opened_file(const OpenedFile& opened, std::size_t max_bytes,
                                                       std::string& problem) {
  const auto size = static_cast<std::size_t>(opened.info.st_size);
  if (size > max_bytes) {
    problem = fmt::format("{} bytes is over the limit of {} bytes", size, max_bytes);
    return std::nullopt;
  }
  std::vector<std::byte> bytes(size);
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t got = ::read(opened.fd.get(), bytes.data() + done, bytes.size() - done);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      problem = fmt::format("read failed: {}", std::strerror(errno));
      return std::nullopt;
    }
    if (got == 0) break;  // shrank while reading: the caller's format check reports it
    done += static_cast<std::size_t>(got);
  }
  bytes.resize(done);
  return bytes;
}

std::string read_regular_text_file(const fs::path& path, std::size_t max_bytes, ErrorCode code,
                                   std::string_view limit_name, Symlinks symlinks) {
  const OpenedFile opened = open_regular_file(path, symlinks);
  if (opened.missing) fail(code, "{}: no such file", path.string());
  if (!opened.problem.empty()) fail(code, "{}: cannot read it: {}", path.string(), opened.problem);
  std::string problem;
  const auto bytes = read_opened_file(opened, max_bytes, problem);
  if (!bytes)
    fail(code, "{}: {}{}", path.string(), problem,
         static_cast<std::size_t>(opened.info.st_size) > max_bytes ? fmt::format(" ({})", limit_name) : std::string());
  return std::string(reinterpret_cast<const char*>(bytes->data()), bytes->size());
}

std::string unpredictable_name(std::string_view prefix) {
  thread_local std::mt19937_64 generator{std::random_device{}()};
  return fmt::format("{}{}-{:016x}", prefix, ::getpid(), generator());
}

namespace {

void write_all(int fd, const std::byte* data, std::size_t size, const std::string& path, ErrorCode code) {
  while (size > 0) {
    const ssize_t written = ::write(fd, data, size);
    if (written < 0 && errno == EINTR) continue;
    if (written <= 0) fail(code, "writing {} failed: {}", path, std::strerror(errno));
    data += written;
    size -= static_cast<std::size_t>(written);
  }
}

}  // namespace

void write_file_atomically(const fs::path& path, std::span<const std::byte> bytes, mode_t mode, ErrorCode code,
                           std::string_view temp_prefix, const std::function<void()>& midway) {
  const fs::path dir = path.has_parent_path() ? path.parent_path() : fs::path(".");
  const fs::path temp = dir / unpredictable_name(temp_prefix);
  FileDescriptor fd(::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode));
  if (!fd) fail(code, "cannot create {}: {}", temp.string(), std::strerror(errno));
  try {
    const std::size_t half = bytes.size() / 2;
    write_all(fd.get(), bytes.data(), half, temp.string(), code);
    if (midway) midway();
    write_all(fd.get(), bytes.data() + half, bytes.size() - half, temp.string(), code);
    if (::fsync(fd.get()) != 0) fail(code, "fsync of {} failed: {}", temp.string(), std::strerror(errno));
    if (::close(fd.release()) != 0) fail(code, "closing {} failed: {}", temp.string(), std::strerror(errno));
    if (::rename(temp.c_str(), path.c_str()) != 0)
      fail(code, "renaming {} to {} failed: {}", temp.string(), path.string(), std::strerror(errno));
  } catch (...) {
    ::unlink(temp.c_str());
    throw;
  }
  // Make the rename itself durable; failure here loses at most this file after a power cut.
  const FileDescriptor dir_fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dir_fd) ::fsync(dir_fd.get());
}

FileDescriptor open_own_file_to_append(const fs::path& path, mode_t mode, std::string& problem) {
  FileDescriptor fd(::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, mode));
  if (!fd) {
    problem = errno == ELOOP ? std::string("a symbolic link (not followed)") : std::string(std::strerror(errno));
    return {};
  }
  struct stat info {};
  if (::fstat(fd.get(), &info) != 0) problem = fmt::format("cannot stat: {}", std::strerror(errno));
  else if (!S_ISREG(info.st_mode)) problem = "not a regular file";
  else if (info.st_uid != ::geteuid()) problem = fmt::format("owned by uid {}, not by this user", info.st_uid);
  else if (info.st_nlink != 1) problem = fmt::format("has {} hard links (expected 1)", info.st_nlink);
  if (!problem.empty()) return {};
  return fd;
}

bool set_file_mode_at(int dir_fd, const std::string& name, mode_t mode, std::string& problem) {
  const FileDescriptor fd(::openat(dir_fd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (!fd) {
    problem = fmt::format("{}: {}", name, errno == ELOOP ? "a symbolic link (not followed)" : std::strerror(errno));
    return false;
  }
  struct stat info {};
  if (::fstat(fd.get(), &info) != 0 || !S_ISREG(info.st_mode) || info.st_uid != ::geteuid()) {
    problem = fmt::format("{}: not a regular file of this user", name);
    return false;
  }
  if (::fchmod(fd.get(), mode) == 0) return true;
  problem = fmt::format("{}: chmod failed: {}", name, std::strerror(errno));
  return false;
}

namespace {

bool remove_tree_at_depth(int dir_fd, const std::string& name, std::string& problem, int depth);

// Empties the directory open as `dir_fd` (it takes ownership), never following a symlink.
bool empty_directory(int dir_fd, const std::string& what, std::string& problem, int depth) {
  if (depth > 64) {
    ::close(dir_fd);
    problem = fmt::format("{}: nested too deeply", what);
    return false;
  }
  DIR* stream = ::fdopendir(dir_fd);
  if (stream == nullptr) {
    problem = fmt::format("{}: cannot list: {}", what, std::strerror(errno));
    ::close(dir_fd);
    return false;
  }
  std::vector<std::string> names;
  while (const dirent* item = ::readdir(stream)) {
    const std::string name = item->d_name;
    if (name != "." && name != "..") names.push_back(name);
  }
  bool ok = true;
  for (const std::string& name : names) ok = remove_tree_at_depth(::dirfd(stream), name, problem, depth) && ok;
  ::closedir(stream);
  return ok;
}

bool remove_tree_at_depth(int dir_fd, const std::string& name, std::string& problem, int depth) {
  if (::unlinkat(dir_fd, name.c_str(), 0) == 0 || errno == ENOENT) return true;
  if (errno != EISDIR && errno != EPERM) {
    problem = fmt::format("{}: {}", name, std::strerror(errno));
    return false;
  }
  const int child = ::openat(dir_fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (child < 0) {
    problem = fmt::format("{}: {}", name, std::strerror(errno));
    return false;
  }
  if (!empty_directory(child, name, problem, depth + 1)) return false;
  if (::unlinkat(dir_fd, name.c_str(), AT_REMOVEDIR) == 0 || errno == ENOENT) return true;
  problem = fmt::format("{}: {}", name, std::strerror(errno));
  return false;
}

}  // namespace

bool remove_tree_at(int dir_fd, const std::string& name, std::string& problem) {
  return remove_tree_at_depth(dir_fd, name, problem, 0);
}

bool remove_tree(const fs::path& path, std::string& problem) {
  const fs::path parent = path.has_parent_path() ? path.parent_path() : fs::path(".");
  const FileDescriptor dir_fd(::open(parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dir_fd) {
    if (errno == ENOENT) return true;
    problem = fmt::format("{}: {}", parent.string(), std::strerror(errno));
    return false;
  }
  if (remove_tree_at(dir_fd.get(), path.filename().string(), problem)) return true;
  problem = fmt::format("cannot remove {}: {}", path.string(), problem);
  return false;
}

}  // namespace sagejit
