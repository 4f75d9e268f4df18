#pragma once
// What this build of sagejit is and which optional parts it found (for sagejit-info and tests).
#include <string>

namespace sagejit {

struct BuildReport {
  std::string version;
  std::string cxx_compiler;
  std::string build_type;
  std::string default_clang;  // configure-time AMDGPU clang, empty when none
  std::size_t embedded_kernel_files = 0;
  std::size_t embedded_config_files = 0;
};

BuildReport build_report();

}  // namespace sagejit
