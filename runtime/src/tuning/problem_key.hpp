#pragma once
// What the tuning tables are asked: one kernel call's problem, and how well the answer matched.
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "sagejit/types.hpp"

namespace sagejit {

struct ProblemKey {
  std::string kernel;  // kernel family: "attention" | "prepare"
  std::string arch;    // target; the part before ':' is used ("gfx1201:xnack-" -> "gfx1201")
  DType dtype = DType::bf16;
  int head_dim = 128;
  bool causal = false;
  int gqa_ratio = 1;   // query heads per kv head
  int seq_q = 0;       // Nq
  int seq_kv = 0;      // Nk

  bool operator==(const ProblemKey&) const = default;
};

// The fallback level that supplied a config (configs/README.md, "Lookup"). Ordered best first.
enum class MatchLevel : int { exact = 0, bucket = 1, nearest = 2, default_config = 3 };

std::string_view to_string(MatchLevel level) noexcept;  // "exact" | "bucket" | "nearest" | "default"

// "gfx1201:sramecc-:xnack-" -> "gfx1201".
std::string arch_of_target(std::string_view target);

// Throws Error(invalid_argument) naming the field when the key cannot be looked up (dtype other than
// bf16/fp16, head_dim/gqa_ratio/seq lengths < 1, empty kernel or arch).
void validate_problem_key(const ProblemKey& key);

// One line of SAGEJIT_RECORD_MISSES: {"arch":..,"causal":..,"dtype":"bf16",...} (keys sorted).
nlohmann::json problem_key_to_json(const ProblemKey& key);
// Inverse of problem_key_to_json; throws Error(config_error) prefixed with `where` on a bad object.
ProblemKey problem_key_from_json(const nlohmann::json& json, const std::string& where);

// "attention gfx1201 bf16 d128 causal=0 gqa=1 q=4096 kv=4096", for logs and messages.
std::string describe(const ProblemKey& key);

}  // namespace sagejit
