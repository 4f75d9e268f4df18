#include "platform/dynlib.hpp"

#include <dlfcn.h>
#include <link.h>

#include <filesystem>
#include <system_error>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.hpp"
#include "core/log.hpp"

namespace sagejit {
namespace {

std::string last_dl_error() {
  const char* message = ::dlerror();
  return message != nullptr ? message : "unknown dlopen error";
}

// The file the dynamic linker actually mapped, symlinks resolved, so logs show the exact version.
std::string loaded_file_path(void* handle, const std::string& fallback) {
  link_map* map = nullptr;
  if (::dlinfo(handle, RTLD_DI_LINKMAP, &map) != 0 || map == nullptr || map->l_name == nullptr ||
      map->l_name[0] == '\0')
    return fallback;
  std::error_code error;
  const auto canonical = std::filesystem::canonical(map->l_name, error);
  return error ? std::string(map->l_name) : canonical.string();
}

}  // namespace

DynamicLibrary::DynamicLibrary(void* handle, std::string name, std::string path)
    : handle_(handle), name_(std::move(name)), path_(std::move(path)) {}

DynamicLibrary::DynamicLibrary(DynamicLibrary&& other) noexcept
    : handle_(std::exchange(other.handle_, nullptr)), name_(std::move(other.name_)), path_(std::move(other.path_)) {}

DynamicLibrary& DynamicLibrary::operator=(DynamicLibrary&& other) noexcept {
  if (this != &other) {
    if (handle_ != nullptr) ::dlclose(handle_);
    handle_ = std::exchange(other.handle_, nullptr);
    name_ = std::move(other.name_);
    path_ = std::move(other.path_);
  }
  return *this;
}

DynamicLibrary::~DynamicLibrary() {
  if (handle_ != nullptr) ::dlclose(handle_);
}

std::optional<DynamicLibrary> DynamicLibrary::open_first(const std::vector<std::string>& candidates,
                                                         std::vector<std::string>& attempts,
                                                         const char* required_symbol) {
  for (const auto& candidate : candidates) {
    // RTLD_LOCAL: the vendor's symbols must not leak into the process and clash with a framework's
    // own copy of the same runtime.
    void* handle = ::dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      attempts.push_back(fmt::format("{} ({})", candidate, last_dl_error()));
      continue;
    }
    if (required_symbol != nullptr && ::dlsym(handle, required_symbol) == nullptr) {
      attempts.push_back(fmt::format("{} (loaded, but has no symbol {})", candidate, required_symbol));
      ::dlclose(handle);
      continue;
    }
    std::string path = loaded_file_path(handle, candidate);
    log::debug("loaded {} from {}", candidate, path);
    return DynamicLibrary(handle, candidate, std::move(path));
  }
  return std::nullopt;
}

void* DynamicLibrary::symbol(const char* name) const {
  void* address = optional_symbol(name);
  if (address == nullptr)
    fail(ErrorCode::runtime_not_found, "{} ({}) has no symbol {}: the library is too old or not the expected one",
         name_, path_, name);
  return address;
}

void* DynamicLibrary::optional_symbol(const char* name) const noexcept {
  if (handle_ == nullptr) return nullptr;
  return ::dlsym(handle_, name);
}

std::vector<std::string> library_candidates(const std::vector<std::string>& sonames,
                                            const std::vector<std::string>& install_dirs) {
  std::vector<std::string> candidates = sonames;
  for (const auto& directory : install_dirs)
    for (const auto& soname : sonames) candidates.push_back(directory + "/" + soname);
  return candidates;
}

std::string describe_attempts(const std::vector<std::string>& attempts) {
  if (attempts.empty()) return "tried: nothing";
  return fmt::format("tried: {}", fmt::join(attempts, "; "));
}

}  // namespace sagejit
