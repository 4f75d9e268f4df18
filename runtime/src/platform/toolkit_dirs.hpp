#pragma once
// Where the GPU toolkits install their shared libraries when the dynamic linker does not know them:
// ROCm under $ROCM_PATH or /opt/rocm, the CUDA toolkit under $CUDA_HOME or /usr/local/cuda. Searched
// after the plain sonames (see library_candidates in platform/dynlib.hpp).
#include <string>
#include <vector>

namespace sagejit {

// "$ROCM_PATH/lib" (when set), then "/opt/rocm/lib". Used for the HIP runtime and hipRTC.
std::vector<std::string> rocm_library_dirs();
// "$CUDA_HOME/lib64" (when set), then "/usr/local/cuda/lib64". Used for NVRTC (libcuda comes with the driver).
std::vector<std::string> cuda_toolkit_library_dirs();

}  // namespace sagejit
