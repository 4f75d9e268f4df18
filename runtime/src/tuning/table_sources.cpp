// Where tables come from: the files embedded at build time, SAGEJIT_CONFIG_PATH overlays, and the
// process-wide instance built from both.
#include <algorithm>
#include <filesystem>
#include <system_error>

#include "core/env.hpp"
#include "core/error.hpp"
#include "core/log.hpp"
#include "core/embedded_file.hpp"
#include "platform/safe_file.hpp"
#include "tuning/tuning_table.hpp"

namespace sagejit {
namespace {

namespace fs = std::filesystem;

TableFile read_table_file(const fs::path& path) {
  // A regular file of bounded size: a FIFO would hang every process, /dev/zero would grow without end.
  return parse_table(read_regular_text_file(path, max_table_file_bytes, ErrorCode::config_error,
                                            "the size limit of a tuning table"),
                     path.string());
}

}  // namespace

std::vector<TableFile> read_table_path_item(const std::string& item) try {
  std::error_code ec;
  const fs::file_status status = fs::status(item, ec);
  if (ec || !fs::exists(status))
    fail(ErrorCode::config_error, "SAGEJIT_CONFIG_PATH: {}: no such file or directory (expected a tuning table or a "
         "directory of them)", item);
  std::vector<TableFile> files;
  if (fs::is_directory(status)) {
    std::vector<fs::path> paths;
    for (const fs::directory_entry& entry : fs::directory_iterator(item, ec))
      if (entry.path().extension() == ".json" && !entry.is_directory()) paths.push_back(entry.path());
    if (ec) fail(ErrorCode::config_error, "SAGEJIT_CONFIG_PATH: {}: cannot list the directory: {}", item, ec.message());
    std::sort(paths.begin(), paths.end());
    if (paths.empty()) log::warn("SAGEJIT_CONFIG_PATH: {}: directory holds no *.json tuning table", item);
    for (const fs::path& path : paths) files.push_back(read_table_file(path));
  } else {
    files.push_back(read_table_file(item));
  }
  return files;
} catch (const fs::filesystem_error& e) {
  fail(ErrorCode::config_error, "SAGEJIT_CONFIG_PATH: {}: {}", item, e.what());
}

TuningTables load_tuning_tables(const std::optional<std::string>& config_path,
                                const std::optional<std::string>& record_misses) {
  TuningTables tables;
  std::vector<TableFile> shipped;
  for (std::size_t i = 0; i < embedded_config_files_count; ++i) {
    const EmbeddedFile& file = embedded_config_files[i];
    shipped.push_back(parse_table(file.contents, std::string("configs/") + file.path));
  }
  tables.add_layer(std::move(shipped));

  std::vector<std::string> items;
  if (config_path) {
    std::string_view rest = *config_path;
    while (true) {
      const std::size_t colon = rest.find(':');
      const std::string_view item = rest.substr(0, colon);
      if (!item.empty()) items.emplace_back(item);
      if (colon == std::string_view::npos) break;
      rest.remove_prefix(colon + 1);
    }
  }
  // Earlier items win, so they are added last.
  for (auto item = items.rbegin(); item != items.rend(); ++item) {
    tables.add_layer(read_table_path_item(*item));
    log::info("tuning: overlay {} loaded", *item);
  }
  tables.check_aliases();
  if (record_misses) tables.record_misses_to(*record_misses);
  return tables;
}

const TuningTables& tuning_tables() {
  // A throwing initialiser leaves the static uninitialised, so every later call retries and throws
  // again: a bad overlay can never be skipped.
  static const TuningTables tables = load_tuning_tables(env::get("SAGEJIT_CONFIG_PATH"), env::get("SAGEJIT_RECORD_MISSES"));
  return tables;
}

}  // namespace sagejit
