#pragma once
// Leveled logging to stderr, configured by SAGEJIT_LOG=warn|info|debug (default warn; also "off"; any
// case). Writing never throws: a log line that cannot be written (stderr closed or full) is dropped.
// Every line is tagged with the pid so interleaved multi-process logs stay readable:
//   [sagejit 1234 info] attention: cache hit (disk, 0.4 ms)
#include <string_view>

#include <fmt/format.h>

namespace sagejit::log {

enum class Level : int { off = 0, warn = 1, info = 2, debug = 3 };

Level current_level() noexcept;          // parsed once from SAGEJIT_LOG
void set_level(Level level) noexcept;    // for tools (--verbose) and tests
bool enabled(Level level) noexcept;
void write(Level level, std::string_view message) noexcept;

template <typename... Args>
void warn(fmt::format_string<Args...> f, Args&&... args) {
  if (enabled(Level::warn)) write(Level::warn, fmt::format(f, std::forward<Args>(args)...));
}
template <typename... Args>
void info(fmt::format_string<Args...> f, Args&&... args) {
  if (enabled(Level::info)) write(Level::info, fmt::format(f, std::forward<Args>(args)...));
}
template <typename... Args>
void debug(fmt::format_string<Args...> f, Args&&... args) {
  if (enabled(Level::debug)) write(Level::debug, fmt::format(f, std::forward<Args>(args)...));
}

}  // namespace sagejit::log
