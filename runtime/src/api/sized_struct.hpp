#pragma once
// Reading a C ABI struct that grows by appending fields and carries its own size in a leading
// `uint32_t struct_size` (sagejit_options): the one rule for every such struct.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "core/error.hpp"

namespace sagejit {

// The caller's struct over `defaults`: the caller's first `given->struct_size` bytes are copied (never
// more, so a smaller struct from older headers is read only as far as it goes); fields past them keep
// their defaults. Throws Error(invalid_argument) naming `name`.struct_size and the accepted range when
// struct_size is below `min_size` (the first version with struct_size) or above sizeof(Struct) (a
// newer struct than this library knows); `defaults_function` is named as the way to set it.
template <typename Struct>
Struct read_sized_struct(const Struct& given, std::size_t min_size, const Struct& defaults, const char* name,
                         const char* defaults_function) {
  static_assert(std::is_trivially_copyable_v<Struct> && std::is_standard_layout_v<Struct>);
  static_assert(offsetof(Struct, struct_size) == 0 && sizeof(given.struct_size) == sizeof(std::uint32_t));
  const std::uint32_t size = given.struct_size;
  if (size < min_size || size > sizeof(Struct))
    fail(ErrorCode::invalid_argument,
         "{}.struct_size is {}; accepted: {} to {} bytes (start from {}, which sets it, or set it to the sizeof of "
         "the struct in the headers compiled against)",
         name, size, min_size, sizeof(Struct), defaults_function);
  Struct result = defaults;
  std::memcpy(static_cast<void*>(&result), static_cast<const void*>(&given), size);
  return result;
}

}  // namespace sagejit
