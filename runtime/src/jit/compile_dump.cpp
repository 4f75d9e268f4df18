#include "jit/compile_dump.hpp"

#include <atomic>
#include <cctype>
#include <filesystem>
#include <span>

#include "cache/cache_location.hpp"
#include "core/env.hpp"
#include "core/error.hpp"
#include "core/log.hpp"
#include "platform/safe_file.hpp"

namespace sagejit {
namespace {

std::string file_safe(std::string_view text) {
  std::string out;
  for (const char c : text)
    out += (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-') ? c : '_';
  return out;
}

// The names are predictable, so each file is written to an unpredictable temp name (O_EXCL,
// O_NOFOLLOW) and renamed into place: a symlink planted under the final name is replaced, never
// followed.
void write_file(const std::filesystem::path& path, const void* data, std::size_t size) {
  write_file_atomically(path, std::span(static_cast<const std::byte*>(data), size), 0600, ErrorCode::internal);
}

}  // namespace

void dump_compile_if_requested(const CompileDump& dump) noexcept {
  const auto dir = env::get("SAGEJIT_DUMP_DIR");
  if (!dir || dump.request == nullptr) return;
  try {
    // Created 0700 like a cache; a directory someone else controls is refused.
    const DirCheck check = check_trusted_dir(*dir, TrustedOwners::self, "SAGEJIT_DUMP_DIR " + *dir, DirModes{});
    if (!check.problem.empty()) {
      static std::atomic<bool> warned{false};
      if (!warned.exchange(true)) log::warn("SAGEJIT_DUMP_DIR: not dumping compiles: {}", check.problem);
      return;
    }
    const std::string stem = file_safe(dump.request->name) + "." + dump.key.hex();
    const std::filesystem::path base(*dir);
    write_file(base / (stem + ".src"), dump.request->source.data(), dump.request->source.size());
    std::string options = "# " + dump.compiler_identity + ", target " + dump.request->target + "\n";
    for (const auto& option : dump.effective_options) options += option + "\n";
    write_file(base / (stem + ".options.txt"), options.data(), options.size());
    if (dump.code != nullptr) {
      const char* extension = dump.compiler_kind == CompilerKind::nvrtc ? ".cubin" : ".co";
      write_file(base / (stem + extension), dump.code->data(), dump.code->size());
    }
    write_file(base / (stem + ".log"), dump.log.data(), dump.log.size());
    log::debug("{}: dumped source, options, log{} to {}/{}.*", dump.request->name,
               dump.code != nullptr ? ", code object" : "", *dir, stem);
  } catch (const std::exception& error) {
    log::warn("SAGEJIT_DUMP_DIR: could not dump {}: {}", dump.request->name, error.what());
  }
}

}  // namespace sagejit
