// The probe kernel goes through render -> key -> cache -> a real compiler for each compiler present
// here (NVRTC sm_90, clang gfx1201, hipRTC gfx1030), and the code object comes back from disk in a
// fresh process-like cache. Skips a compiler that is absent, saying so.
#include <doctest/doctest.h>

#include "skip_support.hpp"

#include <string>

#include "cache/code_cache.hpp"
#include "cache_test_support.hpp"
#include "compiler/compiler.hpp"
#include "core/error.hpp"
#include "jit/jit.hpp"
#include "kernels/registry.hpp"

using namespace sagejit;

TEST_CASE("the probe kernel compiles with every compiler present and is served from disk afterwards") {
  const std::pair<CompilerKind, const char*> cases[] = {
      {CompilerKind::nvrtc, "sm_90"}, {CompilerKind::clang, "gfx1201"}, {CompilerKind::hiprtc, "gfx1030"}};
  for (const auto& [kind, target] : cases) {
    const Compiler* chosen = nullptr;
    try {
      chosen = &compiler(kind);
    } catch (const Error& error) {
      SAGEJIT_SKIP(std::string(to_string(kind)) << ": " << std::string(error.what()));
      continue;
    }
    INFO(chosen->identity() << " for " << target);
    test::TempDir root;
    const TileConfig config{{"block", 64}, {"scale", 2 + static_cast<int>(test::rng()() % 1000)}};
    const KernelBuild build = plan_build(jit_probe_kernel, config, {}, target, *chosen);
    CodeCache cache(test::settings_for(root / "cache"));
    const CacheLookup cold = build_code_object(cache, build, *chosen);
    CHECK(cold.hit == CacheHit::compiled);
    REQUIRE(cold.code->size() > 4);
    CHECK((*cold.code)[0] == std::byte{0x7f});  // an ELF: cubin or AMDGPU code object
    CHECK((*cold.code)[1] == std::byte{'E'});
    CodeCache fresh(test::settings_for(root / "cache"));
    const CacheLookup warm = build_code_object(fresh, build, *chosen);
    CHECK(warm.hit == CacheHit::user);
    CHECK(*warm.code == *cold.code);
  }
}
