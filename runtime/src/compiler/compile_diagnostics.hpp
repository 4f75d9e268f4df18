#pragma once
// Turning a compiler log into an error a kernel author can act on: the first error's line in the
// *rendered* source (the text the compiler actually saw, headers inlined) and that line itself.
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sagejit {

struct SourceLocation {
  int line = 0;             // 1-based line in the rendered source
  std::string source_line;  // that line's text (empty when out of range)
};

// Finds the first error the log reports against one of `file_names` (the name the compiler was
// given for the source, and any alias it uses instead: ROCm 5's comgr says "CompileSource").
// Understands NVRTC's "name(12): error: ..." and clang's "name:12:5: error: ...".
std::optional<SourceLocation> first_error_location(std::string_view log, const std::vector<std::string_view>& file_names,
                                                   std::string_view source);

// A compiler log fit for an error message: a log longer than 64 KiB keeps its first and last 32 KiB
// and says how many bytes were cut between them (a runaway compiler can print megabytes).
std::string shorten_compiler_log(std::string_view log);

// Throws Error(compile_error): "<compiler> failed to compile <name> for <target>: first error at
// line N of the rendered source: `<line>`\n<log>", the log shortened by shorten_compiler_log.
[[noreturn]] void throw_compile_error(std::string_view compiler, std::string_view name, std::string_view target,
                                      const std::vector<std::string_view>& file_names, std::string_view source,
                                      std::string_view log);

// A file-name-safe version of a kernel name ("attention.bm128/bn64" -> "attention.bm128_bn64").
std::string source_file_stem(std::string_view kernel_name);

}  // namespace sagejit
