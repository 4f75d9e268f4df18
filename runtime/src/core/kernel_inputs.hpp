#pragma once
// What the kernels take, written once: the table of every dtype a caller may name (the public
// DType, sagejit_dtype of <sagejit/sagejit.h>) with its name and size and whether the kernels are
// compiled for it, and the head dims the kernels are compiled for. Everything that lists dtypes or
// head dims (the plan, the descriptors' validation, the tuning tables, the tools) derives its list
// from here; the attention plan maps a call onto them (plan/attention_plan.hpp). Adding a dtype:
// docs/ARCHITECTURE.md, "Recipe: a new dtype".
#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sagejit/types.hpp"

namespace sagejit {

struct DTypeInfo {
  DType dtype;
  std::string_view name;     // in messages, tuning tables and tool arguments ("bf16")
  std::size_t element_size;  // bytes
  bool kernel_input;         // the kernels are compiled for it (SJ_DTYPE = the enum value)
};

inline constexpr DTypeInfo dtype_table[] = {
    {DType::bf16, "bf16", 2, true},      {DType::fp16, "fp16", 2, true},
    {DType::fp32, "fp32", 4, false},     {DType::fp64, "fp64", 8, false},
    {DType::int8, "int8", 1, false},     {DType::fp8_e4m3, "fp8_e4m3", 1, false},
};

// The table's entry of `dtype`; null for a value outside the enum.
const DTypeInfo* dtype_info(DType dtype) noexcept;
// The dtype of a name of the table ("bf16"), or nothing.
std::optional<DType> dtype_named(std::string_view name) noexcept;

// The dtypes the kernels are compiled for, in the table's order.
inline constexpr auto kernel_dtypes = [] {
  constexpr std::size_t count = [] {
    std::size_t n = 0;
    for (const DTypeInfo& info : dtype_table) n += info.kernel_input ? 1 : 0;
    return n;
  }();
  std::array<DType, count> dtypes{};
  std::size_t next = 0;
  for (const DTypeInfo& info : dtype_table)
    if (info.kernel_input) dtypes[next++] = info.dtype;
  return dtypes;
}();
bool is_kernel_dtype(DType dtype) noexcept;
bool is_kernel_dtype(int dtype) noexcept;  // a Specialization's dtype
// {"bf16", "fp16"}: the names of kernel_dtypes (tools' choices).
std::vector<std::string> kernel_dtype_names();
// "[bf16, fp16]", for messages; quoted ("[\"bf16\", \"fp16\"]") for messages about JSON values.
std::string kernel_dtypes_text();
std::string kernel_dtypes_quoted_text();
// The kernel dtype named `name`, or nothing (another table name, or none).
std::optional<DType> kernel_dtype_named(std::string_view name) noexcept;

// The head dims the kernels are compiled for.
inline constexpr int kernel_head_dims[] = {64, 128, 256};
bool is_kernel_head_dim(int head_dim) noexcept;
// "[64, 128, 256]", for messages.
std::string kernel_head_dims_text();

}  // namespace sagejit
