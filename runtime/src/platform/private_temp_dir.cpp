#include "platform/private_temp_dir.hpp"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <system_error>
#include <vector>

#include "core/env.hpp"
#include "core/error.hpp"
#include "core/log.hpp"

namespace sagejit {

PrivateTempDir::PrivateTempDir(const std::string& prefix) {
  const std::string base = env::get("TMPDIR").value_or("/tmp");
  std::string pattern = base + "/" + prefix + "-XXXXXX";
  std::vector<char> buffer(pattern.begin(), pattern.end());
  buffer.push_back('\0');
  if (::mkdtemp(buffer.data()) == nullptr)
    fail(ErrorCode::internal, "could not create a private temporary directory '{}' (TMPDIR={}): {}", pattern, base,
         std::strerror(errno));
  path_ = buffer.data();
}

PrivateTempDir::~PrivateTempDir() {
  std::error_code error;
  std::filesystem::remove_all(path_, error);
  if (error) log::warn("could not remove temporary directory {}: {}", path_, error.message());
}

}  // namespace sagejit
