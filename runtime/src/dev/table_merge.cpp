#include "dev/table_merge.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <tuple>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.hpp"
#include "platform/safe_file.hpp"
#include "tuning/table_file.hpp"

namespace sagejit {
namespace {

using Json = nlohmann::json;

TileConfig config_of(const Json& config) {
  TileConfig out;
  for (const auto& [name, value] : config.items()) out.emplace(name, value.get<int>());
  return out;
}

// Duplicate rule: measured beats unmeasured, then lower time, then the smaller config (TileConfig order:
// parameter by parameter in name order, numerically); the full text
// breaks remaining ties so the winner never depends on the order entries arrive in.
auto entry_rank(const Json& entry) {
  const Json& measured = entry.at("measured");
  const bool is_measured = !measured.is_null();
  const double time = is_measured ? measured.at("time_us").get<double>() : 0.0;
  Json without_candidates = entry;
  without_candidates.erase("candidates");
  return std::tuple(!is_measured, time, config_of(entry.at("config")), without_candidates.dump());
}

auto candidate_rank(const Json& candidate) {
  const Json& time = candidate.at("time_us");
  return std::tuple(config_of(candidate.at("config")), time.is_null(),
                    time.is_null() ? 0.0 : time.get<double>(), candidate.dump());
}

// Sort order of entries: dtype, head_dim, causal, gqa_ratio (any first), seq_q, seq_kv (any first).
auto problem_rank(const Json& problem) {
  auto optional_int = [&](const char* key) { return problem.contains(key) ? problem.at(key).get<long long>() : 0LL; };
  auto optional_range = [&](const char* key) {
    return problem.contains(key) ? std::pair(problem.at(key)[0].get<long long>(), problem.at(key)[1].get<long long>())
                                 : std::pair(0LL, 0LL);
  };
  return std::tuple(problem.at("dtype").get<std::string>(), problem.at("head_dim").get<long long>(),
                    problem.at("causal").get<bool>(), optional_int("gqa_ratio"), optional_range("seq_q"),
                    optional_range("seq_kv"));
}

Json merged_entries(const Json& existing, const Json& added) {
  std::map<std::string, std::vector<const Json*>> by_problem;
  for (const Json* list : {&existing, &added})
    for (const Json& entry : *list) by_problem[entry.at("problem").dump()].push_back(&entry);

  std::vector<Json> result;
  for (const auto& [problem, group] : by_problem) {
    const Json* winner = *std::min_element(group.begin(), group.end(),
                                           [](const Json* a, const Json* b) { return entry_rank(*a) < entry_rank(*b); });
    std::map<std::string, Json> candidates;  // distinct candidates, keyed by their text
    for (const Json* entry : group)
      if (entry->contains("candidates"))
        for (const Json& candidate : entry->at("candidates")) candidates.emplace(candidate.dump(), candidate);
    std::vector<Json> sorted;
    for (auto& [text, candidate] : candidates) sorted.push_back(std::move(candidate));
    std::sort(sorted.begin(), sorted.end(),
              [](const Json& a, const Json& b) { return candidate_rank(a) < candidate_rank(b); });
    Json merged = *winner;
    merged.erase("candidates");
    if (!sorted.empty()) merged["candidates"] = sorted;
    result.push_back(std::move(merged));
  }
  std::sort(result.begin(), result.end(),
            [](const Json& a, const Json& b) { return problem_rank(a.at("problem")) < problem_rank(b.at("problem")); });
  return Json(result);
}

Json merge_validated(const Json& table, const Json& new_entries) {
  const TableFile parsed = validate_table(table, "merge: table");
  if (!parsed.alias_of.empty())
    fail(ErrorCode::config_error, "merge: table: /alias_of: cannot merge entries into an alias table (arch {} uses {})",
         parsed.arch, parsed.alias_of);
  if (!new_entries.is_object())
    fail(ErrorCode::config_error, "merge: new entries: /: expected an object of kernel name -> array of entries");
  // New entries are validated in place of the table's own, so errors carry the pointer they would have.
  Json candidate = table;
  for (const auto& [kernel, entries] : new_entries.items()) {
    if (!parsed.kernels.contains(kernel)) {
      std::vector<std::string> names;
      for (const auto& [name, t] : parsed.kernels) names.push_back(name);
      fail(ErrorCode::config_error, "merge: new entries: /{}: the table has no kernel \"{}\" (it has: {})", kernel, kernel,
           fmt::join(names, ", "));
    }
    candidate["kernels"][kernel]["entries"] = entries;
  }
  validate_table(candidate, "merge: new entries");

  Json result = table;
  for (const auto& [kernel, entries] : new_entries.items())
    result["kernels"][kernel]["entries"] = merged_entries(table.at("kernels").at(kernel).at("entries"), entries);
  // Tables without new entries are normalised too, so merging is idempotent from the first call.
  for (auto& [kernel, kernel_table] : result["kernels"].items())
    if (!new_entries.contains(kernel)) kernel_table["entries"] = merged_entries(kernel_table.at("entries"), Json::array());
  validate_table(result, "merge: result");
  return result;
}

}  // namespace

nlohmann::json merge_entries(const nlohmann::json& table, const nlohmann::json& new_entries) {
  try {
    return merge_validated(table, new_entries);
  } catch (const Json::exception& e) {
    // e.g. a string that is not UTF-8 (dump() cannot print it): the input is malformed, not the merge.
    fail(ErrorCode::config_error, "merge: {}", e.what());
  }
}

std::string canonical_table_text(const nlohmann::json& table) {
  // nlohmann::json keeps object keys in a std::map, so dump() is already key-sorted.
  return table.dump(2, ' ', false, nlohmann::json::error_handler_t::strict) + "\n";
}

void write_table(const std::string& path, const nlohmann::json& table) {
  validate_table(table, path);
  std::string text;
  try {
    text = canonical_table_text(table);
  } catch (const Json::exception& e) {
    fail(ErrorCode::config_error, "{}: cannot write the tuning table: {}", path, e.what());
  }
  // Atomically under an unpredictable temp name (O_EXCL|O_NOFOLLOW): a link planted at a predictable
  // "<out>.tmp.<pid>" once truncated a victim's file.
  write_file_atomically(path, std::span(reinterpret_cast<const std::byte*>(text.data()), text.size()), 0644,
                        ErrorCode::config_error);
}

}  // namespace sagejit
