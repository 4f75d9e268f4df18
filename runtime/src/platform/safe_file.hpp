#pragma once
// File operations that another user cannot turn against us (docs/CACHE.md, "Trust"): reading opens
// without following a symlink and without blocking, and accepts only a regular file of bounded size
// (a FIFO or a device named like a file never hangs or floods the caller); writing creates a temp file
// with an unpredictable name (O_CREAT|O_EXCL|O_NOFOLLOW) and renames it into place (rename replaces
// a planted symlink itself, never its target); removing never descends through a symlink.
#include <sys/stat.h>
#include <sys/types.h>

#include <cstddef>
#include <filesystem>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.hpp"

namespace sagejit {

// A file descriptor, closed at scope exit.
class FileDescriptor {
 public:
  FileDescriptor() = default;
  explicit FileDescriptor(int fd) : fd_(fd) {}
  ~FileDescriptor();
  FileDescriptor(FileDescriptor&& other) noexcept : fd_(other.release()) {}
  FileDescriptor& operator=(FileDescriptor&& other) noexcept;
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  int get() const noexcept { return fd_; }
  int release() noexcept;
  explicit operator bool() const noexcept { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

struct OpenedFile {
  FileDescriptor fd;       // open for reading when `problem` is empty and not `missing`
  struct stat info {};     // fstat of fd
  bool missing = false;    // no such file
  std::string problem;     // otherwise why it was not opened: a symlink, not a regular file, an I/O error
};

enum class Symlinks { refuse, follow };

// Opens `path` read-only with O_NONBLOCK (so a FIFO does not block the open) and checks through the
// descriptor that it is a regular file. A symlink is refused (O_NOFOLLOW: cache entries) unless
// `symlinks` is `follow` (files the user names: tuning tables).
OpenedFile open_regular_file(const std::filesystem::path& path, Symlinks symlinks = Symlinks::refuse);

// Reads the file of `opened` whole. nullopt with `problem` set when it is larger than `max_bytes` or
// a read fails.
std::optional<std::vector<std::byte>> read_opened_file(const OpenedFile& opened, std::size_t max_bytes,
                                                       std::string& problem);

// The text of the regular file `path` (symlinks followed by default), at most `max_bytes`. Throws Error(`code`) naming `path` and,
// for the size limit, `limit_name` (what sets or explains the limit).
std::string read_regular_text_file(const std::filesystem::path& path, std::size_t max_bytes, ErrorCode code,
                                   std::string_view limit_name, Symlinks symlinks = Symlinks::follow);

// "<prefix><pid>-<16 random hex digits>": a temp name another user cannot predict.
std::string unpredictable_name(std::string_view prefix);

// Writes `bytes` to `path` atomically: a new temp file "<temp_prefix><pid>-<random>" in the same
// directory (created O_CREAT|O_EXCL|O_NOFOLLOW with `mode`), write, fsync, rename over `path`, fsync
// the directory. `midway`, when set, runs after half the bytes are written (tests kill a writer
// there). Throws Error(`code`) naming the step and the file; the temp file is removed on failure.
void write_file_atomically(const std::filesystem::path& path, std::span<const std::byte> bytes, mode_t mode,
                           ErrorCode code, std::string_view temp_prefix = ".sagejit-tmp-",
                           const std::function<void()>& midway = {});

// Opens `path` to append (O_APPEND|O_CREAT|O_NOFOLLOW|O_NONBLOCK, new files `mode`) and checks it is
// a regular file with one link owned by this user. Empty descriptor and `problem` set otherwise.
FileDescriptor open_own_file_to_append(const std::filesystem::path& path, mode_t mode, std::string& problem);

// Sets the mode of the regular file `name` in the directory `dir_fd` through a descriptor opened with
// O_NOFOLLOW: a symlink, FIFO or directory under that name, or a file of another user, is left
// alone. False with `problem` set then.
bool set_file_mode_at(int dir_fd, const std::string& name, mode_t mode, std::string& problem);

// Removes `name` in the directory `dir_fd`: a file or symlink is unlinked (a symlink itself, never
// its target), a directory is emptied first through descriptors opened with O_NOFOLLOW. True when it
// is gone; otherwise false with `problem` set.
bool remove_tree_at(int dir_fd, const std::string& name, std::string& problem);
// The same for a path (its parent directory is opened normally).
bool remove_tree(const std::filesystem::path& path, std::string& problem);

}  // namespace sagejit
