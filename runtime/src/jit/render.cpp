#include "jit/render.hpp"

#include <algorithm>
#include <cctype>
#include <optional>
#include <set>
#include <string_view>

#include "core/error.hpp"

namespace sagejit {
namespace {

const EmbeddedFile* find_file(std::span<const EmbeddedFile> files, std::string_view path) {
  for (const auto& file : files)
    if (path == file.path) return &file;
  return nullptr;
}

std::string_view trim_left(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  return text;
}

// Recognises a preprocessor directive `# name rest` (whitespace allowed around '#'); returns rest.
std::optional<std::string_view> directive(std::string_view line, std::string_view name) {
  line = trim_left(line);
  if (line.empty() || line.front() != '#') return std::nullopt;
  line = trim_left(line.substr(1));
  if (line.substr(0, name.size()) != name) return std::nullopt;
  line.remove_prefix(name.size());
  if (!line.empty() && line.front() != ' ' && line.front() != '\t' && line.front() != '"' && line.front() != '<')
    return std::nullopt;  // e.g. "#include_next", "#pragma onceX"
  return trim_left(line);
}

// `"path"` → path; anything else (`<...>`, macros) → nullopt.
std::optional<std::string> quoted_include(std::string_view rest) {
  if (rest.empty() || rest.front() != '"') return std::nullopt;
  const auto close = rest.find('"', 1);
  if (close == std::string_view::npos) return std::nullopt;
  return std::string(rest.substr(1, close - 1));
}

bool is_pragma_once(std::string_view line) {
  auto rest = directive(line, "pragma");
  if (!rest) return false;
  std::string_view word = *rest;
  while (!word.empty() && (word.back() == ' ' || word.back() == '\t' || word.back() == '\r')) word.remove_suffix(1);
  return word == "once";
}

std::string directory_of(std::string_view path) {
  const auto slash = path.rfind('/');
  return slash == std::string_view::npos ? std::string() : std::string(path.substr(0, slash + 1));
}

// Lexically normalises "a/./b/../c" → "a/c" so one file is recognised however it is reached.
std::string normalise_path(std::string_view path) {
  std::vector<std::string_view> parts;
  while (!path.empty()) {
    const auto slash = path.find('/');
    const auto part = path.substr(0, slash);
    if (part == "..") {
      if (!parts.empty()) parts.pop_back();
    } else if (!part.empty() && part != ".") {
      parts.push_back(part);
    }
    if (slash == std::string_view::npos) break;
    path.remove_prefix(slash + 1);
  }
  std::string out;
  for (const auto& part : parts) {
    if (!out.empty()) out += '/';
    out += part;
  }
  return out;
}

class Renderer {
 public:
  explicit Renderer(std::span<const EmbeddedFile> files) : files_(files) {}

  void inline_file(const EmbeddedFile& file) {
    inlined_.insert(file.path);
    out_ += fmt::format("#line 1 \"{}\"\n", file.path);
    std::string_view text = file.contents;
    int line_number = 0;
    while (!text.empty()) {
      const auto newline = text.find('\n');
      const std::string_view line = text.substr(0, newline);
      text.remove_prefix(newline == std::string_view::npos ? text.size() : newline + 1);
      ++line_number;

      if (is_pragma_once(line)) {  // every file is inlined once anyway; keep line numbers
        out_ += '\n';
        continue;
      }
      const auto rest = directive(line, "include");
      const auto included = rest ? quoted_include(*rest) : std::nullopt;
      if (!included) {
        out_.append(line);
        out_ += '\n';
        continue;
      }
      const EmbeddedFile* target = resolve(file.path, *included);
      if (target == nullptr)
        fail(ErrorCode::internal, "{}:{}: #include \"{}\" is not an embedded kernel_src file", file.path,
             line_number, *included);
      if (inlined_.count(target->path) == 0) {
        inline_file(*target);
        out_ += fmt::format("#line {} \"{}\"\n", line_number + 1, file.path);
      } else {
        out_ += '\n';
      }
    }
  }

  std::string take() { return std::move(out_); }

 private:
  // Like the preprocessor's quoted form: next to the including file first, then from kernel_src/.
  const EmbeddedFile* resolve(std::string_view including, const std::string& included) const {
    if (const auto* file = find_file(files_, normalise_path(directory_of(including) + included))) return file;
    return find_file(files_, normalise_path(included));
  }

  std::span<const EmbeddedFile> files_;
  std::set<std::string_view> inlined_;
  std::string out_;
};

bool is_identifier(std::string_view name) {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name.front()))) return false;
  return std::all_of(name.begin(), name.end(),
                     [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

}  // namespace

std::string render_source(std::string_view main_path, const Defines& defines,
                          std::span<const EmbeddedFile> files) {
  const EmbeddedFile* main = find_file(files, main_path);
  if (main == nullptr) fail(ErrorCode::internal, "kernel source \"{}\" is not an embedded kernel_src file", main_path);
  std::string header;
  for (const auto& [name, value] : defines) {
    if (!is_identifier(name))
      fail(ErrorCode::invalid_argument, "kernel define name \"{}\" in {} is not a C identifier", name, main_path);
    if (value.find_first_of("\r\n") != std::string::npos)
      fail(ErrorCode::invalid_argument, "kernel define {} in {} has a line break in its value", name, main_path);
    header += fmt::format("#define {} {}\n", name, value);
  }
  Renderer renderer(files);
  renderer.inline_file(*main);
  return header + renderer.take();
}

std::span<const EmbeddedFile> embedded_kernel_sources() {
  return {embedded_kernel_files, embedded_kernel_files_count};
}

RenderedKernel render_kernel(const KernelDesc& desc, const TileConfig& config, const Specialization& spec,
                             const std::string& target) {
  // Descriptors decide on the parsed target; the feature suffixes (":xnack-") only reach the compiler.
  const Target parsed = parse_target(target);
  if (!kernel_supports(desc, parsed))
    fail(ErrorCode::unsupported, "kernel {} does not support target {}", desc.name, parsed.arch);
  const std::string reason = check_kernel_config(desc, config, spec, parsed);
  if (!reason.empty())
    fail(ErrorCode::unsupported, "kernel {} config {} is not valid for {}: {}", desc.name, config_id(config),
         parsed.arch, reason);
  RenderedKernel rendered;
  rendered.target = kernel_compile_target(desc, parsed);
  rendered.name = fmt::format("{}.{}.{}", desc.name, config_id(config), parsed.arch);
  rendered.entries = desc.entries;
  rendered.source = render_source(desc.source_path, kernel_defines(desc, config, spec), embedded_kernel_sources());
  return rendered;
}

}  // namespace sagejit
