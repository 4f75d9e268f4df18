#include "core/kernel_inputs.hpp"

#include <algorithm>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "sagejit/sagejit.h"

namespace sagejit {

const DTypeInfo* dtype_info(DType dtype) noexcept {
  for (const DTypeInfo& info : dtype_table)
    if (info.dtype == dtype) return &info;
  return nullptr;
}

std::optional<DType> dtype_named(std::string_view name) noexcept {
  for (const DTypeInfo& info : dtype_table)
    if (info.name == name) return info.dtype;
  return std::nullopt;
}

// The public API's names and sizes (sagejit/types.hpp) are the table's.
std::string_view to_string(DType dtype) noexcept {
  const DTypeInfo* info = dtype_info(dtype);
  return info != nullptr ? info->name : "unknown";
}

std::size_t element_size(DType dtype) noexcept {
  const DTypeInfo* info = dtype_info(dtype);
  return info != nullptr ? info->element_size : 0;
}

bool is_kernel_dtype(DType dtype) noexcept { return std::ranges::find(kernel_dtypes, dtype) != kernel_dtypes.end(); }

bool is_kernel_dtype(int dtype) noexcept { return is_kernel_dtype(static_cast<DType>(dtype)); }

namespace {

std::string kernel_dtype_list(std::string_view quote) {
  std::vector<std::string> names = kernel_dtype_names();
  for (std::string& name : names) name = fmt::format("{}{}{}", quote, name, quote);
  return fmt::format("[{}]", fmt::join(names, ", "));
}

// The table lists every DType in enum order (its index is the value) and ends where the C ABI's
// sagejit_dtype does (api/c_api.cpp checks the values).
constexpr bool table_in_enum_order() {
  for (std::size_t i = 0; i < std::size(dtype_table); ++i)
    if (static_cast<std::size_t>(dtype_table[i].dtype) != i) return false;
  return true;
}
static_assert(table_in_enum_order());
static_assert(std::size(dtype_table) == SAGEJIT_DTYPE_FP8_E4M3 + 1);

}  // namespace

std::vector<std::string> kernel_dtype_names() {
  std::vector<std::string> names;
  for (const DType dtype : kernel_dtypes) names.emplace_back(to_string(dtype));
  return names;
}

std::string kernel_dtypes_text() { return kernel_dtype_list(""); }

std::string kernel_dtypes_quoted_text() { return kernel_dtype_list("\""); }

std::optional<DType> kernel_dtype_named(std::string_view name) noexcept {
  const std::optional<DType> dtype = dtype_named(name);
  if (dtype && is_kernel_dtype(*dtype)) return dtype;
  return std::nullopt;
}

bool is_kernel_head_dim(int head_dim) noexcept {
  return std::ranges::find(kernel_head_dims, head_dim) != std::end(kernel_head_dims);
}

std::string kernel_head_dims_text() { return fmt::format("[{}]", fmt::join(kernel_head_dims, ", ")); }

}  // namespace sagejit
