#include "tuning/table_file.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <climits>
#include <filesystem>
#include <optional>
#include <set>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.hpp"
#include "core/kernel_inputs.hpp"
#include "core/target.hpp"

namespace sagejit {
namespace {

using Json = nlohmann::json;

// RFC 6901: '~' -> "~0", '/' -> "~1".
std::string pointer_token(std::string_view key) {
  std::string out;
  for (char c : key) {
    if (c == '~') out += "~0";
    else if (c == '/') out += "~1";
    else out += c;
  }
  return out;
}

// A JSON value as it appears in a message, shortened so a huge value cannot flood the log.
std::string shown(const Json& value) {
  std::string text = value.dump(-1, ' ', false, Json::error_handler_t::replace);
  if (text.size() > 60) text = text.substr(0, 57) + "...";
  return text;
}

std::string_view type_name(const Json& value) {
  if (value.is_number_integer()) return "an integer";
  if (value.is_number()) return "a number";
  if (value.is_string()) return "a string";
  if (value.is_boolean()) return "a boolean";
  if (value.is_null()) return "null";
  if (value.is_array()) return "an array";
  return "an object";
}

// Walks one document; every check reports "<source>: <pointer>: <message>".
class Validator {
 public:
  explicit Validator(std::string source) : source_(std::move(source)) {}

  template <typename... Args>
  [[noreturn]] void error(const std::string& pointer, fmt::format_string<Args...> f, Args&&... args) const {
    fail(ErrorCode::config_error, "{}: {}: {}", source_, pointer.empty() ? "/" : pointer,
         fmt::format(f, std::forward<Args>(args)...));
  }

  void expect_object(const Json& value, const std::string& pointer, std::string_view what) const {
    if (!value.is_object()) error(pointer, "expected {} (an object), found {} {}", what, type_name(value), shown(value));
  }

  // Every key must be one of `allowed`; every key in `required` must be present.
  void check_keys(const Json& object, const std::string& pointer, std::initializer_list<std::string_view> allowed,
                  std::initializer_list<std::string_view> required) const {
    for (const auto& [key, value] : object.items()) {
      (void)value;
      if (std::find(allowed.begin(), allowed.end(), key) == allowed.end())
        error(pointer, "unknown key \"{}\" (expected one of: {})", key, fmt::join(allowed, ", "));
    }
    for (const auto key : required)
      if (!object.contains(key)) error(pointer, "missing required key \"{}\"", key);
  }

  int integer(const Json& value, const std::string& pointer, long long min = INT_MIN, long long max = INT_MAX) const {
    long long number = 0;
    if (value.is_number_unsigned()) {
      const auto u = value.get<unsigned long long>();
      if (u > static_cast<unsigned long long>(LLONG_MAX)) error(pointer, "{} is out of range [{}, {}]", shown(value), min, max);
      number = static_cast<long long>(u);
    } else if (value.is_number_integer()) {
      number = value.get<long long>();
    } else {
      error(pointer, "expected an integer, found {} {}", type_name(value), shown(value));
    }
    if (number < min || number > max) error(pointer, "{} is out of range [{}, {}]", number, min, max);
    return static_cast<int>(number);
  }

  double number(const Json& value, const std::string& pointer, double min, bool min_exclusive) const {
    if (!value.is_number()) error(pointer, "expected a number, found {} {}", type_name(value), shown(value));
    const double x = value.get<double>();
    if (!std::isfinite(x) || x < min || (min_exclusive && x == min))
      error(pointer, "{} must be a finite number {} {}", shown(value), min_exclusive ? ">" : ">=", min);
    return x;
  }

  const std::string& string(const Json& value, const std::string& pointer) const {
    if (!value.is_string() || value.get_ref<const std::string&>().empty())
      error(pointer, "expected a non-empty string, found {} {}", value.is_string() ? "an empty string" : type_name(value),
            shown(value));
    return value.get_ref<const std::string&>();
  }

  std::string arch(const Json& value, const std::string& pointer) const {
    const std::string& name = string(value, pointer);
    if (!is_arch_name(name))
      error(pointer, "\"{}\" is not an arch name (expected sm_<digits> or gfx<hex digits>, e.g. sm_90, gfx1201)", name);
    return name;
  }

  KernelSpace space(const Json& kernel, const std::string& pointer) const {
    KernelSpace space;
    const std::string params_pointer = pointer + "/params";
    const Json& params = kernel.at("params");
    expect_object(params, params_pointer, "the parameter space");
    if (params.empty()) error(params_pointer, "expected at least one parameter");
    for (const auto& [name, values] : params.items()) {
      const std::string p = params_pointer + "/" + pointer_token(name);
      if (!values.is_array() || values.empty())
        error(p, "expected a non-empty array of integers, found {}", shown(values));
      std::vector<int> allowed;
      for (std::size_t i = 0; i < values.size(); ++i) {
        const int v = integer(values[i], fmt::format("{}/{}", p, i));
        if (std::find(allowed.begin(), allowed.end(), v) != allowed.end())
          error(fmt::format("{}/{}", p, i), "{} is listed twice (values must be distinct)", v);
        allowed.push_back(v);
      }
      space.params.emplace(name, std::move(allowed));
    }
    space.default_config = config(kernel.at("default"), pointer + "/default", space);
    return space;
  }

  // A config has exactly the space's parameter names, each value in that parameter's list.
  TileConfig config(const Json& value, const std::string& pointer, const KernelSpace& space) const {
    expect_object(value, pointer, "a config");
    TileConfig config;
    for (const auto& [name, v] : value.items()) {
      const auto allowed = space.params.find(name);
      if (allowed == space.params.end()) {
        std::vector<std::string> names;
        for (const auto& [n, values] : space.params) names.push_back(n);
        error(pointer, "unknown parameter \"{}\" (expected one of: {})", name, fmt::join(names, ", "));
      }
      const std::string p = pointer + "/" + pointer_token(name);
      const int x = integer(v, p);
      if (std::find(allowed->second.begin(), allowed->second.end(), x) == allowed->second.end())
        error(p, "{} is not one of [{}]", x, fmt::join(allowed->second, ", "));
      config.emplace(name, x);
    }
    for (const auto& [name, values] : space.params)
      if (!config.contains(name)) error(pointer, "missing parameter \"{}\" (one of [{}])", name, fmt::join(values, ", "));
    return config;
  }

  SeqRange range(const Json& value, const std::string& pointer) const {
    if (!value.is_array() || value.size() != 2)
      error(pointer, "expected an inclusive range [lo, hi] of two integers, found {}", shown(value));
    SeqRange r;
    r.lo = integer(value[0], pointer + "/0", 1, INT_MAX);
    r.hi = integer(value[1], pointer + "/1", 1, INT_MAX);
    if (r.lo > r.hi) error(pointer, "range [{}, {}] is empty (expected lo <= hi)", r.lo, r.hi);
    return r;
  }

  ProblemPattern problem(const Json& value, const std::string& pointer) const {
    expect_object(value, pointer, "a problem");
    check_keys(value, pointer, {"causal", "dtype", "gqa_ratio", "head_dim", "seq_kv", "seq_q"},
               {"dtype", "head_dim", "causal"});
    ProblemPattern problem;
    const Json& dtype = value.at("dtype");
    const std::optional<DType> kernel_dtype =
        dtype.is_string() ? kernel_dtype_named(dtype.get<std::string>()) : std::nullopt;
    if (!kernel_dtype) error(pointer + "/dtype", "{} is not one of {}", shown(dtype), kernel_dtypes_quoted_text());
    problem.dtype = *kernel_dtype;
    const int head_dim = integer(value.at("head_dim"), pointer + "/head_dim");
    if (!is_kernel_head_dim(head_dim)) error(pointer + "/head_dim", "{} is not one of {}", head_dim, kernel_head_dims_text());
    problem.head_dim = head_dim;
    const Json& causal = value.at("causal");
    if (!causal.is_boolean()) error(pointer + "/causal", "expected true or false, found {}", shown(causal));
    problem.causal = causal.get<bool>();
    if (value.contains("gqa_ratio")) problem.gqa_ratio = integer(value.at("gqa_ratio"), pointer + "/gqa_ratio", 1, INT_MAX);
    if (value.contains("seq_q")) problem.seq_q = range(value.at("seq_q"), pointer + "/seq_q");
    if (value.contains("seq_kv")) problem.seq_kv = range(value.at("seq_kv"), pointer + "/seq_kv");
    return problem;
  }

  Measurement measurement(const Json& value, const std::string& pointer) const {
    expect_object(value, pointer, "a measurement or null");
    check_keys(value, pointer, {"date", "device", "time_us", "tool", "tops"}, {"date", "device", "time_us", "tool", "tops"});
    Measurement m;
    m.device = string(value.at("device"), pointer + "/device");
    m.date = string(value.at("date"), pointer + "/date");
    if (!is_date(m.date)) error(pointer + "/date", "\"{}\" is not a date (expected YYYY-MM-DD)", m.date);
    m.tool = string(value.at("tool"), pointer + "/tool");
    m.time_us = number(value.at("time_us"), pointer + "/time_us", 0.0, true);
    m.tops = number(value.at("tops"), pointer + "/tops", 0.0, false);
    return m;
  }

  void candidate(const Json& value, const std::string& pointer, const KernelSpace& space) const {
    expect_object(value, pointer, "a candidate");
    check_keys(value, pointer, {"config", "reason", "time_us"}, {"config", "time_us"});
    config(value.at("config"), pointer + "/config", space);
    const Json& time = value.at("time_us");
    if (time.is_null()) {
      if (!value.contains("reason")) error(pointer, "missing required key \"reason\" (required when time_us is null)");
      string(value.at("reason"), pointer + "/reason");
    } else {
      number(time, pointer + "/time_us", 0.0, true);
      if (value.contains("reason")) error(pointer + "/reason", "not allowed when time_us is a number");
    }
  }

  TableEntry entry(const Json& value, const std::string& pointer, const KernelSpace& space) const {
    expect_object(value, pointer, "an entry");
    check_keys(value, pointer, {"candidates", "config", "measured", "problem", "reason"}, {"config", "measured", "problem"});
    TableEntry entry;
    entry.pointer = pointer;
    entry.problem = problem(value.at("problem"), pointer + "/problem");
    entry.config = config(value.at("config"), pointer + "/config", space);
    const Json& measured = value.at("measured");
    if (measured.is_null()) {
      if (!value.contains("reason"))
        error(pointer, "missing required key \"reason\" (an unmeasured entry must say why it has this config)");
      entry.reason = string(value.at("reason"), pointer + "/reason");
    } else {
      entry.measured = measurement(measured, pointer + "/measured");
      if (value.contains("reason")) error(pointer + "/reason", "not allowed when \"measured\" is given (only with null)");
    }
    if (value.contains("candidates")) {
      const Json& candidates = value.at("candidates");
      if (!candidates.is_array()) error(pointer + "/candidates", "expected an array, found {}", shown(candidates));
      for (std::size_t i = 0; i < candidates.size(); ++i)
        candidate(candidates[i], fmt::format("{}/candidates/{}", pointer, i), space);
    }
    return entry;
  }

  KernelTable kernel(const Json& value, const std::string& pointer) const {
    expect_object(value, pointer, "a kernel table");
    check_keys(value, pointer, {"default", "entries", "params"}, {"default", "entries", "params"});
    KernelTable table;
    table.space = space(value, pointer);
    const Json& entries = value.at("entries");
    if (!entries.is_array()) error(pointer + "/entries", "expected an array, found {} {}", type_name(entries), shown(entries));
    for (std::size_t i = 0; i < entries.size(); ++i)
      table.entries.push_back(entry(entries[i], fmt::format("{}/entries/{}", pointer, i), table.space));
    return table;
  }

  TableFile file(const Json& document) const {
    expect_object(document, "", "a tuning table");
    check_keys(document, "", {"alias_of", "arch", "kernels", "schema"}, {"arch", "schema"});
    const Json& schema = document.at("schema");
    if (!schema.is_number_integer() || schema.get<long long>() != tuning_schema_version)
      error("/schema", "{} is not a supported schema version (expected {})", shown(schema), tuning_schema_version);
    TableFile file;
    file.source = source_;
    file.arch = arch(document.at("arch"), "/arch");
    const std::string stem = std::filesystem::path(source_).stem().string();
    if (is_arch_name(stem) && stem != file.arch)
      error("/arch", "\"{}\" does not match the file name (expected \"{}\")", file.arch, stem);
    const bool has_kernels = document.contains("kernels");
    const bool has_alias = document.contains("alias_of");
    if (has_kernels == has_alias)
      error("", "expected exactly one of \"kernels\" (the tables) and \"alias_of\" (an arch whose tables to use)");
    if (has_alias) {
      file.alias_of = arch(document.at("alias_of"), "/alias_of");
      if (file.alias_of == file.arch) error("/alias_of", "\"{}\" aliases itself (expected another arch)", file.arch);
      return file;
    }
    const Json& kernels = document.at("kernels");
    expect_object(kernels, "/kernels", "an object of kernel tables");
    for (const auto& [name, table] : kernels.items()) {
      if (name.empty()) error("/kernels", "a kernel name is empty");
      file.kernels.emplace(name, kernel(table, "/kernels/" + pointer_token(name)));
    }
    return file;
  }

 private:
  static bool is_date(std::string_view s) {
    if (s.size() != 10 || s[4] != '-' || s[7] != '-') return false;
    for (std::size_t i : {0, 1, 2, 3, 5, 6, 8, 9})
      if (!std::isdigit(static_cast<unsigned char>(s[i]))) return false;
    const int month = (s[5] - '0') * 10 + (s[6] - '0');
    const int day = (s[8] - '0') * 10 + (s[9] - '0');
    return month >= 1 && month <= 12 && day >= 1 && day <= 31;
  }

  std::string source_;
};

}  // namespace

bool is_arch_name(std::string_view name) {
  // A target of core/target's forms without feature suffixes: a table names a processor.
  return is_nvidia_target(name) || (is_amd_target(name) && target_arch(name) == name);
}

nlohmann::json parse_table_json(std::string_view text, const std::string& source) {
  // nlohmann keeps the last of duplicate keys; a duplicated key in a hand-edited table is a mistake
  // that would silently drop a value, so the callback tracks the keys of every open object.
  std::vector<std::set<std::string>> open_objects;
  // Nesting is bounded too: a table is 8 levels deep, and a pathological depth would only exhaust the
  // stack of the recursive printers later.
  constexpr int max_depth = 32;
  const Json::parser_callback_t reject_duplicates = [&](int depth, Json::parse_event_t event, Json& parsed) {
    if (depth > max_depth)
      fail(ErrorCode::config_error, "{}: malformed JSON: nested deeper than {} levels", source, max_depth);
    switch (event) {
      case Json::parse_event_t::object_start: open_objects.emplace_back(); break;
      case Json::parse_event_t::object_end:
        if (!open_objects.empty()) open_objects.pop_back();
        break;
      case Json::parse_event_t::key:
        if (!open_objects.empty() && !open_objects.back().insert(parsed.get<std::string>()).second)
          fail(ErrorCode::config_error, "{}: malformed JSON: object key \"{}\" appears twice", source,
               parsed.get<std::string>());
        break;
      default: break;
    }
    return true;
  };
  try {
    return Json::parse(text.begin(), text.end(), reject_duplicates);
  } catch (const Json::exception& e) {
    fail(ErrorCode::config_error, "{}: malformed JSON: {}", source, e.what());
  }
}

TableFile validate_table(const nlohmann::json& document, const std::string& source) {
  try {
    return Validator(source).file(document);
  } catch (const Json::exception& e) {
    // Unreachable by design (every access is checked first); kept so a missed check is an Error, not a crash.
    fail(ErrorCode::config_error, "{}: invalid table: {}", source, e.what());
  }
}

TableFile parse_table(std::string_view text, const std::string& source) {
  return validate_table(parse_table_json(text, source), source);
}

}  // namespace sagejit
