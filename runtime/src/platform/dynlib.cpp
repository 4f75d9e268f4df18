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

// The name the dynamic linker mapped the library under: the path it found (a soname resolved through
// the search path), or the path it was asked for.
std::string mapped_name(void* handle, const std::string& fallback) {
  link_map* map = nullptr;
  if (::dlinfo(handle, RTLD_DI_LINKMAP, &map) != 0 || map == nullptr || map->l_name == nullptr ||
      map->l_name[0] == '\0')
    return fallback;
  return map->l_name;
}

std::string canonical_or_same(const std::filesystem::path& path) {
  std::error_code error;
  const auto canonical = std::filesystem::canonical(path, error);
  return error ? path.string() : canonical.string();
}

int collect_loaded_path(dl_phdr_info* info, std::size_t, void* data) {
  if (info->dlpi_name != nullptr && info->dlpi_name[0] != '\0')
    static_cast<std::vector<std::string>*>(data)->emplace_back(info->dlpi_name);
  return 0;
}

}  // namespace

// The file and directory shown in logs are the exact version's (symlinks resolved); the directory is
// resolved on its own so that a library reached through a versioned symlink stays in its installation.
DynamicLibrary::DynamicLibrary(void* handle, std::string name)
    : handle_(handle), name_(std::move(name)), mapped_name_(mapped_name(handle, name_)),
      path_(canonical_or_same(mapped_name_)),
      directory_(canonical_or_same(std::filesystem::path(mapped_name_).parent_path())) {}

DynamicLibrary::DynamicLibrary(DynamicLibrary&& other) noexcept
    : handle_(std::exchange(other.handle_, nullptr)), name_(std::move(other.name_)),
      mapped_name_(std::move(other.mapped_name_)), path_(std::move(other.path_)),
      directory_(std::move(other.directory_)) {}

DynamicLibrary& DynamicLibrary::operator=(DynamicLibrary&& other) noexcept {
  if (this != &other) {
    if (handle_ != nullptr) ::dlclose(handle_);
    handle_ = std::exchange(other.handle_, nullptr);
    name_ = std::move(other.name_);
    mapped_name_ = std::move(other.mapped_name_);
    path_ = std::move(other.path_);
    directory_ = std::move(other.directory_);
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
    DynamicLibrary library(handle, candidate);
    log::debug("loaded {} from {}", candidate, library.path());
    return library;
  }
  return std::nullopt;
}

std::optional<DynamicLibrary> DynamicLibrary::open_loaded(const std::string& path) {
  void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
  if (handle == nullptr) {
    ::dlerror();  // not loaded: clear the message so it is not reported for a later call
    return std::nullopt;
  }
  return DynamicLibrary(handle, path);
}

std::vector<std::string> loaded_library_paths() {
  std::vector<std::string> paths;
  ::dl_iterate_phdr(collect_loaded_path, &paths);
  return paths;
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

std::string describe_attempts(const std::vector<std::string>& attempts) {
  if (attempts.empty()) return "tried: nothing";
  return fmt::format("tried: {}", fmt::join(attempts, "; "));
}

}  // namespace sagejit
