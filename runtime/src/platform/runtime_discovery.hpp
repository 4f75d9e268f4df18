#pragma once
// Which HIP runtime, hipRTC and NVRTC this process uses: the one rule, called by the device layer
// (the HIP runtime), the compiler layer (hipRTC, NVRTC) and printed by sagejit-info. The CUDA driver
// (libcuda) is the system's and is not chosen here.
//
// For each library the first rule that yields one wins:
//  (a) already loaded in this process (a framework such as PyTorch loaded its own). Two HIP runtimes
//      in one process are a known crash source, so a loaded HIP runtime that sagejit cannot use is
//      refused, never joined by a second one.
//  (b) the file the user names: SAGEJIT_HIP_LIBRARY, SAGEJIT_HIPRTC_LIBRARY, SAGEJIT_NVRTC_LIBRARY.
//      If it does not load, that is the answer (an error), not a reason to look elsewhere.
//  (c) directories handed over by the host: SAGEJIT_LIBRARY_DIRS, then those given to
//      hand_over_library_dirs (sagejit_set_library_search_dirs; the Python package hands over
//      torch's lib/, the rocm_sdk core lib/ and pip's NVRTC dirs), in order.
//  (d) the toolkit's roots: ROCM_PATH, then /opt/rocm-<version> newest first, then /opt/rocm (NVRTC:
//      CUDA_HOME, /usr/local/cuda-<version>, /usr/local/cuda); see platform/toolkit_dirs.hpp.
//  (e) the sonames through the dynamic linker's search, newest first (.7, .6, .5).
// In (c) and (d) each directory is tried with every file name, newest first, before the next one.
//
// One ROCm: when there is a HIP runtime, hipRTC comes from its directory (for ROCm 5, where hipRTC
// lives inside libamdhip64, the runtime itself). A hipRTC that (a) or (b) would take from another
// directory is refused with a message naming both, and so is a HIP runtime directory without hipRTC.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "platform/dynlib.hpp"
#include "platform/library_loader.hpp"
#include "platform/toolkit_dirs.hpp"

namespace sagejit {

enum class RuntimeLibrary { hip_runtime, hiprtc, nvrtc };

enum class DiscoveryRule {
  already_loaded,       // (a)
  explicit_path,        // (b)
  handed_over,          // (c)
  toolkit_root,         // (d)
  soname,               // (e)
  next_to_hip_runtime,  // hipRTC from the HIP runtime's ROCm
};

// "the HIP runtime", "hipRTC", "NVRTC"
std::string_view to_string(RuntimeLibrary which);

// Everything the rule reads besides the process's loaded libraries, so a test can give its own trees.
struct DiscoveryInputs {
  std::optional<std::string> explicit_path;  // (b): the value of SAGEJIT_<LIB>_LIBRARY
  std::vector<SearchDir> handed_over;        // (c)
  std::vector<SearchDir> toolkit;            // (d), already in order
  bool search_sonames = true;                // (e)
};

struct DiscoveredLibrary {
  std::optional<DynamicLibrary> library;
  DiscoveryRule rule = DiscoveryRule::soname;
  std::string origin;  // what the rule matched: "SAGEJIT_HIP_LIBRARY", "ROCM_PATH", "/opt/rocm-7.0.2", a soname
  std::string error;   // why there is none, when `library` is empty
  bool refused = false;  // there is one, but it may not be used (one HIP runtime, one ROCm, a (b) that fails)
  // Libraries loaded with it from its directory, kept as long as it is: NVRTC's builtins.
  std::vector<DynamicLibrary> companions;

  // "(d) ROCM_PATH", "(a) already loaded in this process": by which rule it was chosen.
  std::string rule_text() const;
};

// The rule over the given inputs. `hip_runtime`: the HIP runtime this process uses (hipRTC must come
// from its ROCm); null, or one without a library, when there is none. Never throws for a library
// that is missing or unusable: that is the result's error.
DiscoveredLibrary discover_library(RuntimeLibrary which, const DiscoveryInputs& inputs,
                                   const DiscoveredLibrary* hip_runtime);

// This process's inputs: the SAGEJIT_*_LIBRARY variables, SAGEJIT_LIBRARY_DIRS and the handed-over
// directories, ROCM_PATH / CUDA_HOME and the real /opt and /usr/local.
DiscoveryInputs process_discovery_inputs(RuntimeLibrary which);

// This process's choice, made once on first use (thread-safe) and kept for the life of the process
// (a HIP runtime is never unloaded). Asking for hipRTC chooses the HIP runtime first.
const DiscoveredLibrary& process_runtime_library(RuntimeLibrary which);

// A handle of the loader's own to this process's choice, or the reason there is none.
OpenedLibrary open_runtime_library(RuntimeLibrary which);

// Rule (c)'s directories from the host (after SAGEJIT_LIBRARY_DIRS). Must come before the first
// library is chosen: afterwards it throws Error(unsupported) naming what was already chosen, since a
// library once loaded is not swapped.
void hand_over_library_dirs(const std::vector<std::string>& directories);
// "a::b:" -> {"a", "b"}: a ':'-separated list of directories (SAGEJIT_LIBRARY_DIRS, the C ABI's).
std::vector<std::string> split_search_path(std::string_view text);
// What was handed over so far.
std::vector<std::string> handed_over_library_dirs();

}  // namespace sagejit
