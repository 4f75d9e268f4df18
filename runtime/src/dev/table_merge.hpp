#pragma once
// Writing tables back (the autotuner): deterministic, idempotent merge and byte-stable text, so a
// tuning run changes only the lines of the entries it touched (configs/README.md, "Byte-stable writing").
#include <string>

#include <nlohmann/json.hpp>

namespace sagejit {

// Merges `new_entries` ({"attention": [entry, ...], ...}: kernel family -> entries of schema 1) into
// `table` (a schema-1 table with "kernels"). Entries with an identical problem collapse into one: the
// winner is the measured one, then the lower time_us, then the smaller config (compared
// parameter by parameter in name order, numerically); the candidates of
// both are kept (distinct ones, sorted); remaining ties go to the entry's full text, so the result
// depends only on the set of entries: not on their order, nor on how they are split across merges
// (tests/test_tuning_merge.cpp checks every order). Entries are sorted by problem. The result is validated.
// Throws Error(config_error) naming "merge: table" / "merge: new entries" and the JSON pointer.
nlohmann::json merge_entries(const nlohmann::json& table, const nlohmann::json& new_entries);

// Keys sorted, 2-space indent, trailing newline.
std::string canonical_table_text(const nlohmann::json& table);

// Validates `table` (named by `path` in errors) and writes canonical_table_text atomically (temp file +
// rename). Throws Error(config_error) when invalid or when the file cannot be written.
void write_table(const std::string& path, const nlohmann::json& table);

}  // namespace sagejit
