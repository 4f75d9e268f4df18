#include "core/build_report.hpp"

#include "build_info.hpp"
#include "core/embedded_file.hpp"

namespace sagejit {

BuildReport build_report() {
  return BuildReport{build::version,  build::cxx_compiler, build::build_type, build::default_clang,
                     embedded_kernel_files_count, embedded_config_files_count};
}

}  // namespace sagejit
