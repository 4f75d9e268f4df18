// The registry's list is generated from the descriptor files (cmake/KernelList.cmake): every
// KernelDesc defined in runtime/src/kernels/*_desc.cpp, found here with a looser pattern than the
// generator's, must be in all_kernels(), once; so a descriptor written in a form the generator does
// not see fails here instead of silently not existing.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <set>
#include <string>

#include "kernels/registry.hpp"

namespace fs = std::filesystem;
using namespace sagejit;

TEST_CASE("every descriptor of kernels/*_desc.cpp is registered, once, and nothing else is") {
  const std::regex definition(R"(KernelDesc\s+([A-Za-z0-9_]+)\s*\{)");
  std::multiset<std::string> defined;
  for (const fs::directory_entry& entry : fs::directory_iterator(fs::path(SAGEJIT_SOURCE_DIR) / "runtime/src/kernels")) {
    const std::string name = entry.path().filename().string();
    if (!name.ends_with("_desc.cpp")) continue;
    std::ifstream in(entry.path());
    const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    for (auto it = std::sregex_iterator(text.begin(), text.end(), definition); it != std::sregex_iterator(); ++it)
      defined.insert((*it)[1].str());
  }
  REQUIRE(defined.size() >= 7);
  std::multiset<std::string> registered;
  for (const KernelDesc* desc : all_kernels()) registered.insert(desc->name + "_kernel");
  CHECK(registered == defined);
  // The list is in file name order: deterministic, whatever the directory order.
  CHECK(all_kernels().front()->name == "attention_gfx12");
  CHECK(&kernel_by_name("jit_probe") == &jit_probe_kernel);
}
