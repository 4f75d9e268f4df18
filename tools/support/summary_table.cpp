#include "support/summary_table.hpp"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

namespace sagejit::tools {

SummaryTable::SummaryTable(std::vector<Column> columns) : columns_(std::move(columns)) {}

void SummaryTable::add_row(std::vector<std::string> cells) {
  if (cells.size() != columns_.size())
    throw std::invalid_argument(fmt::format("summary table row has {} cells, the table {} columns", cells.size(),
                                            columns_.size()));
  rows_.push_back(std::move(cells));
}

std::string SummaryTable::render() const {
  std::vector<std::size_t> widths;
  for (const Column& column : columns_) widths.push_back(column.header.size());
  for (const auto& row : rows_)
    for (std::size_t i = 0; i < row.size(); ++i) widths[i] = std::max(widths[i], row[i].size());

  std::string text;
  const auto append_line = [&](const std::vector<std::string>& cells) {
    std::string line;
    for (std::size_t i = 0; i < cells.size(); ++i) {
      if (i) line += "  ";
      line += columns_[i].align == Align::right ? fmt::format("{:>{}}", cells[i], widths[i])
                                                : fmt::format("{:<{}}", cells[i], widths[i]);
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    text += line + '\n';
  };
  std::vector<std::string> headers;
  for (const Column& column : columns_) headers.push_back(column.header);
  append_line(headers);
  std::vector<std::string> rule;
  for (std::size_t width : widths) rule.push_back(std::string(width, '-'));
  append_line(rule);
  for (const auto& row : rows_) append_line(row);
  return text;
}

void SummaryTable::print(std::FILE* out) const {
  fmt::print(out, "{}", render());
  std::fflush(out);
}

std::string human_bytes(unsigned long long bytes) {
  static constexpr const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024.0 && unit < 4) {
    value /= 1024.0;
    ++unit;
  }
  return unit == 0 ? fmt::format("{} B", bytes) : fmt::format("{:.1f} {}", value, units[unit]);
}

}  // namespace sagejit::tools
