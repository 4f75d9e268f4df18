#include "core/env.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdlib>

#include "core/error.hpp"

namespace sagejit::env {

std::optional<std::string> get(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') return std::nullopt;
  return std::string(value);
}

bool flag(const char* name) {
  auto value = get(name);
  if (!value) return false;
  std::string lower = *value;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  return lower == "1" || lower == "true" || lower == "yes" || lower == "on";
}

std::chrono::seconds seconds(const char* name, std::chrono::seconds fallback) {
  constexpr long long most = 7LL * 24 * 3600;
  const auto value = get(name);
  if (!value) return fallback;
  long long parsed = 0;
  const char* end = value->data() + value->size();
  const auto [stop, error] = std::from_chars(value->data(), end, parsed);
  if (error != std::errc() || stop != end || parsed < 1 || parsed > most)
    fail(ErrorCode::invalid_argument, "{}=\"{}\" is not a number of seconds; use a whole number from 1 to {}", name,
         *value, most);
  return std::chrono::seconds(parsed);
}

}  // namespace sagejit::env
