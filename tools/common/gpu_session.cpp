#include "common/gpu_session.hpp"

#include <fmt/format.h>

#include "core/error.hpp"

namespace sagejit::tools {

CallDevice require_gpu(int ordinal) {
  try {
    return resolve_device(ordinal);
  } catch (const Error& error) {
    if (error.code() == ErrorCode::runtime_not_found)
      throw NoGpu(fmt::format("no GPU: no GPU runtime could be loaded ({})", error.what()));
    throw;
  }
}

}  // namespace sagejit::tools
