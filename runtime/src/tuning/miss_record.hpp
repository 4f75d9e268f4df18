#pragma once
// SAGEJIT_RECORD_MISSES: tuning lookups that were not exact, kept as JSON lines for the autotuner.
#include <cstddef>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "tuning/problem_key.hpp"

namespace sagejit {

// Appends one line per distinct key (per process) to a file. Thread-safe. Each line goes out in one
// append-mode write, so lines from concurrent processes do not interleave. The file is opened without
// following a symlink and must be a regular file of this user with one link.
class MissRecorder {
 public:
  explicit MissRecorder(std::string path) : path_(std::move(path)) {}
  // A failure to write is logged as a warning (once) rather than failing the kernel call it came from.
  void record(const ProblemKey& key);
  const std::string& path() const noexcept { return path_; }

 private:
  std::string path_;
  std::mutex mutex_;
  std::set<std::string> written_;
  bool warned_ = false;
};

// A misses file holds one short line per distinct problem; anything larger is not one.
inline constexpr std::size_t max_misses_file_bytes = std::size_t{64} << 20;

// Reads a misses file back: distinct keys in first-seen order. A missing file is an empty list; a
// malformed line, a file that is not regular or is over max_misses_file_bytes throws
// Error(config_error) naming "<path>:<line>" or the file.
std::vector<ProblemKey> read_recorded_misses(const std::string& path);

}  // namespace sagejit
