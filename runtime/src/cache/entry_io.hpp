#pragma once
// Reading and atomically publishing entry files. Readers take no lock: a file appears under its final
// name only through rename(), complete and fsynced, so a reader sees either nothing or a whole entry.
#include <cstddef>
#include <filesystem>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "cache/cache_location.hpp"

namespace sagejit {

inline constexpr std::string_view temp_file_prefix = "tmp-";

// Writes `bytes` to `dir`/`name` (platform/safe_file.hpp write_file_atomically): a temp file
// "tmp-<pid>-<random>" in the same directory (O_EXCL, O_NOFOLLOW), write,
// fsync, rename over `name`, fsync the directory. `midway`, when set, runs after half the bytes are
// written (tests use it to kill a writer mid-publish). Throws Error(cache_error) naming the step.
void publish_file_atomically(const std::filesystem::path& dir, const std::string& name,
                             std::span<const std::byte> bytes, const std::function<void()>& midway = {});

struct ReadResult {
  bool missing = false;                    // no such file: a plain miss
  std::optional<std::vector<std::byte>> bytes;  // the contents when readable and trusted
  std::string problem;                     // otherwise why not (untrusted, not a regular file, I/O error)
};

// Opens without following symlinks, checks the file is regular and trusted (owner, mode) through the
// open descriptor (no check-then-open race), and reads it whole.
ReadResult read_trusted_file(const std::filesystem::path& path, TrustedOwners owners);

}  // namespace sagejit
