#include "common/progress.hpp"

#include <cstdio>

#include <fmt/format.h>

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
  if (terminal_ && !finished_) fmt::print(stderr, "\n");
}

void Progress::draw_locked() {
  const std::size_t filled = total_ == 0 ? bar_width : done_ * bar_width / total_;
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  fmt::print(stderr, "\r\x1b[2K{} [{}{}] {}/{}{} {:.1f} s", title_, std::string(filled, '#'),
             std::string(bar_width - filled, '.'), done_, total_,
             failed_ ? fmt::format(" ({} failed)", failed_) : std::string(), seconds);
  std::fflush(stderr);
}

void Progress::item_done(const std::string& line, bool failed) {
  std::lock_guard lock(mutex_);
  ++done_;
  if (failed) ++failed_;
  if (terminal_) {
    draw_locked();
  } else {
    fmt::print(stderr, "[{}/{}] {}\n", done_, total_, line);
    std::fflush(stderr);
  }
}

void Progress::message(const std::string& text) {
  std::lock_guard lock(mutex_);
  if (terminal_) fmt::print(stderr, "\r\x1b[2K");
  fmt::print(stderr, "{}\n", text);
  if (terminal_) draw_locked();
  std::fflush(stderr);
}

void Progress::finish() {
  std::lock_guard lock(mutex_);
  if (finished_) return;
  finished_ = true;
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  if (terminal_) fmt::print(stderr, "\r\x1b[2K");
  fmt::print(stderr, "{}: {}/{} done{} in {:.1f} s\n", title_, done_, total_,
             failed_ ? fmt::format(", {} failed", failed_) : std::string(), seconds);
  std::fflush(stderr);
}

}  // namespace sagejit::tools
