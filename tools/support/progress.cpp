#include "support/progress.hpp"

#include <fmt/format.h>

#include "support/cli.hpp"

namespace sagejit::tools {

namespace {
constexpr int bar_width = 30;
}

Progress::Progress(std::string title, std::size_t total, bool terminal)
    : title_(std::move(title)), total_(total), terminal_(terminal), start_(std::chrono::steady_clock::now()) {
  std::lock_guard lock(mutex_);
  if (terminal_) draw_locked();
}

Progress::~Progress() {
  // A bar left half-drawn by an exception would glue the next message to it.
  std::lock_guard lock(mutex_);
  if (terminal_ && !finished_) print_stderr("\n");
}

void Progress::draw_locked() noexcept try {
  const std::size_t filled = total_ == 0 ? bar_width : done_ * bar_width / total_;
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  print_stderr(fmt::format("\r\x1b[2K{} [{}{}] {}/{}{} {:.1f} s", title_, std::string(filled, '#'),
                           std::string(bar_width - filled, '.'), done_, total_,
                           failed_ ? fmt::format(" ({} failed)", failed_) : std::string(), seconds));
} catch (...) {  // out of memory formatting a progress line: skip the line
}

void Progress::item_done(const std::string& line, bool failed) noexcept try {
  std::lock_guard lock(mutex_);
  ++done_;
  if (failed) ++failed_;
  if (terminal_) {
    draw_locked();
  } else {
    print_stderr(fmt::format("[{}/{}] {}\n", done_, total_, line));
  }
} catch (...) {
}

void Progress::message(const std::string& text) noexcept try {
  std::lock_guard lock(mutex_);
  if (terminal_) print_stderr("\r\x1b[2K");
  print_stderr(fmt::format("{}\n", text));
  if (terminal_) draw_locked();
} catch (...) {
}

void Progress::finish() noexcept try {
  std::lock_guard lock(mutex_);
  if (finished_) return;
  finished_ = true;
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  if (terminal_) print_stderr("\r\x1b[2K");
  print_stderr(fmt::format("{}: {}/{} done{} in {:.1f} s\n", title_, done_, total_,
                           failed_ ? fmt::format(", {} failed", failed_) : std::string(), seconds));
} catch (...) {
}

}  // namespace sagejit::tools
