#include "tuning/problem_key.hpp"

#include <algorithm>
#include <iterator>
#include <optional>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.hpp"
#include "core/kernel_inputs.hpp"
#include "core/target.hpp"

namespace sagejit {

std::string_view to_string(MatchLevel level) noexcept {
  switch (level) {
    case MatchLevel::exact: return "exact";
    case MatchLevel::bucket: return "bucket";
    case MatchLevel::nearest: return "nearest";
    case MatchLevel::default_config: return "default";
  }
  return "unknown";
}

std::string arch_of_target(std::string_view target) { return std::string(target_arch(target)); }

void validate_problem_key(const ProblemKey& key) {
  if (key.kernel.empty()) fail(ErrorCode::invalid_argument, "tuning lookup: kernel is empty");
  if (arch_of_target(key.arch).empty())
    fail(ErrorCode::invalid_argument, "tuning lookup: arch '{}' names no arch (expected e.g. gfx1201, sm_90)", key.arch);
  if (!is_kernel_dtype(key.dtype))
    fail(ErrorCode::unsupported, "tuning lookup: dtype {} is not one of {}", to_string(key.dtype), kernel_dtypes_text());
  if (key.head_dim < 1) fail(ErrorCode::invalid_argument, "tuning lookup: head_dim {} must be >= 1", key.head_dim);
  if (key.gqa_ratio < 1) fail(ErrorCode::invalid_argument, "tuning lookup: gqa_ratio {} must be >= 1", key.gqa_ratio);
  if (key.seq_q < 1) fail(ErrorCode::invalid_argument, "tuning lookup: seq_q {} must be >= 1", key.seq_q);
  if (key.seq_kv < 1) fail(ErrorCode::invalid_argument, "tuning lookup: seq_kv {} must be >= 1", key.seq_kv);
}

nlohmann::json problem_key_to_json(const ProblemKey& key) {
  return nlohmann::json{{"kernel", key.kernel},       {"arch", arch_of_target(key.arch)},
                        {"dtype", to_string(key.dtype)}, {"head_dim", key.head_dim},
                        {"causal", key.causal},       {"gqa_ratio", key.gqa_ratio},
                        {"seq_q", key.seq_q},         {"seq_kv", key.seq_kv}};
}

namespace {

int int_field(const nlohmann::json& json, const char* name, const std::string& where) {
  const auto it = json.find(name);
  if (it == json.end() || !it->is_number_integer())
    fail(ErrorCode::config_error, "{}: /{}: expected an integer", where, name);
  const auto value = it->get<long long>();
  if (value < 1 || value > 0x7fffffff)
    fail(ErrorCode::config_error, "{}: /{}: {} is out of range (expected 1..2147483647)", where, name, value);
  return static_cast<int>(value);
}

std::string string_field(const nlohmann::json& json, const char* name, const std::string& where) {
  const auto it = json.find(name);
  if (it == json.end() || !it->is_string() || it->get_ref<const std::string&>().empty())
    fail(ErrorCode::config_error, "{}: /{}: expected a non-empty string", where, name);
  return it->get<std::string>();
}

}  // namespace

ProblemKey problem_key_from_json(const nlohmann::json& json, const std::string& where) {
  if (!json.is_object()) fail(ErrorCode::config_error, "{}: expected a JSON object (a problem key)", where);
  static constexpr const char* known[] = {"arch", "causal", "dtype", "gqa_ratio", "head_dim", "kernel", "seq_kv", "seq_q"};
  for (const auto& [name, value] : json.items()) {
    (void)value;
    if (std::find(std::begin(known), std::end(known), name) == std::end(known))
      fail(ErrorCode::config_error, "{}: unknown key \"{}\" (expected one of: {})", where, name, fmt::join(known, ", "));
  }
  ProblemKey key;
  key.kernel = string_field(json, "kernel", where);
  key.arch = string_field(json, "arch", where);
  const std::string dtype = string_field(json, "dtype", where);
  const std::optional<DType> kernel_dtype = kernel_dtype_named(dtype);
  if (!kernel_dtype)
    fail(ErrorCode::config_error, "{}: /dtype: \"{}\" is not one of {}", where, dtype, kernel_dtypes_quoted_text());
  key.dtype = *kernel_dtype;
  key.head_dim = int_field(json, "head_dim", where);
  const auto causal = json.find("causal");
  if (causal == json.end() || !causal->is_boolean()) fail(ErrorCode::config_error, "{}: /causal: expected a boolean", where);
  key.causal = causal->get<bool>();
  key.gqa_ratio = int_field(json, "gqa_ratio", where);
  key.seq_q = int_field(json, "seq_q", where);
  key.seq_kv = int_field(json, "seq_kv", where);
  return key;
}

std::string describe(const ProblemKey& key) {
  return fmt::format("{} {} {} d{} causal={} gqa={} q={} kv={}", key.kernel, key.arch, to_string(key.dtype), key.head_dim,
                     key.causal ? 1 : 0, key.gqa_ratio, key.seq_q, key.seq_kv);
}

}  // namespace sagejit
