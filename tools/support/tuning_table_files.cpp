#include "support/tuning_table_files.hpp"

#include "core/env.hpp"
#include "core/embedded_file.hpp"
#include "tuning/tuning_table.hpp"

namespace sagejit::tools {

std::vector<LoadedTableFile> loaded_table_files() {
  std::vector<LoadedTableFile> files;
  for (std::size_t i = 0; i < embedded_config_files_count; ++i) {
    const EmbeddedFile& file = embedded_config_files[i];
    files.push_back({parse_table(file.contents, std::string("configs/") + file.path), false});
  }
  if (const auto path = env::get("SAGEJIT_CONFIG_PATH")) {
    std::string_view rest = *path;
    while (true) {
      const std::size_t colon = rest.find(':');
      const std::string item(rest.substr(0, colon));
      if (!item.empty())
        for (TableFile& table : read_table_path_item(item)) files.push_back({std::move(table), true});
      if (colon == std::string_view::npos) break;
      rest.remove_prefix(colon + 1);
    }
  }
  return files;
}

std::string resolve_table_arch(const std::vector<LoadedTableFile>& files, const std::string& arch) {
  for (const LoadedTableFile& file : files)
    if (file.table.arch == arch && !file.table.alias_of.empty()) return file.table.alias_of;
  return arch;
}

std::vector<TableEntry> table_entries(const std::vector<LoadedTableFile>& files, const std::string& family,
                                      const std::string& arch) {
  const std::string resolved = resolve_table_arch(files, arch);
  std::vector<TableEntry> entries;
  for (const LoadedTableFile& file : files) {
    if (file.table.arch != resolved) continue;
    const auto kernel = file.table.kernels.find(family);
    if (kernel == file.table.kernels.end()) continue;
    entries.insert(entries.end(), kernel->second.entries.begin(), kernel->second.entries.end());
  }
  return entries;
}

std::vector<TileConfig> all_configs(const KernelSpace& space) {
  std::vector<TileConfig> configs{TileConfig{}};
  for (const auto& [name, values] : space.params) {
    std::vector<TileConfig> next;
    for (const TileConfig& partial : configs)
      for (int value : values) {
        TileConfig config = partial;
        config[name] = value;
        next.push_back(std::move(config));
      }
    configs = std::move(next);
  }
  return configs;
}

bool matches_every_call(const ProblemPattern& problem) {
  return !problem.gqa_ratio && !problem.seq_q && !problem.seq_kv;
}

}  // namespace sagejit::tools
