#include "core/error.hpp"

namespace sagejit {

const char* to_string(ErrorCode code) noexcept {
  switch (code) {
    case ErrorCode::invalid_argument: return "invalid argument";
    case ErrorCode::unsupported: return "unsupported";
    case ErrorCode::runtime_not_found: return "runtime or compiler not found";
    case ErrorCode::device_error: return "device error";
    case ErrorCode::compile_error: return "compile error";
    case ErrorCode::cache_error: return "cache error";
    case ErrorCode::config_error: return "config error";
    case ErrorCode::internal: return "internal error";
  }
  return "unknown error";
}

}  // namespace sagejit
