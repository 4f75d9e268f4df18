// Host checks of the Hopper wgmma attention kernel (kernel_src/attention_sm90.cu): which configs
// select it, what its descriptor accepts, that it is built for sm_90a, and — where NVRTC is present
// (no GPU needed) — that every valid config of the shipped sm_90 space compiles, with no local-memory
// spills; and that head dims above 128, which it refuses, plan
// onto the mma.sync kernel (sm_90 and sm_89 tables), whose objects compile without spills. The
// fragment bookkeeping is in test_sm90_layout.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "compiler/compiler.hpp"
#include "core/error.hpp"
#include "jit/jit.hpp"
#include "jit/kernel_config.hpp"
#include "kernels/registry.hpp"
#include "plan/attention_plan.hpp"
#include "tuning/tuning_table.hpp"
#if SAGEJIT_HAVE_CODE_OBJECT_STATS
#include "support/code_object_stats.hpp"
#endif

using namespace sagejit;

namespace {

TileConfig wgmma_config(int warps, int block_n, int stages, int min_blocks) {
  return {{"warps", warps},     {"rows_per_warp", 16}, {"block_n", block_n},      {"stages", stages},
          {"pv_fp16", 0},       {"wgmma", 1},          {"min_blocks", min_blocks}};
}

// Every combination of the space's parameter values.
std::vector<TileConfig> every_config(const KernelSpace& space) {
  std::vector<TileConfig> configs{TileConfig{}};
  for (const auto& [name, values] : space.params) {
    std::vector<TileConfig> next;
    for (const TileConfig& partial : configs)
      for (const int value : values) {
        TileConfig config = partial;
        config[name] = value;
        next.push_back(std::move(config));
      }
    configs = std::move(next);
  }
  return configs;
}

Specialization spec_of(int head_dim, bool causal) {
  Specialization spec;
  spec.head_dim = head_dim;
  spec.causal = causal;
  return spec;
}

}  // namespace

TEST_CASE("the wgmma switch picks attention_sm90 on sm_90 and nothing else") {
  const KernelDesc& sm90 = kernel_by_name("attention_sm90");
  const KernelDesc& sm80 = kernel_by_name("attention_sm80");
  const TileConfig on = wgmma_config(4, 128, 2, 3);
  TileConfig off = on;
  off["wgmma"] = 0;
  CHECK(&find_kernel("attention", "sm_90", on) == &sm90);
  CHECK(&find_kernel("attention", "sm_90", off) == &sm80);
  CHECK(&find_kernel("attention", "sm_90", TileConfig{{"warps", 4}}) == &sm80);  // no switch at all
  CHECK(&find_kernel("attention", "sm_90") == &sm80);  // the family default never needs a switch
  CHECK_THROWS_AS(find_kernel("attention", "sm_89", on), Error);  // wgmma is Hopper-only
  CHECK(kernel_serves_config(sm90, on));
  CHECK_FALSE(kernel_serves_config(sm80, on));
  CHECK(kernel_serves_config(sm80, off));
  CHECK_FALSE(kernel_serves_config(sm90, off));
}

TEST_CASE("attention_sm90 rejects what it cannot run, naming the parameter") {
  const KernelDesc& sm90 = kernel_by_name("attention_sm90");
  const Specialization spec = spec_of(128, false);
  CHECK(check_kernel_config(sm90, wgmma_config(4, 128, 2, 3), spec, "sm_90").empty());
  CHECK(check_kernel_config(sm90, wgmma_config(8, 64, 3, 1), spec, "sm_90").empty());
  const auto reason = [&](TileConfig config, const std::string& target = "sm_90") {
    return check_kernel_config(sm90, config, spec, target);
  };
  TileConfig c = wgmma_config(4, 128, 2, 1);
  c["rows_per_warp"] = 32;
  CHECK(reason(c).find("rows_per_warp") != std::string::npos);
  CHECK(reason(wgmma_config(4, 32, 2, 1)).find("block_n 32") != std::string::npos);
  CHECK(reason(wgmma_config(2, 128, 2, 1)).find("warps 2") != std::string::npos);
  CHECK(reason(wgmma_config(4, 128, 1, 1)).find("stages 1") != std::string::npos);
  CHECK(reason(wgmma_config(4, 128, 3, 3)).find("shared memory") != std::string::npos);  // 3 x 107 KiB
  CHECK(reason(wgmma_config(8, 64, 2, 3)).find("caps registers at 85") != std::string::npos);
  // The register floor follows the head dim and tile: at D = 64 with 64-key tiles five CTAs per SM
  // fit (102 registers for a need of 96), at D = 128 four do not (128 < 160).
  CHECK(check_kernel_config(sm90, wgmma_config(4, 64, 2, 5), spec_of(64, false), "sm_90").empty());
  CHECK(reason(wgmma_config(12, 128, 3, 1)).empty());  // three warpgroups, 192 rows: 170 registers each
  CHECK(reason(wgmma_config(12, 128, 2, 2)).find("caps registers at 85") != std::string::npos);
  CHECK(check_kernel_config(sm90, wgmma_config(4, 128, 2, 4), spec_of(64, false), "sm_90").find("< 136") !=
        std::string::npos);
  CHECK(reason(wgmma_config(4, 64, 2, 4)).find("caps registers at 128 per thread (< 160 for head_dim 128") !=
        std::string::npos);
  c = wgmma_config(4, 128, 2, 1);
  c["pv_fp16"] = 1;
  CHECK(reason(c).find("pv_fp16") != std::string::npos);
  c = wgmma_config(4, 128, 2, 1);
  c["tma"] = 2;
  CHECK(reason(c).find("tma 2") != std::string::npos);
  c["tma"] = 1;
  CHECK(reason(c).empty());
  c = wgmma_config(4, 128, 2, 1);
  c["tile"] = 1;
  CHECK(reason(c).find("unknown attention_sm90 parameter \"tile\"") != std::string::npos);
  CHECK(reason(wgmma_config(4, 128, 2, 1), "sm_89").find("sm_89") != std::string::npos);
  // The mma.sync kernel refuses wgmma configs instead of ignoring the switch.
  CHECK_FALSE(check_kernel_config(kernel_by_name("attention_sm80"), wgmma_config(4, 128, 2, 1), spec, "sm_90").empty());
}

TEST_CASE("attention_sm90 is compiled for sm_90a, and every valid config of the sm_90 space compiles") {
  const Compiler* nvrtc = nullptr;
  try {
    nvrtc = &compiler(CompilerKind::nvrtc);
  } catch (const Error& error) {
    // Not a skip: every sm_90 config compiling under NVRTC is what this test is for, and `make test`
    // installs NVRTC as pip users have it (the nvidia-cuda-nvrtc wheel, found through SAGEJIT_LIBRARY_DIRS).
    FAIL("NVRTC could not be loaded, so the sm_90 configs cannot be compiled: "
         << std::string(error.what())
         << "; run through `make test` (the test venv's nvidia-cuda-nvrtc), or set SAGEJIT_NVRTC_LIBRARY or "
            "SAGEJIT_LIBRARY_DIRS to an NVRTC 12.8+");
  }
  const KernelDesc& sm90 = kernel_by_name("attention_sm90");
  const KernelSpace& space = tuning_tables().space("attention", "sm_90");
  std::vector<TileConfig> configs;
  for (const TileConfig& config : every_config(space))
    if (kernel_serves_config(sm90, config) && check_kernel_config(sm90, config, spec_of(128, false), "sm_90").empty())
      configs.push_back(config);
  REQUIRE_FALSE(configs.empty());  // the shipped space offers the wgmma kernel
  // ... with both K/V loaders (cp.async, tensor copies)
  CHECK(std::count_if(configs.begin(), configs.end(), [](const TileConfig& c) { return c.at("tma") == 1; }) > 0);
  int compiled = 0;
  for (const auto& [head_dim, causal] : {std::pair{128, false}, std::pair{64, true}}) {
    Specialization spec = spec_of(head_dim, causal);
    spec.dtype = causal ? 1 : 0;  // fp16 with causal + LSE, bf16 without
    spec.write_lse = causal;
    for (const TileConfig& config : configs) {
      if (!check_kernel_config(sm90, config, spec, "sm_90").empty()) continue;
      CAPTURE(config_id(config));
      CAPTURE(head_dim);
      const KernelBuild build = plan_build(sm90, config, spec, "sm_90", *nvrtc);
      CHECK(build.rendered.target == "sm_90a");
      const CompileResult result = nvrtc->compile({build.rendered.name, build.rendered.source, build.rendered.target,
                                                   build.rendered.options});
      REQUIRE(result.code.size() > 4);
      CHECK(result.code[0] == std::byte{0x7f});
#if SAGEJIT_HAVE_CODE_OBJECT_STATS
      const tools::CodeObjectStats stats = tools::read_code_object_stats(result.code);
      REQUIRE(stats.registers.has_value());
      CHECK(*stats.registers <= 255);
      // No spills in any config, the register-capped ones (three CTAs, 168 registers) included: the
      // key tile's masked path tests visibility once per element, so no predicates are held across
      // the max (docs/NVIDIA.md, "Prepared after the step").
      REQUIRE(stats.scratch.has_value());
      CHECK(*stats.scratch == 0);
      MESSAGE(config_id(config) << " d" << head_dim << ": " << tools::figure(stats.registers) << " registers, "
                                << tools::figure(stats.scratch) << " bytes of local memory per thread");
#endif
      ++compiled;
    }
  }
  CHECK(compiled >= 2);
}

TEST_CASE("the attention plan resolves the switch: each kernel gets the config it reads") {
  const TileConfig on = wgmma_config(4, 128, 2, 3);
  TileConfig off = on;
  off["wgmma"] = 0;
  off["block_n"] = 64;
  CHECK(kernel_config_of(kernel_by_name("attention_sm80"), off).count("wgmma") == 0);
  CHECK(kernel_config_of(kernel_by_name("attention_sm90"), on).at("wgmma") == 1);
  AttentionCall call;
  call.seq_q = call.seq_kv = 300;
  call.sm_scale = 0.125f;
  call.attention_config = off;
  const AttentionPlan mma = plan_attention(call, "sm_90");
  CHECK(mma.attention->name == "attention_sm80");
  CHECK(mma.attention_config.count("wgmma") == 0);
  CHECK(mma.spec.v == VInput{false, VOrder::sm80_fp8_permuted});  // what prepare must write for it
  call.attention_config = on;
  const AttentionPlan wgmma = plan_attention(call, "sm_90");
  CHECK(wgmma.attention->name == "attention_sm90");
  CHECK(wgmma.prepare->name == "prepare");
  CHECK(wgmma.workspace.total_bytes == mma.workspace.total_bytes);  // same V format, same layout
  CHECK_THROWS_AS(plan_attention(call, "sm_89"), Error);             // wgmma is Hopper-only
}

TEST_CASE("the wgmma kernel is compiled for the arch-specific target; the others for the device's") {
  const KernelDesc& sm90 = kernel_by_name("attention_sm90");
  CHECK(kernel_compile_target(sm90, parse_target("sm_90")) == "sm_90a");
  CHECK(kernel_compile_target(sm90, parse_target("sm_90a")) == "sm_90a");
  CHECK(kernel_compile_target(kernel_by_name("attention_sm80"), parse_target("sm_90")) == "sm_90");
  CHECK(kernel_compile_target(kernel_by_name("prepare"), parse_target("gfx1201:xnack-")) == "gfx1201:xnack-");
}

// D=256 (and D=160, run at 256): the wgmma kernel refuses it with the reason, the sm_90 and sm_89 tables
// give the mma.sync kernel at 16 rows per warp, and the plan's objects (attention and prepare, both
// PV formats' V order) compile under NVRTC with no local memory.
TEST_CASE("head dims above 128 plan onto attention_sm80 on sm_90 and sm_89; its objects compile without spills") {
  const std::string refused = check_kernel_config(kernel_by_name("attention_sm90"), wgmma_config(4, 64, 2, 1),
                                                  spec_of(256, false), "sm_90");
  CHECK_MESSAGE(refused.find("head_dim 256") != std::string::npos, refused);
  TileConfig wide_rows{{"warps", 4}, {"rows_per_warp", 32}, {"block_n", 32}, {"stages", 2}, {"pv_fp16", 0}};
  const std::string too_many = check_kernel_config(kernel_by_name("attention_sm80"), wide_rows, spec_of(256, false), "sm_90");
  CHECK_MESSAGE(too_many.find("rows_per_warp 32") != std::string::npos, too_many);

  const Compiler* nvrtc = nullptr;
  try {
    nvrtc = &compiler(CompilerKind::nvrtc);
  } catch (const Error& error) {
    FAIL("NVRTC could not be loaded, so the D=256 objects cannot be compiled: " << std::string(error.what()));
  }
  int compiled = 0;
  for (const char* target : {"sm_90", "sm_89"})
    for (const auto& [head_dim, causal] : {std::pair{256, false}, std::pair{160, true}}) {
      AttentionCall call;
      call.seq_q = call.seq_kv = 1000;
      call.head_dim = head_dim;
      call.sm_scale = 0.0625f;
      call.causal = call.want_lse = causal;
      call.dtype = causal ? DType::fp16 : DType::bf16;
      const AttentionPlan plan = plan_attention(call, target);
      CAPTURE(target);
      CAPTURE(head_dim);
      CHECK(plan.spec.head_dim == 256);
      CHECK(plan.attention->name == "attention_sm80");
      CHECK(plan.attention_config.at("rows_per_warp") == 16);
      for (const auto& [desc, config] : {std::pair{plan.attention, plan.attention_config}, {plan.prepare, plan.prepare_config}}) {
        const KernelBuild build = plan_build(*desc, config, plan.spec, target, *nvrtc);
        const CompileResult result = nvrtc->compile({build.rendered.name, build.rendered.source, build.rendered.target,
                                                     build.rendered.options});
        REQUIRE(result.code.size() > 4);
#if SAGEJIT_HAVE_CODE_OBJECT_STATS
        const tools::CodeObjectStats stats = tools::read_code_object_stats(result.code);
        REQUIRE(stats.registers.has_value());
        REQUIRE(stats.scratch.has_value());
        // The attention kernel without local memory; prepare with at most the 8-byte stack frame its
        // D=128 object has too (NVRTC 13).
        CHECK(*stats.scratch <= (desc == plan.attention ? 0u : 8u));
        MESSAGE(target << " " << desc->name << " " << config_id(config) << " D" << head_dim << ": "
                       << tools::figure(stats.registers) << " registers, " << tools::figure(stats.scratch)
                       << " bytes of local memory per thread");
#endif
        ++compiled;
      }
    }
  CHECK(compiled == 8);
}
