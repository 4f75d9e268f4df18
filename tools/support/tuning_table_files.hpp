#pragma once
// The tuning-table files the runtime would load (shipped + SAGEJIT_CONFIG_PATH overlays), read as
// files so the tools can see what TuningTables does not expose: each file's entries (precompile
// compiles their configs; sagejit-info counts them).
#include <string>
#include <vector>

#include "tuning/table_file.hpp"

namespace sagejit::tools {

struct LoadedTableFile {
  TableFile table;
  bool overlay = false;  // from SAGEJIT_CONFIG_PATH
};

// Shipped (embedded) tables, then the overlays of SAGEJIT_CONFIG_PATH. Throws Error(config_error) like
// the runtime does for a bad table.
std::vector<LoadedTableFile> loaded_table_files();

// The arch whose tables `arch` uses (follows alias_of), or `arch` itself.
std::string resolve_table_arch(const std::vector<LoadedTableFile>& files, const std::string& arch);

// Every entry of `family` for `arch` (alias resolved) in every loaded file.
std::vector<TableEntry> table_entries(const std::vector<LoadedTableFile>& files, const std::string& family,
                                      const std::string& arch);

// Whether an entry's problem matches every call of its dtype, head dim and causal flag (no GQA or
// length range): where one does, the table's default is never used for those calls (at D=256 the
// attention default is not even valid), so the tools do not build or price it there.
bool matches_every_call(const ProblemPattern& problem);

// Every combination of a kernel's parameter space, in a deterministic order (parameters by name,
// values as listed).
std::vector<TileConfig> all_configs(const KernelSpace& space);

}  // namespace sagejit::tools
