// The ISA checks of tests/gfx12_isa_checks.hpp on code objects that another compiler built elsewhere:
// `sagejit-precompile --emit-dir DIR` wrote them and their index (DIR/emitted.json). The ROCm root
// test (tests/scripts/hiprtc_root_test.sh) runs precompile through hipRTC inside a ROCm 6.4 root,
// then this program here, where the LLVM tools are. Not a stand-alone ctest: without
// SAGEJIT_EMITTED_OBJECTS it fails, and it fails when the index is empty, names a missing file, an
// arch without objects (SAGEJIT_EXPECT_ARCHS), or a compiler other than SAGEJIT_EXPECT_COMPILER.
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/tile_config.hpp"
#include "gfx12_isa_checks.hpp"
#include "kernels/attention_gfx12_desc.hpp"

namespace fs = std::filesystem;
using namespace sagejit;
using namespace sagejit::gfx12_isa;

namespace {

std::string env_or_empty(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr ? std::string(value) : std::string();
}

std::vector<std::string> words(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> out;
  for (std::string word; in >> word;) out.push_back(word);
  return out;
}

}  // namespace

TEST_CASE("emitted gfx12 code objects pass the ISA checks (WMMA minimum, no scratch, VGPRs <= estimate, LDS)") {
  const std::string dir = env_or_empty("SAGEJIT_EMITTED_OBJECTS");
  REQUIRE_MESSAGE(!dir.empty(), "SAGEJIT_EMITTED_OBJECTS must name a sagejit-precompile --emit-dir");
  const Tools tools = configured_tools();
  REQUIRE_MESSAGE(tools.found(), "llvm-objdump/llvm-readelf (22) were not found at configure time");
  std::ifstream index_file(fs::path(dir) / "emitted.json");
  REQUIRE_MESSAGE(index_file.good(), dir, "/emitted.json is missing");
  const nlohmann::json index = nlohmann::json::parse(index_file);
  const nlohmann::json& objects = index.at("objects");
  REQUIRE(!objects.empty());
  const std::string expected_compiler = env_or_empty("SAGEJIT_EXPECT_COMPILER");

  std::map<std::string, int> per_target;
  std::set<std::string> files;  // one object per file: two jobs under one name would check one object twice
  std::string table = "target | kernel | config | specialization | compiler | VGPRs (estimate) | scratch B | LDS B | ms\n";
  for (const nlohmann::json& entry : objects) {
    const std::string file = entry.at("file").get<std::string>();
    const std::string target = entry.at("target").get<std::string>();
    const std::string kernel = entry.at("kernel").get<std::string>();
    const std::string compiler = entry.at("compiler").get<std::string>();
    const TileConfig config = entry.at("config").get<TileConfig>();
    const nlohmann::json& spec = entry.at("spec");
    INFO(file, " (", compiler, ")");
    CHECK_MESSAGE(files.insert(file).second, "two objects of the index share the file name ", file);
    if (!expected_compiler.empty()) CHECK(compiler.rfind(expected_compiler, 0) == 0);
    const fs::path object = fs::path(dir) / file;
    REQUIRE(fs::is_regular_file(object));
    const IsaFigures got = inspect_object(object, target.substr(0, target.find(':')), tools);
    INFO(got.error);
    REQUIRE(got.ok);
    long estimate = -1;
    if (kernel == attention_gfx12_kernel.name) {
      const Gfx12AttentionFigures expected =
          gfx12_attention_figures(gfx12_attention_tile(config), spec.at("head_dim").get<int>());
      estimate = expected.vgpr_estimate;
      check_attention(got, expected);
    } else {
      check_no_scratch(got);
    }
    ++per_target[target];
    table += fmt::format("{} | {} | {} | {} d{}{}{}{} | {} | {} ({}) | {} | {} | {:.0f}\n", target, kernel, config_id(config),
                         spec.at("dtype").get<int>() == 1 ? "fp16" : "bf16", spec.at("head_dim").get<int>(),
                         spec.at("causal").get<bool>() ? " causal" : "", spec.at("write_lse").get<bool>() ? " lse" : "",
                         spec.value("key_mask", false) ? " mask" : "",
                         compiler, got.vgprs, estimate, got.private_bytes, got.lds_bytes, entry.at("ms").get<double>());
  }
  for (const std::string& arch : words(env_or_empty("SAGEJIT_EXPECT_ARCHS"))) {
    INFO("arch ", arch);
    CHECK(per_target[arch] > 0);
  }
  MESSAGE(table);
  MESSAGE(fmt::format("{} code objects checked", objects.size()));
}
