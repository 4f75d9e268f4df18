#include "platform/self_location.hpp"

#include <dlfcn.h>

#include <system_error>

namespace sagejit {
namespace {

std::optional<std::filesystem::path> canonical_or_none(const std::filesystem::path& path) {
  std::error_code error;
  auto resolved = std::filesystem::canonical(path, error);
  if (error) return std::nullopt;
  return resolved;
}

}  // namespace

std::optional<std::filesystem::path> package_dir_of_this_binary() {
  Dl_info info{};
  // The object that contains this very function: libsagejit.so, or a program linked statically.
  if (::dladdr(reinterpret_cast<void*>(&package_dir_of_this_binary), &info) == 0) return std::nullopt;
  const auto program = canonical_or_none("/proc/self/exe");
  const auto object = info.dli_fname != nullptr && *info.dli_fname != '\0'
                          ? canonical_or_none(info.dli_fname) : std::nullopt;
  if (object && object != program) return object->parent_path();
  if (program) return program->parent_path().parent_path();
  return std::nullopt;
}

}  // namespace sagejit
