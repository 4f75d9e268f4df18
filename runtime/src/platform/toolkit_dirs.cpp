#include "platform/toolkit_dirs.hpp"

#include "core/env.hpp"

namespace sagejit {

std::vector<std::string> rocm_library_dirs() {
  std::vector<std::string> directories;
  if (auto rocm = env::get("ROCM_PATH")) directories.push_back(*rocm + "/lib");
  directories.emplace_back("/opt/rocm/lib");
  return directories;
}

std::vector<std::string> cuda_toolkit_library_dirs() {
  std::vector<std::string> directories;
  if (auto cuda_home = env::get("CUDA_HOME")) directories.push_back(*cuda_home + "/lib64");
  directories.emplace_back("/usr/local/cuda/lib64");
  return directories;
}

}  // namespace sagejit
