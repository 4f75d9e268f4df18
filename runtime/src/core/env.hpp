#pragma once
// Reading environment variables, in one place, so every variable sagejit honours is listed here
// (sagejit-info prints them; option-changing ones enter the cache key).
#include <array>
#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace sagejit::env {

// Returns the value when the variable is set and non-empty.
std::optional<std::string> get(const char* name);
// "1", "true", "yes", "on" (case-insensitive) are true.
bool flag(const char* name);
// A whole number of seconds from 1 to 604800 (a week), else `fallback` when unset. Throws
// Error(invalid_argument) naming the variable and the accepted values for anything else.
std::chrono::seconds seconds(const char* name, std::chrono::seconds fallback);

struct Variable {
  std::string_view name;
  std::string_view meaning;
};

inline constexpr std::array variables{
    Variable{"SAGEJIT_LOG", "log level: off|warn|info|debug, any case (default warn)"},
    Variable{"SAGEJIT_CACHE_DIR", "user code-object cache directory (default $XDG_CACHE_HOME/sagejit or ~/.cache/sagejit)"},
    Variable{"SAGEJIT_SYSTEM_CACHE_DIR", "read-only system cache searched first (default <prefix>/share/sagejit/cache)"},
    Variable{"SAGEJIT_DISABLE_CACHE", "1: keep code objects in memory only"},
    Variable{"SAGEJIT_CACHE_MAX_SIZE", "size cap of the user cache before LRU pruning (e.g. 2G; default 1G)"},
    Variable{"SAGEJIT_COMPILE_TIMEOUT", "seconds an offline (clang) compile may take before it is killed (default 600)"},
    Variable{"SAGEJIT_LOCK_TIMEOUT", "seconds to wait for another process compiling the same kernel (default 900)"},
    Variable{"SAGEJIT_DUMP_DIR", "write rendered source, options and code object of every compile here"},
    Variable{"SAGEJIT_CLANG", "AMDGPU-capable clang used by the offline clang compiler (default clang++-22)"},
    Variable{"SAGEJIT_COMPILER", "kernel compiler on AMD GPUs: hiprtc | clang (default: hiprtc when it can build the arch, else clang); NVIDIA uses nvrtc"},
    Variable{"SAGEJIT_CONFIG_PATH", "extra tuning tables (files or dirs, ':'-separated) that win over shipped ones"},
    Variable{"SAGEJIT_RECORD_MISSES", "append tuning-table misses to this file for the autotuner"},
    Variable{"HIPRTC_COMPILE_OPTIONS_APPEND", "read by hipRTC itself; changes code, so it is part of the cache key"},
    Variable{"CCC_OVERRIDE_OPTIONS", "read by the clang driver itself; changes code, so it is part of the clang cache key"},
    Variable{"SAGEJIT_HIP_LIBRARY", "the HIP runtime file to load (libamdhip64), unless one is already loaded in the process"},
    Variable{"SAGEJIT_HIPRTC_LIBRARY", "the hipRTC file to load; must be of the HIP runtime's ROCm (same directory)"},
    Variable{"SAGEJIT_NVRTC_LIBRARY", "the NVRTC file to load (libnvrtc), unless one is already loaded in the process"},
    Variable{"SAGEJIT_LIBRARY_DIRS", "':'-separated dirs searched for HIP/hipRTC/NVRTC before ROCM_PATH/CUDA_HOME (the Python package sets it for the tools it starts)"},
    Variable{"ROCM_PATH", "ROCm root: $ROCM_PATH/lib is searched for libamdhip64/libhiprtc, before /opt/rocm-<version> (newest first) and /opt/rocm"},
    Variable{"CUDA_HOME", "CUDA toolkit root: $CUDA_HOME/lib64 is searched for libnvrtc, before /usr/local/cuda-<version> (newest first) and /usr/local/cuda"},
    Variable{"TMPDIR", "where the clang compiler's private (0700) temporary directories are made (default /tmp)"},
};

}  // namespace sagejit::env
