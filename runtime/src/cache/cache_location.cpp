#include "cache/cache_location.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "build_info.hpp"
#include "core/env.hpp"
#include "platform/self_location.hpp"

namespace sagejit {

std::optional<std::filesystem::path> default_user_cache_dir() {
  if (auto dir = env::get("SAGEJIT_CACHE_DIR")) return std::filesystem::path(*dir);
  if (auto xdg = env::get("XDG_CACHE_HOME")) return std::filesystem::path(*xdg) / "sagejit";
  if (auto home = env::get("HOME")) return std::filesystem::path(*home) / ".cache" / "sagejit";
  return std::nullopt;
}

std::filesystem::path default_system_cache_dir() {
  if (auto dir = env::get("SAGEJIT_SYSTEM_CACHE_DIR")) return std::filesystem::path(*dir);
  if constexpr (build::system_cache_next_to_binary) {
    // A wheel: <package>/cache. When the package cannot be located there is no system cache: an
    // empty path, which the trust check refuses like any missing directory.
    const auto package = package_dir_of_this_binary();
    return package ? *package / "cache" : std::filesystem::path();
  }
  return std::filesystem::path(build::install_datadir) / "sagejit" / "cache";
}

std::string untrusted_reason(const struct stat& info, TrustedOwners owners, const std::string& what) {
  const uid_t self = ::geteuid();
  const bool owner_ok = info.st_uid == self || (owners == TrustedOwners::self_or_root && info.st_uid == 0);
  if (!owner_ok)
    return fmt::format("{} is owned by uid {}, not by this user (uid {}){}", what, info.st_uid, self,
                       owners == TrustedOwners::self_or_root ? " or root" : "");
  if ((info.st_mode & (S_IWGRP | S_IWOTH)) != 0)
    return fmt::format("{} is writable by group or others (mode {:o})", what, info.st_mode & 07777);
  return {};
}

std::string prepare_user_cache_dir(const std::filesystem::path& dir) {
  if (dir.empty()) return "the cache directory path is empty";
  // Create each missing component ourselves so every directory we make is 0700 (create_directories
  // would use the umask's mode).
  std::filesystem::path partial;
  for (const auto& part : dir) {
    partial /= part;
    if (::mkdir(partial.c_str(), 0700) != 0 && errno != EEXIST)
      return fmt::format("cannot create {}: {}", partial.string(), std::strerror(errno));
  }
  struct stat info {};
  if (::stat(dir.c_str(), &info) != 0) return fmt::format("cannot stat {}: {}", dir.string(), std::strerror(errno));
  if (!S_ISDIR(info.st_mode)) return fmt::format("{} is not a directory", dir.string());
  if (auto reason = untrusted_reason(info, TrustedOwners::self, "cache directory " + dir.string()); !reason.empty())
    return reason;
  if (::access(dir.c_str(), W_OK | X_OK) != 0)
    return fmt::format("cache directory {} is not writable: {}", dir.string(), std::strerror(errno));
  return {};
}

std::string check_system_cache_dir(const std::filesystem::path& dir) {
  struct stat info {};
  if (::stat(dir.c_str(), &info) != 0) return fmt::format("{}: {}", dir.string(), std::strerror(errno));
  if (!S_ISDIR(info.st_mode)) return fmt::format("{} is not a directory", dir.string());
  return untrusted_reason(info, TrustedOwners::self_or_root, "system cache directory " + dir.string());
}

}  // namespace sagejit
