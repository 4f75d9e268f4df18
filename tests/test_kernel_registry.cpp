// The registry's list is generated from the descriptor files (cmake/KernelList.cmake): every
// KernelDesc defined in runtime/src/kernels/*_desc.cpp, found here with a looser pattern than the
// generator's, must be in all_kernels(), once, in file name then file order (a deterministic list);
// so a descriptor written in a form the generator does not see fails here instead of not existing.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <string>
#include <vector>

#include "kernels/registry.hpp"

namespace fs = std::filesystem;
using namespace sagejit;

TEST_CASE("every descriptor of kernels/*_desc.cpp is registered, once, in file name then file order") {
  const std::regex definition(R"(KernelDesc\s+([A-Za-z0-9_]+)\s*\{)");
  std::vector<fs::path> files;
  for (const fs::directory_entry& entry : fs::directory_iterator(fs::path(SAGEJIT_SOURCE_DIR) / "runtime/src/kernels"))
    if (entry.path().filename().string().ends_with("_desc.cpp")) files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  std::vector<std::string> defined;
  for (const fs::path& file : files) {
    std::ifstream in(file);
    const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    for (auto it = std::sregex_iterator(text.begin(), text.end(), definition); it != std::sregex_iterator(); ++it)
      defined.push_back((*it)[1].str());
  }
  REQUIRE(defined.size() >= 7);
  std::vector<std::string> registered;
  for (const KernelDesc* desc : all_kernels()) registered.push_back(desc->name + "_kernel");
  CHECK(registered == defined);
  CHECK(&kernel_by_name("jit_probe") == &jit_probe_kernel);
}
