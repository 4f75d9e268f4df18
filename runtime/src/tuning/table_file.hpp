#pragma once
// One tuning-table file (configs/<arch>.json or a user overlay), parsed and validated against schema 1
// (configs/README.md). Every validation error names the file, the JSON pointer and what was expected.
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/tile_config.hpp"
#include "sagejit/types.hpp"

namespace sagejit {

inline constexpr int tuning_schema_version = 1;

// Inclusive range of sequence lengths.
struct SeqRange {
  int lo = 1;
  int hi = 1;
};

// The calls an entry applies to; an absent optional field means "any".
struct ProblemPattern {
  DType dtype = DType::bf16;
  int head_dim = 128;
  bool causal = false;
  std::optional<int> gqa_ratio;
  std::optional<SeqRange> seq_q;
  std::optional<SeqRange> seq_kv;
};

struct Measurement {
  std::string device;
  std::string date;  // YYYY-MM-DD
  std::string tool;
  double time_us = 0;
  double tops = 0;
};

struct TableEntry {
  ProblemPattern problem;
  TileConfig config;
  std::optional<Measurement> measured;  // empty: not measured, `reason` says why
  std::string reason;
  std::string pointer;  // JSON pointer of the entry in its file, e.g. "/kernels/attention/entries/3"
};

// A kernel's parameter space (the autotuner's candidates) and its default config.
struct KernelSpace {
  std::map<std::string, std::vector<int>> params;
  TileConfig default_config;
  bool operator==(const KernelSpace&) const = default;
};

struct KernelTable {
  KernelSpace space;
  std::vector<TableEntry> entries;
};

struct TableFile {
  std::string source;    // file name used in messages ("configs/sm_90.json", "/home/u/tune.json")
  std::string arch;
  std::string alias_of;  // non-empty: this arch uses alias_of's tables and `kernels` is empty
  std::map<std::string, KernelTable> kernels;
};

// Parses JSON text, rejecting duplicate object keys; errors carry the line/column of the fault.
// Throws Error(config_error) "<source>: malformed JSON: ...".
nlohmann::json parse_table_json(std::string_view text, const std::string& source);

// Validates a parsed document against schema 1. Throws Error(config_error)
// "<source>: <json pointer>: <what was found and what was expected>".
TableFile validate_table(const nlohmann::json& document, const std::string& source);

// parse_table_json + validate_table.
TableFile parse_table(std::string_view text, const std::string& source);

// True for a processor name in core/target's forms, without feature suffixes ("sm_90a", "gfx1201").
bool is_arch_name(std::string_view name);

}  // namespace sagejit
