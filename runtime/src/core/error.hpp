#pragma once
// One exception type for the whole runtime. The code maps 1:1 onto the C ABI status codes, and the
// message always names the argument / call / file at fault and what would have been accepted.
#include <string>

#include <fmt/format.h>

// ErrorCode and Error are public (host applications catch them): <sagejit/error.hpp>.
#include "sagejit/error.hpp"

namespace sagejit {

// Throws Error(code, fmt::format(...)).
template <typename... Args>
[[noreturn]] void fail(ErrorCode code, fmt::format_string<Args...> format, Args&&... args) {
  throw Error(code, fmt::format(format, std::forward<Args>(args)...));
}

}  // namespace sagejit
