#pragma once
// Rendering turns a kernel descriptor + tile config + specialization into one self-contained source
// string: the embedded kernel_src files it includes are inlined (so the compiler needs no include
// path and the cache key covers every header), and the descriptor's defines are prepended.
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "core/embedded_file.hpp"
#include "jit/kernel_config.hpp"

namespace sagejit {

struct RenderedKernel {
  std::string name;                  // for logs, dumps and errors: "<kernel>.<config id>.<target>"
  std::string source;                // self-contained source, #line directives point at kernel_src files
  std::vector<std::string> options;  // kernel-specific compiler options (the compiler adds its own)
  std::vector<std::string> entries;  // extern "C" __global__ names to look up after loading
  std::string target;                // the target it was rendered for ("sm_90", "gfx1201:xnack-")
};

// Renders `main_path` (relative to kernel_src/, as in the embedded table) from `files`:
// `#define NAME VALUE` for each define, then the main file with every `#include "..."` of an embedded
// file inlined (each file at most once, like `#pragma once`; kernel_src headers are all once-only).
// `#include <...>` lines are left to the compiler. Throws Error(internal) naming the including file
// and line for an include that is not embedded, and Error(invalid_argument) for a malformed define.
std::string render_source(std::string_view main_path, const Defines& defines,
                          std::span<const EmbeddedFile> files);

// The embedded kernel_src table (built into the library by CMake).
std::span<const EmbeddedFile> embedded_kernel_sources();

// Renders a registered kernel for one target (feature suffixes allowed: "gfx1201:xnack-"). Throws Error(unsupported) when the descriptor does not
// support the target or rejects the config (with its reason).
RenderedKernel render_kernel(const KernelDesc& desc, const TileConfig& config, const Specialization& spec,
                             const std::string& target);

}  // namespace sagejit
