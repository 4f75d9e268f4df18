#pragma once
// One exception type for the whole runtime. The code maps 1:1 onto the C ABI status codes, and the
// message always names the argument / call / file at fault and what would have been accepted.
#include <stdexcept>
#include <string>

#include <fmt/format.h>

namespace sagejit {

enum class ErrorCode : int {
  invalid_argument = 1,   // a caller's argument is malformed (null pointer, shape mismatch, ...)
  unsupported = 2,        // well-formed but not supported (head_dim 96, fp32, arch without kernels)
  runtime_not_found = 3,  // no GPU runtime / compiler library could be loaded
  device_error = 4,       // a GPU runtime call failed
  compile_error = 5,      // a kernel failed to compile (message carries the log)
  cache_error = 6,        // the code-object cache could not be used
  config_error = 7,       // a tuning table is malformed
  internal = 8,           // a bug in sagejit
};

const char* to_string(ErrorCode code) noexcept;

class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, const std::string& message) : std::runtime_error(message), code_(code) {}
  ErrorCode code() const noexcept { return code_; }

 private:
  ErrorCode code_;
};

// Throws Error(code, fmt::format(...)).
template <typename... Args>
[[noreturn]] void fail(ErrorCode code, fmt::format_string<Args...> format, Args&&... args) {
  throw Error(code, fmt::format(format, std::forward<Args>(args)...));
}

}  // namespace sagejit
