// docs/ARCHITECTURE.md's "Recipe: a new dtype" stays true: every file it names exists, and every file
// of the tree that lists all the dtypes (what a new dtype must join) is among them. The dtypes are
// the table's (core/kernel_inputs.hpp), so a new row is checked too.
#include <doctest/doctest.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "core/kernel_inputs.hpp"

namespace fs = std::filesystem;

namespace {

const fs::path source_dir = SAGEJIT_SOURCE_DIR;

std::string read_text(const fs::path& path) {
  std::ifstream file(path, std::ios::binary);
  std::ostringstream text;
  text << file.rdbuf();
  return text.str();
}

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
  return text;
}

// The recipe's section of docs/ARCHITECTURE.md, up to the next heading.
std::string recipe_text() {
  const std::string doc = read_text(source_dir / "docs/ARCHITECTURE.md");
  const std::string heading = "### Recipe: a new dtype";
  const std::size_t start = doc.find(heading);
  REQUIRE_MESSAGE(start != std::string::npos, "docs/ARCHITECTURE.md has no \"" << heading << "\"");
  const std::size_t end = doc.find("\n#", start + heading.size());
  return doc.substr(start, end == std::string::npos ? std::string::npos : end - start);
}

// The repository paths in backquotes (`runtime/src/core/kernel_inputs.hpp`); globs are left out.
std::set<std::string> recipe_files() {
  const std::string text = recipe_text();
  const std::regex path(R"(`([A-Za-z0-9_.\-]+(?:/[A-Za-z0-9_.\-]+)+\.[a-z]+)`)");
  std::set<std::string> files;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), path); it != std::sregex_iterator(); ++it)
    files.insert((*it)[1].str());
  return files;
}

// Whether `text` names `name` as a word of its own (letters and digits around it end the word, an
// underscore does not: SAGEJIT_DTYPE_FP16 names fp16, pv_fp16 too, bf16x does not).
bool names_word(const std::string& text, const std::string& name) {
  for (std::size_t at = text.find(name); at != std::string::npos; at = text.find(name, at + 1)) {
    const bool open = at == 0 || !std::isalnum(static_cast<unsigned char>(text[at - 1]));
    const std::size_t after = at + name.size();
    const bool close = after == text.size() || !std::isalnum(static_cast<unsigned char>(text[after]));
    if (open && close) return true;
  }
  return false;
}

// The files outside tests and docs that name every dtype of the table: the lists of dtypes.
std::set<std::string> files_listing_every_dtype() {
  static const std::set<std::string> code_suffixes = {".h", ".hpp", ".cpp", ".cu", ".hip", ".py", ".json", ".cmake", ".in"};
  std::set<std::string> found;
  for (const char* root : {"runtime", "kernel_src", "python/sagejit", "tools", "integrations", "configs", "cmake"}) {
    if (!fs::exists(source_dir / root)) continue;
    for (const auto& entry : fs::recursive_directory_iterator(source_dir / root)) {
      if (!entry.is_regular_file() || !code_suffixes.contains(entry.path().extension().string())) continue;
      const std::string text = lower(read_text(entry.path()));
      const bool every = std::all_of(std::begin(sagejit::dtype_table), std::end(sagejit::dtype_table),
                                     [&](const sagejit::DTypeInfo& info) { return names_word(text, std::string(info.name)); });
      if (every) found.insert(fs::relative(entry.path(), source_dir).generic_string());
    }
  }
  return found;
}

}  // namespace

TEST_CASE("every file the dtype recipe names exists") {
  const std::set<std::string> files = recipe_files();
  CHECK(files.size() >= 5);  // the table, the enums, Python's table, the conversions
  for (const std::string& file : files) {
    CAPTURE(file);
    CHECK(fs::is_regular_file(source_dir / file));
  }
}

TEST_CASE("every list of the dtypes in the tree is a file of the dtype recipe") {
  const std::set<std::string> recipe = recipe_files();
  const std::set<std::string> lists = files_listing_every_dtype();
  CHECK(lists.contains("runtime/src/core/kernel_inputs.hpp"));  // the scan finds the table itself
  for (const std::string& file : lists) {
    CAPTURE(file);
    CHECK_MESSAGE(recipe.contains(file), file << " lists every dtype but docs/ARCHITECTURE.md's recipe omits it");
  }
}

TEST_CASE("names_word takes a name between non-alphanumerics only") {
  CHECK(names_word("sagejit_dtype_fp16 = 1", "fp16"));
  CHECK(names_word("{\"bf16\", 2}", "bf16"));
  CHECK_FALSE(names_word("bf16x", "bf16"));
  CHECK_FALSE(names_word("xfp32", "fp32"));
}
