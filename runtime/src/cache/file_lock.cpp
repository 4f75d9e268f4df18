#include "cache/file_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <thread>

#include <fmt/format.h>

#include "core/log.hpp"

namespace sagejit {
namespace {

// The pid the holder wrote into the lock file, or "an unknown process".
std::string holder_of(int fd) {
  char text[32] = {};
  const ssize_t got = ::pread(fd, text, sizeof text - 1, 0);
  std::string holder = got > 0 ? std::string(text, static_cast<std::size_t>(got)) : std::string();
  while (!holder.empty() && (holder.back() == '\n' || holder.back() == ' ')) holder.pop_back();
  const bool digits = !holder.empty() && std::all_of(holder.begin(), holder.end(), [](char c) { return c >= '0' && c <= '9'; });
  return digits ? "pid " + holder : std::string("an unknown process");
}

}  // namespace

FileLock::FileLock(const std::filesystem::path& path, std::chrono::milliseconds timeout) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0600);
  if (fd < 0) {
    error_ = fmt::format("cannot open lock file {}: {}", path.string(), std::strerror(errno));
    return;
  }
  struct stat info {};
  if (::fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
    error_ = fmt::format("lock file {} is not a regular file", path.string());
    ::close(fd);
    return;
  }
  const auto start = std::chrono::steady_clock::now();
  const auto deadline = start + timeout;
  auto pause = std::chrono::milliseconds(1);
  bool logged = false, warned = false;
  while (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    if (errno == EINTR) continue;
    if (errno != EWOULDBLOCK) {
      error_ = fmt::format("cannot lock {}: {}", path.string(), std::strerror(errno));
      ::close(fd);
      return;
    }
    const auto now = std::chrono::steady_clock::now();
    const double waited = std::chrono::duration<double>(now - start).count();
    if (now >= deadline) {
      timed_out_ = true;
      error_ = fmt::format("gave up after {:.0f} s waiting for {} (held by {}, compiling the same kernel); "
                           "SAGEJIT_LOCK_TIMEOUT sets how long to wait",
                           waited, path.string(), holder_of(fd));
      ::close(fd);
      return;
    }
    if (!logged) {
      logged = true;
      log::info("code-object cache: waiting for {} (held by {})", path.string(), holder_of(fd));
    } else if (!warned && waited >= 5) {
      warned = true;
      log::warn("code-object cache: still waiting for {} after {:.0f} s (held by {}, compiling the same kernel; "
                "giving up after {} s, SAGEJIT_LOCK_TIMEOUT)",
                path.string(), waited, holder_of(fd), std::chrono::duration_cast<std::chrono::seconds>(timeout).count());
    }
    std::this_thread::sleep_for(std::min(pause, std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now)));
    pause = std::min(pause * 2, std::chrono::milliseconds(100));
  }
  // Tell later waiters who holds it; failing to is harmless.
  const std::string pid = fmt::format("{}\n", static_cast<long>(::getpid()));
  if (::ftruncate(fd, 0) == 0) (void)!::pwrite(fd, pid.data(), pid.size(), 0);
  fd_ = fd;
}

FileLock::~FileLock() {
  if (fd_ >= 0) ::close(fd_);  // closing the last descriptor releases the flock
}

}  // namespace sagejit
