#include "cache/prebuilt_manifest.hpp"

#include <algorithm>
#include <cstring>

#include <nlohmann/json.hpp>

#include "cache/entry_io.hpp"
#include "core/error.hpp"
#include "core/log.hpp"

namespace sagejit {
namespace {

constexpr int manifest_schema = 1;

std::vector<PrebuiltCompiler> parse(const std::vector<std::byte>& bytes, const std::filesystem::path& path) {
  const auto json = nlohmann::json::parse(reinterpret_cast<const char*>(bytes.data()),
                                          reinterpret_cast<const char*>(bytes.data()) + bytes.size(), nullptr, false);
  if (json.is_discarded() || !json.is_object() || json.value("schema", 0) != manifest_schema ||
      !json.contains("compilers") || !json.at("compilers").is_array())
    fail(ErrorCode::cache_error, "{}: not a schema-{} manifest {{\"schema\": 1, \"compilers\": [...]}}", path.string(),
         manifest_schema);
  std::vector<PrebuiltCompiler> compilers;
  for (const auto& item : json.at("compilers")) {
    if (!item.is_object() || !item.contains("kind") || !item.contains("identity") || !item.at("kind").is_string() ||
        !item.at("identity").is_string())
      fail(ErrorCode::cache_error, "{}: each compiler needs string \"kind\" and \"identity\"", path.string());
    compilers.push_back({item.at("kind").get<std::string>(), item.at("identity").get<std::string>()});
  }
  return compilers;
}

}  // namespace

std::vector<PrebuiltCompiler> read_prebuilt_manifest(const std::filesystem::path& dir) {
  const std::filesystem::path path = dir / prebuilt_manifest_name;
  const ReadResult read = read_trusted_file(path, TrustedOwners::self_or_root);
  if (read.missing) return {};
  try {
    if (!read.bytes) fail(ErrorCode::cache_error, "{}: {}", path.string(), read.problem);
    return parse(*read.bytes, path);
  } catch (const Error& error) {
    log::warn("code-object cache: ignoring the prebuilt-compiler manifest: {}", error.what());
    return {};
  }
}

void record_prebuilt_compiler(const std::filesystem::path& dir, const PrebuiltCompiler& compiler) {
  const std::filesystem::path path = dir / prebuilt_manifest_name;
  std::vector<PrebuiltCompiler> compilers;
  const ReadResult read = read_trusted_file(path, TrustedOwners::self);
  if (!read.missing) {
    if (!read.bytes) fail(ErrorCode::cache_error, "cannot update {}: {}", path.string(), read.problem);
    compilers = parse(*read.bytes, path);
  }
  if (std::find(compilers.begin(), compilers.end(), compiler) == compilers.end()) compilers.push_back(compiler);
  std::sort(compilers.begin(), compilers.end(), [](const auto& a, const auto& b) {
    return std::tie(a.kind, a.identity) < std::tie(b.kind, b.identity);
  });
  nlohmann::json json{{"schema", manifest_schema}, {"compilers", nlohmann::json::array()}};
  for (const auto& c : compilers) json["compilers"].push_back({{"kind", c.kind}, {"identity", c.identity}});
  const std::string text = json.dump(2) + "\n";
  publish_file_atomically(dir, prebuilt_manifest_name,
                          std::span(reinterpret_cast<const std::byte*>(text.data()), text.size()));
}

}  // namespace sagejit
