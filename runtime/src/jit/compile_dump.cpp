#include "jit/compile_dump.hpp"

#include <cctype>
#include <filesystem>
#include <fstream>

#include "core/env.hpp"
#include "core/log.hpp"

namespace sagejit {
namespace {

std::string file_safe(std::string_view text) {
  std::string out;
  for (const char c : text)
    out += (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-') ? c : '_';
  return out;
}

void write_file(const std::filesystem::path& path, const void* data, std::size_t size) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(static_cast<const char*>(data), static_cast<std::streamsize>(size));
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

}  // namespace

void dump_compile_if_requested(const CompileDump& dump) noexcept {
  const auto dir = env::get("SAGEJIT_DUMP_DIR");
  if (!dir || dump.request == nullptr) return;
  try {
    std::filesystem::create_directories(*dir);
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
