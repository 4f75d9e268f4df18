#pragma once
// A file embedded into the library at build time (cmake/embed_files_script.cmake).
#include <cstddef>
#include <string_view>

namespace sagejit {

struct EmbeddedFile {
  const char* path;          // relative to its base dir, e.g. "prepare.cu", "common/prelude.h"
  std::string_view contents;
};

extern const EmbeddedFile embedded_kernel_files[];   // kernel_src/**
extern const std::size_t embedded_kernel_files_count;
extern const EmbeddedFile embedded_config_files[];   // configs/*.json
extern const std::size_t embedded_config_files_count;

}  // namespace sagejit
