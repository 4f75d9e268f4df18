#include "cache/entry_io.hpp"

#include <fmt/format.h>

#include "core/error.hpp"
#include "platform/safe_file.hpp"

namespace sagejit {
namespace {

// An entry larger than this is not ours (code objects are KiB to a few MiB); refuse to allocate for it.
constexpr std::size_t max_entry_bytes = std::size_t{1} << 30;

}  // namespace

void publish_file_atomically(const std::filesystem::path& dir, const std::string& name,
                             std::span<const std::byte> bytes, const std::function<void()>& midway) {
  write_file_atomically(dir / name, bytes, 0600, ErrorCode::cache_error, temp_file_prefix, midway);
}

ReadResult read_trusted_file(const std::filesystem::path& path, TrustedOwners owners) {
  ReadResult result;
  // O_NONBLOCK: a FIFO named like an entry is refused instead of hanging the reader.
  const OpenedFile opened = open_regular_file(path);
  if (opened.missing) {
    result.missing = true;
    return result;
  }
  if (!opened.problem.empty()) {
    result.problem = opened.problem;
    return result;
  }
  if (auto reason = untrusted_reason(opened.info, owners, "entry"); !reason.empty()) {
    result.problem = reason;
    return result;
  }
  std::string problem;
  result.bytes = read_opened_file(opened, max_entry_bytes, problem);
  if (!result.bytes) result.problem = problem.find("over the limit") != std::string::npos
                                          ? fmt::format("{} (larger than any code object)", problem)
                                          : problem;
  return result;
}

}  // namespace sagejit
