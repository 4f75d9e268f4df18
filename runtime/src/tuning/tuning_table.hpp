#pragma once
// Tuning tables: problem key -> tile config, with the fallback level that matched
// (exact -> bucket -> nearest -> default). Schema, lookup rules and overlay precedence: configs/README.md.
//
//   const Lookup found = tuning_tables().lookup(key);   // throws Error(config_error) on a bad table
//   const KernelSpace& space = tuning_tables().space("attention", "gfx1201");   // for the autotuner
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/tile_config.hpp"
#include "tuning/miss_record.hpp"
#include "tuning/problem_key.hpp"
#include "tuning/table_file.hpp"

namespace sagejit {

struct Lookup {
  TileConfig config;
  MatchLevel level = MatchLevel::default_config;
  std::string source;   // the file that supplied the config ("configs/sm_90.json", an overlay path)
  std::string pointer;  // its JSON pointer there ("/kernels/attention/entries/2", ".../default")
};

// The loaded tables: layers of files, a later-added layer taking precedence over earlier ones.
class TuningTables {
 public:
  // Adds files with precedence over every layer added before (files of one layer have equal
  // precedence). Throws Error(config_error) when files of the layer contradict each other: an arch
  // both aliased and tabled, or one kernel with two different spaces/defaults.
  void add_layer(std::vector<TableFile> files);
  // Throws Error(config_error) when an alias names an arch without tables or another alias.
  void check_aliases() const;
  // Non-exact lookups are appended to this file (SAGEJIT_RECORD_MISSES).
  void record_misses_to(const std::string& path);

  // Throws Error(unsupported) when the arch or the kernel family has no table, Error(invalid_argument)
  // / Error(unsupported) for a key that cannot be looked up (see validate_problem_key).
  Lookup lookup(const ProblemKey& key) const;
  // Parameter space and default of a kernel for an arch (target suffixes after ':' and aliases are
  // resolved): the highest-precedence table's. Throws Error(unsupported) like lookup.
  const KernelSpace& space(std::string_view kernel, std::string_view arch) const;
  // Archs with a table or an alias, sorted.
  std::vector<std::string> archs() const;

 private:
  struct Located {
    int layer;
    const TableFile* file;
    const KernelTable* table;
  };
  std::string resolve_arch(std::string_view target) const;
  std::vector<Located> kernel_tables(std::string_view kernel, std::string_view target) const;

  std::vector<std::vector<TableFile>> layers_;
  std::shared_ptr<MissRecorder> misses_;
};

// The shipped tables (embedded at build time, named "configs/<file>") under the overlays of
// `config_path` (SAGEJIT_CONFIG_PATH syntax: ':'-separated files or dirs, earlier items win; a dir
// contributes its *.json files). Throws Error(config_error) naming the file at fault.
TuningTables load_tuning_tables(const std::optional<std::string>& config_path,
                                const std::optional<std::string>& record_misses = std::nullopt);

// The largest tuning-table file read (shipped tables are KiB; a large autotuned one a few MiB). A
// larger file, like one that is not a regular file (a FIFO, /dev/zero), is a config_error naming it.
inline constexpr std::size_t max_table_file_bytes = std::size_t{16} << 20;

// Files of one SAGEJIT_CONFIG_PATH item (a file, or a dir's *.json in name order), validated.
std::vector<TableFile> read_table_path_item(const std::string& item);

// Process-wide tables: shipped + SAGEJIT_CONFIG_PATH, misses to SAGEJIT_RECORD_MISSES, loaded on first
// use. While a table is bad every call throws the same Error(config_error) (never silently skipped).
const TuningTables& tuning_tables();

}  // namespace sagejit
