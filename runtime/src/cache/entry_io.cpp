#include "cache/entry_io.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <random>
#include <utility>

#include <fmt/format.h>

#include "core/error.hpp"

namespace sagejit {
namespace {

// An entry larger than this is not ours (code objects are KiB to a few MiB); refuse to allocate for it.
constexpr std::size_t max_entry_bytes = std::size_t{1} << 30;

class Descriptor {
 public:
  explicit Descriptor(int fd) : fd_(fd) {}
  ~Descriptor() {
    if (fd_ >= 0) ::close(fd_);
  }
  Descriptor(const Descriptor&) = delete;
  Descriptor& operator=(const Descriptor&) = delete;
  int get() const { return fd_; }
  int release() { return std::exchange(fd_, -1); }

 private:
  int fd_;
};

void write_all(int fd, const std::byte* data, std::size_t size, const std::string& path) {
  while (size > 0) {
    const ssize_t written = ::write(fd, data, size);
    if (written < 0 && errno == EINTR) continue;
    if (written <= 0) fail(ErrorCode::cache_error, "writing {} failed: {}", path, std::strerror(errno));
    data += written;
    size -= static_cast<std::size_t>(written);
  }
}

std::string temp_name() {
  thread_local std::mt19937_64 generator{std::random_device{}()};
  return fmt::format("{}{}-{:016x}", temp_file_prefix, ::getpid(), generator());
}

}  // namespace

void publish_file_atomically(const std::filesystem::path& dir, const std::string& name,
                             std::span<const std::byte> bytes, const std::function<void()>& midway) {
  const std::filesystem::path temp = dir / temp_name();
  Descriptor fd(::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (fd.get() < 0) fail(ErrorCode::cache_error, "cannot create {}: {}", temp.string(), std::strerror(errno));
  try {
    const std::size_t half = bytes.size() / 2;
    write_all(fd.get(), bytes.data(), half, temp.string());
    if (midway) midway();
    write_all(fd.get(), bytes.data() + half, bytes.size() - half, temp.string());
    if (::fsync(fd.get()) != 0) fail(ErrorCode::cache_error, "fsync of {} failed: {}", temp.string(), std::strerror(errno));
    if (::close(fd.release()) != 0)
      fail(ErrorCode::cache_error, "closing {} failed: {}", temp.string(), std::strerror(errno));
    const std::filesystem::path final_path = dir / name;
    if (::rename(temp.c_str(), final_path.c_str()) != 0)
      fail(ErrorCode::cache_error, "renaming {} to {} failed: {}", temp.string(), final_path.string(),
           std::strerror(errno));
  } catch (...) {
    ::unlink(temp.c_str());
    throw;
  }
  // Make the rename itself durable; failure here loses at most this entry after a power cut.
  Descriptor dir_fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dir_fd.get() >= 0) ::fsync(dir_fd.get());
}

ReadResult read_trusted_file(const std::filesystem::path& path, TrustedOwners owners) {
  ReadResult result;
  Descriptor fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (fd.get() < 0) {
    if (errno == ENOENT) {
      result.missing = true;
    } else {
      result.problem = fmt::format("cannot open: {}", std::strerror(errno));  // ELOOP: a symlink
    }
    return result;
  }
  struct stat info {};
  if (::fstat(fd.get(), &info) != 0) {
    result.problem = fmt::format("cannot stat: {}", std::strerror(errno));
    return result;
  }
  if (!S_ISREG(info.st_mode)) {
    result.problem = "not a regular file";
    return result;
  }
  if (auto reason = untrusted_reason(info, owners, "entry"); !reason.empty()) {
    result.problem = reason;
    return result;
  }
  if (static_cast<std::size_t>(info.st_size) > max_entry_bytes) {
    result.problem = fmt::format("{} bytes is larger than any code object ({} max)", info.st_size, max_entry_bytes);
    return result;
  }
  std::vector<std::byte> bytes(static_cast<std::size_t>(info.st_size));
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t got = ::read(fd.get(), bytes.data() + done, bytes.size() - done);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      result.problem = fmt::format("read failed: {}", std::strerror(errno));
      return result;
    }
    if (got == 0) break;  // shrank under us (cannot happen with rename-publish); decode reports it
    done += static_cast<std::size_t>(got);
  }
  bytes.resize(done);
  result.bytes = std::move(bytes);
  return result;
}

}  // namespace sagejit
