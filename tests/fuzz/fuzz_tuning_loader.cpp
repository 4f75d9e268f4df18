// libFuzzer target for the tuning-table loader (built by tests/fuzz.cmake with SAGEJIT_FUZZ=ON, run by
// tools/scripts/run_fuzzers.sh). Any input must give a valid table or sagejit::Error(config_error);
// anything else (another exception, a crash, a sanitizer report) is a finding. A table that loads is
// also looked up and round-tripped through merge + canonical text, which must be a fixed point.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "dev/table_merge.hpp"
#include "tuning/tuning_table.hpp"

namespace {

void exercise(const sagejit::TableFile& file, const nlohmann::json& document) {
  if (!file.alias_of.empty()) return;
  sagejit::TuningTables tables;
  tables.add_layer({file});
  for (const auto& [kernel, table] : file.kernels) {
    (void)table;
    for (int n : {1, 1000, 4096, 1 << 30}) {
      sagejit::ProblemKey key{kernel, file.arch, sagejit::DType::bf16, 128, false, 1, n, 4096};
      tables.lookup(key);
      key.dtype = sagejit::DType::fp16;
      key.head_dim = 64;
      key.causal = true;
      key.gqa_ratio = 8;
      tables.lookup(key);
    }
  }
  const std::string text = sagejit::canonical_table_text(sagejit::merge_entries(document, nlohmann::json::object()));
  const std::string again = sagejit::canonical_table_text(
      sagejit::merge_entries(sagejit::parse_table_json(text, "round-trip"), nlohmann::json::object()));
  if (text != again) std::abort();  // merge + write must be idempotent
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    const nlohmann::json document = sagejit::parse_table_json(text, "fuzz.json");
    exercise(sagejit::validate_table(document, "fuzz.json"), document);
  } catch (const sagejit::Error& e) {
    if (e.code() != sagejit::ErrorCode::config_error) std::abort();
  }
  return 0;
}
