#include "core/log.hpp"

#include <unistd.h>

#include <atomic>
#include <cctype>
#include <cstdio>
#include <mutex>
#include <string>

#include "core/env.hpp"

namespace sagejit::log {
namespace {

Level parse_level() {
  std::string value = env::get("SAGEJIT_LOG").value_or("warn");
  for (char& c : value) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));  // INFO = info
  if (value == "off" || value == "0" || value == "none") return Level::off;
  if (value == "info") return Level::info;
  if (value == "debug" || value == "trace") return Level::debug;
  if (value != "warn" && value != "warning" && !value.empty())
    std::fprintf(stderr, "[sagejit %d warn] SAGEJIT_LOG=%s is not one of off|warn|info|debug (any case); using warn\n",
                 static_cast<int>(::getpid()), env::get("SAGEJIT_LOG")->c_str());
  return Level::warn;
}

std::atomic<int>& level_storage() {
  static std::atomic<int> level{static_cast<int>(parse_level())};
  return level;
}

const char* level_name(Level level) {
  switch (level) {
    case Level::warn: return "warn";
    case Level::info: return "info";
    case Level::debug: return "debug";
    default: return "";
  }
}

}  // namespace

Level current_level() noexcept { return static_cast<Level>(level_storage().load()); }
void set_level(Level level) noexcept { level_storage().store(static_cast<int>(level)); }
bool enabled(Level level) noexcept { return level != Level::off && level <= current_level(); }

void write(Level level, std::string_view message) noexcept {
  static std::mutex mutex;  // one line at a time across threads
  std::lock_guard lock(mutex);
  std::fprintf(stderr, "[sagejit %d %s] %.*s\n", static_cast<int>(::getpid()), level_name(level),
               static_cast<int>(message.size()), message.data());
}

}  // namespace sagejit::log
