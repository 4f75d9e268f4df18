#pragma once
// The one exception type of sagejit, public so that host applications can catch it across the shared
// library boundary (its type info is exported). ErrorCode maps 1:1 onto the C ABI's sagejit_status.
#include <stdexcept>
#include <string>

#include "sagejit/export.hpp"

namespace sagejit {

enum class ErrorCode : int {
  invalid_argument = 1,   // a caller's argument is malformed (null pointer, shape mismatch, ...)
  unsupported = 2,        // well-formed but not supported (head_dim 100, fp32, arch without kernels)
  runtime_not_found = 3,  // no GPU runtime / compiler library could be loaded
  device_error = 4,       // a GPU runtime call failed
  compile_error = 5,      // a kernel failed to compile (message carries the log)
  cache_error = 6,        // the code-object cache could not be used
  config_error = 7,       // a tuning table is malformed
  internal = 8,           // a bug in sagejit
};

SAGEJIT_API const char* to_string(ErrorCode code) noexcept;

// The message names the argument / call / file at fault and what would have been accepted.
class SAGEJIT_API Error : public std::runtime_error {
 public:
  Error(ErrorCode code, const std::string& message) : std::runtime_error(message), code_(code) {}
  ErrorCode code() const noexcept { return code_; }

 private:
  ErrorCode code_;
};

}  // namespace sagejit
