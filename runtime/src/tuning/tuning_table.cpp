#include "tuning/tuning_table.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.hpp"
#include "core/log.hpp"

namespace sagejit {
namespace {

bool contains(const std::optional<SeqRange>& range, int n) { return !range || (range->lo <= n && n <= range->hi); }

// The power-of-two bucket of a length: [2^(k-1) + 1, 2^k] with 2^k the smallest power of two >= n.
SeqRange bucket_of(int n) {
  if (n <= 1) return {1, 1};
  std::int64_t power = 1;
  while (power < n) power *= 2;
  // power <= 2^31 here; hi is clamped to the int range (lengths are ints).
  return {static_cast<int>(power / 2 + 1), static_cast<int>(std::min<std::int64_t>(power, INT32_MAX))};
}

bool intersects(const std::optional<SeqRange>& range, const SeqRange& bucket) {
  return !range || (range->lo <= bucket.hi && bucket.lo <= range->hi);
}

// log2 distance from n to a range (0 inside it or when the range is "any").
double log_distance(const std::optional<SeqRange>& range, int n) {
  if (!range || contains(range, n)) return 0.0;
  return n < range->lo ? std::log2(range->lo) - std::log2(n) : std::log2(n) - std::log2(range->hi);
}

double log_width(const std::optional<SeqRange>& range) {
  return range ? std::log2(range->hi) - std::log2(range->lo) : 0.0;
}

// One entry's standing for a key; `better` orders candidates as configs/README.md says.
struct Candidate {
  MatchLevel level;
  double shape_distance = 0;
  double gqa_distance = 0;
  int layer = 0;
  int wildcards = 0;
  double width = 0;
  bool measured = false;
  double time_us = 0;
  const TileConfig* config = nullptr;
  const TableFile* file = nullptr;
  std::size_t index = 0;
  const TableEntry* entry = nullptr;
};

bool better(const Candidate& a, const Candidate& b) {
  if (a.level != b.level) return a.level < b.level;
  if (a.shape_distance != b.shape_distance) return a.shape_distance < b.shape_distance;
  if (a.gqa_distance != b.gqa_distance) return a.gqa_distance < b.gqa_distance;
  if (a.layer != b.layer) return a.layer > b.layer;
  if (a.wildcards != b.wildcards) return a.wildcards < b.wildcards;
  if (a.width != b.width) return a.width < b.width;
  if (a.measured != b.measured) return a.measured;
  if (a.measured && a.time_us != b.time_us) return a.time_us < b.time_us;
  if (*a.config != *b.config) return *a.config < *b.config;  // parameter by parameter, numerically
  if (a.file->source != b.file->source) return a.file->source < b.file->source;
  return a.index < b.index;
}

std::optional<Candidate> rank(const TableEntry& entry, const ProblemKey& key) {
  const ProblemPattern& p = entry.problem;
  if (p.dtype != key.dtype || p.head_dim != key.head_dim || p.causal != key.causal) return std::nullopt;
  Candidate c;
  const bool gqa_equal = !p.gqa_ratio || *p.gqa_ratio == key.gqa_ratio;
  if (gqa_equal && contains(p.seq_q, key.seq_q) && contains(p.seq_kv, key.seq_kv)) {
    c.level = MatchLevel::exact;
  } else if (gqa_equal && intersects(p.seq_q, bucket_of(key.seq_q)) && intersects(p.seq_kv, bucket_of(key.seq_kv))) {
    c.level = MatchLevel::bucket;
  } else {
    c.level = MatchLevel::nearest;
    c.shape_distance = log_distance(p.seq_q, key.seq_q) + log_distance(p.seq_kv, key.seq_kv);
    c.gqa_distance = p.gqa_ratio ? std::fabs(std::log2(*p.gqa_ratio) - std::log2(key.gqa_ratio)) : 0.0;
  }
  c.wildcards = int(!p.gqa_ratio) + int(!p.seq_q) + int(!p.seq_kv);
  c.width = log_width(p.seq_q) + log_width(p.seq_kv);
  c.measured = entry.measured.has_value();
  c.time_us = entry.measured ? entry.measured->time_us : 0.0;
  c.config = &entry.config;
  c.entry = &entry;
  return c;
}

}  // namespace

void TuningTables::add_layer(std::vector<TableFile> files) {
  std::sort(files.begin(), files.end(), [](const TableFile& a, const TableFile& b) { return a.source < b.source; });
  // Files of one layer have equal precedence, so they must not contradict each other.
  std::map<std::string, const TableFile*> alias_by_arch, tables_by_arch;
  std::map<std::pair<std::string, std::string>, const TableFile*> kernel_owner;
  for (const TableFile& file : files) {
    if (!file.alias_of.empty()) {
      const auto [it, added] = alias_by_arch.emplace(file.arch, &file);
      if (!added && it->second->alias_of != file.alias_of)
        fail(ErrorCode::config_error, "{}: /alias_of: \"{}\" contradicts {} (alias_of \"{}\") for arch {}", file.source,
             file.alias_of, it->second->source, it->second->alias_of, file.arch);
    } else {
      tables_by_arch.emplace(file.arch, &file);
      for (const auto& [kernel, table] : file.kernels) {
        const auto [it, added] = kernel_owner.emplace(std::pair(file.arch, kernel), &file);
        if (!added && !(it->second->kernels.at(kernel).space == table.space))
          fail(ErrorCode::config_error,
               "{}: /kernels/{}: params/default differ from {} for arch {} (files of one SAGEJIT_CONFIG_PATH item "
               "must agree on a kernel's space)",
               file.source, kernel, it->second->source, file.arch);
      }
    }
    if (alias_by_arch.contains(file.arch) && tables_by_arch.contains(file.arch))
      fail(ErrorCode::config_error, "{}: arch {} is both an alias ({}) and a table ({}) in one layer", file.source,
           file.arch, alias_by_arch.at(file.arch)->source, tables_by_arch.at(file.arch)->source);
  }
  layers_.push_back(std::move(files));
}

void TuningTables::record_misses_to(const std::string& path) { misses_ = std::make_shared<MissRecorder>(path); }

std::vector<std::string> TuningTables::archs() const {
  std::set<std::string> names;
  for (const auto& layer : layers_)
    for (const auto& file : layer) names.insert(file.arch);
  return {names.begin(), names.end()};
}

std::string TuningTables::resolve_arch(std::string_view target) const {
  const std::string arch = arch_of_target(target);
  // The highest-precedence layer that mentions an arch decides whether it is an alias.
  for (auto layer = layers_.rbegin(); layer != layers_.rend(); ++layer) {
    for (const TableFile& file : *layer) {
      if (file.arch != arch) continue;
      if (file.alias_of.empty()) return arch;
      for (auto target_layer = layers_.rbegin(); target_layer != layers_.rend(); ++target_layer)
        for (const TableFile& candidate : *target_layer)
          if (candidate.arch == file.alias_of) {
            if (!candidate.alias_of.empty())
              fail(ErrorCode::config_error, "{}: /alias_of: \"{}\" is itself an alias (of \"{}\" in {}); expected an arch with tables",
                   file.source, file.alias_of, candidate.alias_of, candidate.source);
            return file.alias_of;
          }
      fail(ErrorCode::config_error, "{}: /alias_of: no table for arch \"{}\" (tables exist for: {})", file.source,
           file.alias_of, fmt::join(archs(), ", "));
    }
  }
  fail(ErrorCode::unsupported, "tuning: no tuning table for arch '{}' (tables exist for: {})", arch, fmt::join(archs(), ", "));
}

void TuningTables::check_aliases() const {
  for (const std::string& arch : archs()) resolve_arch(arch);
}

std::vector<TuningTables::Located> TuningTables::kernel_tables(std::string_view kernel, std::string_view target) const {
  const std::string arch = resolve_arch(target);
  std::vector<Located> found;
  std::set<std::string> families;
  for (int layer = static_cast<int>(layers_.size()) - 1; layer >= 0; --layer)
    for (const TableFile& file : layers_[layer]) {
      if (file.arch != arch || !file.alias_of.empty()) continue;
      for (const auto& [name, table] : file.kernels) {
        families.insert(name);
        if (name == kernel) found.push_back({layer, &file, &table});
      }
    }
  if (found.empty())
    fail(ErrorCode::unsupported, "tuning: no table for kernel '{}' on arch '{}' (kernels with tables: {})", kernel, arch,
         fmt::join(families, ", "));
  return found;
}

const KernelSpace& TuningTables::space(std::string_view kernel, std::string_view arch) const {
  return kernel_tables(kernel, arch).front().table->space;
}

Lookup TuningTables::lookup(const ProblemKey& key) const {
  validate_problem_key(key);
  const std::vector<Located> tables = kernel_tables(key.kernel, key.arch);
  std::optional<Candidate> best;
  for (const Located& located : tables)
    for (std::size_t i = 0; i < located.table->entries.size(); ++i) {
      std::optional<Candidate> c = rank(located.table->entries[i], key);
      if (!c) continue;
      c->layer = located.layer;
      c->file = located.file;
      c->index = i;
      if (!best || better(*c, *best)) best = std::move(c);
    }
  Lookup result;
  if (best) {
    result = {best->entry->config, best->level, best->file->source, best->entry->pointer};
  } else {
    const Located& top = tables.front();
    result = {top.table->space.default_config, MatchLevel::default_config, top.file->source,
              fmt::format("/kernels/{}/default", key.kernel)};
  }
  log::info("tuning: {} -> {} {} ({}#{})", describe(key), to_string(result.level), config_id(result.config),
            result.source, result.pointer);
  if (misses_ && result.level != MatchLevel::exact) misses_->record(key);
  return result;
}

}  // namespace sagejit
