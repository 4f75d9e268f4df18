#pragma once
// The GPU the selftest and the autotuner run on. Without a GPU runtime or device they stop with
// NoGpu, which run_tool turns into exit code 3 (exit_no_gpu) and a message saying so.
#include <stdexcept>
#include <string>

#include "api/device_support.hpp"

namespace sagejit::tools {

struct NoGpu : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The default backend's device `ordinal` (sagejit's own choice: CUDA, then HIP). Throws NoGpu when no
// runtime loads or it has no device; sagejit::Error(unsupported) when the device's arch has no kernels.
CallDevice require_gpu(int ordinal);

}  // namespace sagejit::tools
