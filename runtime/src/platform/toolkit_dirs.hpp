#pragma once
// Where GPU toolkits install their shared libraries when the dynamic linker does not know them: ROCm
// under $ROCM_PATH, /opt/rocm-<version>, /opt/rocm; the CUDA toolkit under $CUDA_HOME,
// /usr/local/cuda-<version>, /usr/local/cuda. Rule (d) of platform/runtime_discovery.hpp.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sagejit {

// How one toolkit lays out its installations.
struct ToolkitLayout {
  const char* root_variable;         // "ROCM_PATH": names the root the user chose
  std::string_view install_prefix;   // "/opt": where versioned installations sit side by side
  std::string_view dir_name;         // "rocm": <prefix>/rocm-<version> and <prefix>/rocm
  std::string_view lib_subdir;       // "lib": the libraries under a root
};

inline constexpr ToolkitLayout kRocmLayout{"ROCM_PATH", "/opt", "rocm", "lib"};
inline constexpr ToolkitLayout kCudaLayout{"CUDA_HOME", "/usr/local", "cuda", "lib64"};

// A directory to search and what put it on the list ("ROCM_PATH", "/opt/rocm-7.0.2"), for messages
// and for sagejit-info's "found by".
struct SearchDir {
  std::string path;
  std::string origin;
};

// <root>/<lib> when `root` (the value of layout.root_variable) is given; then
// <install_prefix>/<dir_name>-<version>/<lib>, newest version first (compared as numbers: 7.0.10 is
// newer than 7.0.2); then <install_prefix>/<dir_name>/<lib>. A directory reached twice (/opt/rocm is
// usually a symlink to one of the versioned ones) is listed once, at its first place. The install
// prefix is a parameter so that tests search their own trees, never the machine's.
std::vector<SearchDir> toolkit_library_dirs(const ToolkitLayout& layout, const std::optional<std::string>& root,
                                            const std::string& install_prefix);

}  // namespace sagejit
