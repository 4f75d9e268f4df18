#pragma once
// The final summary table every tool prints: a header row, aligned columns, numbers right-aligned.
#include <cstdio>
#include <string>
#include <vector>

namespace sagejit::tools {

class SummaryTable {
 public:
  enum class Align { left, right };
  struct Column {
    std::string header;
    Align align = Align::left;
  };

  explicit SummaryTable(std::vector<Column> columns);
  // Throws std::invalid_argument when the row has a different number of cells than there are columns.
  void add_row(std::vector<std::string> cells);
  bool empty() const { return rows_.empty(); }
  std::string render() const;  // header, a rule, the rows; each line ends with '\n'
  void print(std::FILE* out = stdout) const;

 private:
  std::vector<Column> columns_;
  std::vector<std::vector<std::string>> rows_;
};

// "1.5 KiB", "3.2 MiB", "17 B".
std::string human_bytes(unsigned long long bytes);

}  // namespace sagejit::tools
