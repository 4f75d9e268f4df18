#include "compiler/compile_diagnostics.hpp"

#include <cctype>
#include <charconv>

#include <fmt/format.h>

#include "core/error.hpp"

namespace sagejit {
namespace {

std::optional<int> parse_line_number(std::string_view text) {
  int value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end == text.data() || value <= 0) return std::nullopt;
  return value;
}

// Line `line` (1-based) of `source`, or empty.
std::string nth_line(std::string_view source, int line) {
  std::size_t start = 0;
  for (int current = 1; current < line; ++current) {
    const std::size_t newline = source.find('\n', start);
    if (newline == std::string_view::npos) return {};
    start = newline + 1;
  }
  const std::size_t end = source.find('\n', start);
  return std::string(source.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start));
}

// The line number that follows `file_name` on a diagnostic line, in either compiler's style.
std::optional<int> line_after_file_name(std::string_view log_line, std::string_view file_name) {
  for (std::size_t at = log_line.find(file_name); at != std::string_view::npos;
       at = log_line.find(file_name, at + 1)) {
    std::string_view rest = log_line.substr(at + file_name.size());
    if (rest.size() < 2 || (rest[0] != '(' && rest[0] != ':')) continue;
    rest.remove_prefix(1);
    std::size_t digits = 0;
    while (digits < rest.size() && std::isdigit(static_cast<unsigned char>(rest[digits]))) ++digits;
    if (auto line = parse_line_number(rest.substr(0, digits))) return line;
  }
  return std::nullopt;
}

}  // namespace

std::optional<SourceLocation> first_error_location(std::string_view log, const std::vector<std::string_view>& file_names,
                                                   std::string_view source) {
  std::size_t start = 0;
  while (start < log.size()) {
    const std::size_t end = log.find('\n', start);
    const std::string_view line = log.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
    if (line.find("error") != std::string_view::npos) {
      for (const auto file_name : file_names)
        if (auto number = line_after_file_name(line, file_name)) return SourceLocation{*number, nth_line(source, *number)};
    }
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  return std::nullopt;
}

std::string shorten_compiler_log(std::string_view log) {
  constexpr std::size_t keep = 32 * 1024;
  if (log.size() <= 2 * keep) return std::string(log);
  return fmt::format("{}\n[... {} bytes of compiler output cut ...]\n{}", log.substr(0, keep), log.size() - 2 * keep,
                     log.substr(log.size() - keep));
}

void throw_compile_error(std::string_view compiler, std::string_view name, std::string_view target,
                         const std::vector<std::string_view>& file_names, std::string_view source,
                         std::string_view log) {
  const auto location = first_error_location(log, file_names, source);
  const std::string where =
      location ? fmt::format("first error at line {} of the rendered source {}:\n  {} | {}\n", location->line, file_names.front(),
                             location->line, location->source_line)
               : std::string("no error location found in the log\n");
  fail(ErrorCode::compile_error, "{} failed to compile kernel '{}' for {}: {}compiler log:\n{}", compiler, name, target,
       where, log.empty() ? std::string("(empty)") : shorten_compiler_log(log));
}

std::string source_file_stem(std::string_view kernel_name) {
  std::string stem;
  for (const char c : kernel_name)
    stem += (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-') ? c : '_';
  if (stem.empty() || stem[0] == '.' || stem[0] == '-') stem.insert(0, "kernel");
  return stem;
}

}  // namespace sagejit
