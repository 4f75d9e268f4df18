#include "tuning/miss_record.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <sstream>

#include "core/error.hpp"
#include "core/log.hpp"
#include "platform/safe_file.hpp"

namespace sagejit {

void MissRecorder::record(const ProblemKey& key) {
  const std::string line = problem_key_to_json(key).dump() + "\n";
  std::lock_guard lock(mutex_);
  if (written_.contains(line)) return;
  // Never through a planted symlink, into a FIFO or into a file that is not ours.
  std::string problem;
  const FileDescriptor fd = open_own_file_to_append(path_, 0644, problem);
  if (fd && ::write(fd.get(), line.data(), line.size()) != static_cast<ssize_t>(line.size()))
    problem = std::strerror(errno);
  if (problem.empty()) {
    written_.insert(line);
  } else if (!warned_) {
    warned_ = true;
    log::warn("SAGEJIT_RECORD_MISSES={}: cannot append a tuning miss: {}", path_, problem);
  }
}

std::vector<ProblemKey> read_recorded_misses(const std::string& path) {
  std::vector<ProblemKey> keys;
  if (open_regular_file(path, Symlinks::follow).missing) return keys;
  std::istringstream in(read_regular_text_file(path, max_misses_file_bytes, ErrorCode::config_error,
                                               "the limit of a misses file"));
  std::set<std::string> seen;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = fmt::format("{}:{}", path, number);
    nlohmann::json json;
    try {
      json = nlohmann::json::parse(line);
    } catch (const nlohmann::json::exception& e) {
      fail(ErrorCode::config_error, "{}: malformed JSON line: {}", where, e.what());
    }
    ProblemKey key = problem_key_from_json(json, where);
    if (seen.insert(problem_key_to_json(key).dump()).second) keys.push_back(std::move(key));
  }
  return keys;
}

}  // namespace sagejit
