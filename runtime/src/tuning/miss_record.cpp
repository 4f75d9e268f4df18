#include "tuning/miss_record.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include "core/error.hpp"
#include "core/log.hpp"

namespace sagejit {

void MissRecorder::record(const ProblemKey& key) {
  const std::string line = problem_key_to_json(key).dump() + "\n";
  std::lock_guard lock(mutex_);
  if (written_.contains(line)) return;
  const int fd = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  bool ok = fd >= 0;
  int error = ok ? 0 : errno;
  if (ok) {
    ok = ::write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size());
    if (!ok) error = errno;
    ::close(fd);
  }
  if (ok) {
    written_.insert(line);
  } else if (!warned_) {
    warned_ = true;
    log::warn("SAGEJIT_RECORD_MISSES={}: cannot append a tuning miss: {}", path_, std::strerror(error));
  }
}

std::vector<ProblemKey> read_recorded_misses(const std::string& path) {
  std::vector<ProblemKey> keys;
  std::ifstream in(path);
  if (!in) return keys;
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
