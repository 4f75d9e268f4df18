#include "cache/cache_location.hpp"

#include <unistd.h>

#include <fmt/format.h>

#include "build_info.hpp"
#include "core/env.hpp"
#include "platform/self_location.hpp"
#include "core/log.hpp"

namespace sagejit {
namespace fs = std::filesystem;
namespace {

// The XDG base directory spec: a relative XDG_CACHE_HOME is invalid and must be ignored; a relative
// HOME is no home either (it would put the cache below whatever the current directory is).
std::optional<fs::path> absolute_env_dir(const char* name) {
  const auto value = env::get(name);
  if (!value) return std::nullopt;
  if (fs::path(*value).is_absolute()) return fs::path(*value);
  log::debug("code-object cache: ignoring {}={}: not an absolute path", name, *value);
  return std::nullopt;
}

}  // namespace

std::optional<fs::path> default_user_cache_dir() {
  if (auto dir = env::get("SAGEJIT_CACHE_DIR")) return fs::path(*dir);
  if (auto xdg = absolute_env_dir("XDG_CACHE_HOME")) return *xdg / "sagejit";
  if (auto home = absolute_env_dir("HOME")) return *home / ".cache" / "sagejit";
  return std::nullopt;
}

fs::path default_system_cache_dir() {
  if (auto dir = env::get("SAGEJIT_SYSTEM_CACHE_DIR")) return fs::path(*dir);
  if constexpr (build::system_cache_next_to_binary) {
    // A wheel: <package>/cache. When the package cannot be located there is no system cache: an
    // empty path, which the trust check refuses like any missing directory.
    const auto package = package_dir_of_this_binary();
    return package ? *package / "cache" : fs::path();
  }
  return fs::path(build::install_datadir) / "sagejit" / "cache";
}

DirCheck prepare_user_cache_dir(const fs::path& dir, const std::optional<DirModes>& create) {
  DirCheck check = check_trusted_dir(dir, TrustedOwners::self, "cache directory " + dir.string(), create);
  if (!check.problem.empty()) return check;
  check.writable = ::access(dir.c_str(), W_OK | X_OK) == 0;
  return check;
}

std::string check_system_cache_dir(const fs::path& dir) {
  return check_trusted_dir(dir, TrustedOwners::self_or_root, "system cache directory " + dir.string()).problem;
}

}  // namespace sagejit
