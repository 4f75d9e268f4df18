#include "platform/toolkit_dirs.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <set>
#include <system_error>

namespace sagejit {
namespace {

// "7.0.10" -> {7, 0, 10}; "6.4.1rc2" -> {6, 4, 1}; empty when it does not start with a digit.
std::vector<int> version_numbers(std::string_view text) {
  std::vector<int> numbers;
  std::size_t at = 0;
  while (at < text.size() && std::isdigit(static_cast<unsigned char>(text[at]))) {
    int number = 0;
    while (at < text.size() && std::isdigit(static_cast<unsigned char>(text[at])))
      number = number * 10 + (text[at++] - '0');
    numbers.push_back(number);
    if (at + 1 < text.size() && text[at] == '.' && std::isdigit(static_cast<unsigned char>(text[at + 1]))) ++at;
    else break;
  }
  return numbers;
}

struct VersionedInstall {
  std::vector<int> version;
  std::string root;
};

}  // namespace

std::vector<SearchDir> toolkit_library_dirs(const ToolkitLayout& layout, const std::optional<std::string>& root,
                                            const std::string& install_prefix) {
  const std::string lib = std::string(layout.lib_subdir);
  std::vector<SearchDir> candidates;
  if (root) candidates.push_back({*root + "/" + lib, layout.root_variable});

  std::vector<VersionedInstall> versioned;
  const std::string versioned_prefix = std::string(layout.dir_name) + "-";
  std::error_code error;
  for (std::filesystem::directory_iterator it(install_prefix, error), end; !error && it != end; it.increment(error)) {
    const std::string name = it->path().filename().string();
    if (name.rfind(versioned_prefix, 0) != 0) continue;
    std::vector<int> version = version_numbers(std::string_view(name).substr(versioned_prefix.size()));
    if (!version.empty()) versioned.push_back({std::move(version), it->path().string()});
  }
  std::sort(versioned.begin(), versioned.end(),
            [](const VersionedInstall& a, const VersionedInstall& b) { return a.version > b.version; });
  for (const VersionedInstall& install : versioned) candidates.push_back({install.root + "/" + lib, install.root});
  const std::string unversioned = install_prefix + "/" + std::string(layout.dir_name);
  candidates.push_back({unversioned + "/" + lib, unversioned});

  // One place per installation: /opt/rocm -> /opt/rocm-6.4.1 is searched as the latter only.
  std::vector<SearchDir> directories;
  std::set<std::string> seen;
  for (SearchDir& candidate : candidates) {
    std::error_code ignored;
    const auto canonical = std::filesystem::weakly_canonical(candidate.path, ignored);
    if (seen.insert(ignored ? candidate.path : canonical.string()).second) directories.push_back(std::move(candidate));
  }
  return directories;
}

}  // namespace sagejit
