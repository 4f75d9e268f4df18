#pragma once
// Progress of long work (many compiles, many timed candidates): a redrawn bar on a terminal, one plain
// line per finished item otherwise (logs, CI, pipes). Thread-safe: workers report as they finish.
// Never throws: progress that cannot be written (stderr closed or full) is dropped, and the work goes on.
#include <chrono>
#include <cstddef>
#include <mutex>
#include <string>

namespace sagejit::tools {

class Progress {
 public:
  // `total` items; `terminal` selects the bar (normally stderr_is_terminal()).
  Progress(std::string title, std::size_t total, bool terminal);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  // One item finished; `line` says which and how ("prepare threads=256 gfx1201 bf16 d128: compiled 1234 ms").
  void item_done(const std::string& line, bool failed = false) noexcept;
  // Prints a message without tearing the bar (e.g. an error's log).
  void message(const std::string& text) noexcept;
  // Clears the bar (a terminal) and prints "<title>: N/M done in S s".
  void finish() noexcept;

 private:
  void draw_locked() noexcept;

  std::string title_;
  std::size_t total_;
  bool terminal_;
  std::size_t done_ = 0;
  std::size_t failed_ = 0;
  bool finished_ = false;
  std::chrono::steady_clock::time_point start_;
  std::mutex mutex_;
};

}  // namespace sagejit::tools
