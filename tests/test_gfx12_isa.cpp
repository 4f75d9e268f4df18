// Build check of the gfx12 (RDNA4) attention kernel without an RDNA4 GPU: every config of the
// gfx1201 tuning table's candidate space that the descriptor accepts is rendered through the real
// render path, compiled for gfx1201 by the offline clang backend, and its code object put through
// the checks of tests/gfx12_isa_checks.hpp (WMMA counts at the algorithmic minimum inside the key
// loop, no scratch, LDS and VGPRs as the descriptor says); hipRTC's objects get the same checks in
// tests/hiprtc_objects_check.cpp.
// Specimens: bf16 D=128; fp16 D=64 causal + LSE; fp16 D=128 causal + LSE (the most VGPRs; 32-row configs).
// Also the shared prepare kernel (kernel_src/prepare.cu) is compiled for gfx1201, and the code objects
// the plan picks for calls of zero-padded head dims (D=40 and 96 run at 64 and 128). Skips (saying so)
// when clang-22 or the LLVM tools are missing.
#include <doctest/doctest.h>

#include "skip_support.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include "compiler/compiler.hpp"
#include "core/error.hpp"
#include "jit/kernel_config.hpp"
#include "kernels/attention_gfx12_desc.hpp"
#include "kernels/registry.hpp"
#include "jit/render.hpp"
#include "plan/attention_plan.hpp"
#include "gfx12_isa_checks.hpp"

namespace fs = std::filesystem;
using namespace sagejit;
using namespace sagejit::gfx12_isa;

namespace {

constexpr const char* kTarget = "gfx1201";

// Why this machine cannot build and inspect gfx1201 code objects (the LLVM tools found at configure
// time or the offline AMDGPU clang are missing), or empty when it can.
std::string missing_build_tools(const Tools& tools) {
  if (!tools.found()) return "llvm-objdump/llvm-readelf (22) not found at configure time";
  try {
    (void)clang_compiler();
  } catch (const Error& error) {
    return std::string("no offline AMDGPU clang: ") + error.what();
  }
  return {};
}

IsaFigures build_and_inspect(const KernelDesc& desc, const TileConfig& config, const Specialization& spec,
                             const Tools& tools, const fs::path& directory) {
  IsaFigures figures;
  try {
    const RenderedKernel rendered = render_kernel(desc, config, spec, kTarget);
    const auto start = std::chrono::steady_clock::now();
    const CompileResult result = clang_compiler().compile({rendered.name, rendered.source, kTarget, rendered.options});
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    figures = inspect_code(result.code, directory / (rendered.name + ".co"), kTarget, tools);
    figures.compile_seconds = seconds;
  } catch (const std::exception& error) {
    figures.error = error.what();
  }
  return figures;
}

std::vector<TileConfig> candidate_space(const nlohmann::json& params) {
  std::vector<TileConfig> configs{TileConfig{}};
  for (const auto& [name, values] : params.items()) {
    std::vector<TileConfig> next;
    for (const TileConfig& partial : configs)
      for (const auto& value : values) {
        TileConfig config = partial;
        config[name] = value.get<int>();
        next.push_back(config);
      }
    configs = std::move(next);
  }
  return configs;
}

struct Specimen {
  const char* label;
  Specialization spec;
  int only_rows_per_wave = 0;  // 0: every config; otherwise only configs with this rows_per_wave
};

}  // namespace

TEST_CASE("gfx12 attention: every candidate config compiles for gfx1201 with the algorithmic WMMA count, no scratch, LDS and VGPRs in budget") {
  const Tools tools = configured_tools();
  if (const std::string missing = missing_build_tools(tools); !missing.empty()) {
    SAGEJIT_SKIP(missing);
    return;
  }

  std::ifstream table_file(fs::path(SAGEJIT_SOURCE_DIR) / "configs" / "gfx1201.json");
  REQUIRE(table_file.good());
  const nlohmann::json table = nlohmann::json::parse(table_file);
  const nlohmann::json& attention = table.at("kernels").at("attention");
  // The configs of the space this kernel serves, as it reads them: a config-switched variant's
  // switch may be in the space (kernel_config_of drops it, as the plan does).
  std::vector<TileConfig> space;
  for (const TileConfig& config : candidate_space(attention.at("params")))
    if (kernel_serves_config(attention_gfx12_kernel, config)) space.push_back(kernel_config_of(attention_gfx12_kernel, config));
  REQUIRE(!space.empty());

  // bf16 D=128 plain; fp16 D=64 causal with LSE; and fp16 D=128 causal with LSE, the variant with the
  // most VGPRs (the mask and LSE paths add a few), built only for the configs within a few VGPRs of
  // the limit (32 rows per wave) to keep the test short.
  // With a key mask (docs/NUMERICS.md "Key masks"): bf16 D=128 and the heaviest variant (fp16 D=128
  // causal LSE), at 16 rows per wave, the only rows per wave the resource check accepts for it
  // (gfx12_key_mask_rows_per_wave: a table's 32-row config runs masked calls at 16).
  // D=256 (16 rows per wave: at 32 the O^T accumulators alone are 256 VGPRs): bf16 plain, and the
  // heaviest variant, fp16 causal LSE with a key mask.
  std::vector<Specimen> specimens(7);
  specimens[0].label = "bf16 D=128";
  specimens[0].spec.dtype = 0;
  specimens[0].spec.head_dim = 128;
  specimens[1].label = "fp16 D=64 causal lse";
  specimens[1].spec.dtype = 1;
  specimens[1].spec.head_dim = 64;
  specimens[1].spec.causal = true;
  specimens[1].spec.write_lse = true;
  specimens[2].label = "fp16 D=128 causal lse";
  specimens[2].spec.dtype = 1;
  specimens[2].spec.head_dim = 128;
  specimens[2].spec.causal = true;
  specimens[2].spec.write_lse = true;
  specimens[2].only_rows_per_wave = 32;
  specimens[3].label = "bf16 D=128 key mask";
  specimens[3].spec.dtype = 0;
  specimens[3].spec.head_dim = 128;
  specimens[3].spec.key_mask = true;
  specimens[3].only_rows_per_wave = 16;
  specimens[4].label = "fp16 D=128 causal lse key mask";
  specimens[4].spec = specimens[2].spec;
  specimens[4].spec.key_mask = true;
  specimens[4].only_rows_per_wave = 16;
  specimens[5].label = "bf16 D=256";
  specimens[5].spec.dtype = 0;
  specimens[5].spec.head_dim = 256;
  specimens[5].only_rows_per_wave = 16;
  specimens[6].label = "fp16 D=256 causal lse key mask";
  specimens[6].spec = specimens[4].spec;
  specimens[6].spec.head_dim = 256;
  specimens[6].only_rows_per_wave = 16;

  struct Job {
    const Specimen* specimen;
    TileConfig config;
    Gfx12AttentionFigures expected;
  };
  std::vector<Job> jobs;
  std::string rejected;
  for (const Specimen& specimen : specimens)
    for (const TileConfig& config : space) {
      if (specimen.only_rows_per_wave != 0 && config.at("rows_per_wave") != specimen.only_rows_per_wave) continue;
      const std::string reason = check_kernel_config(attention_gfx12_kernel, config, specimen.spec, kTarget);
      if (!reason.empty()) {
        rejected += fmt::format("{} {}: {}\n", specimen.label, config_id(config), reason);
        continue;
      }
      jobs.push_back({&specimen, config, gfx12_attention_figures(gfx12_attention_tile(config), specimen.spec.head_dim)});
    }
  if (!rejected.empty()) {
    const std::string note = "rejected by check_kernel_config (not built):\n" + rejected;
    MESSAGE(note);
  }
  // The table's default, as the plan runs it for each specimen (kernel_table_config), must be accepted.
  const TileConfig default_config = kernel_config_of(attention_gfx12_kernel, attention.at("default").get<TileConfig>());
  for (const Specimen& specimen : specimens) {
    // D=256 runs the tables' own entries (the default's 32 rows per wave do not fit): the plan test
    // below builds what the plan picks for it.
    if (specimen.spec.head_dim > 128) continue;
    const TileConfig fitted = kernel_table_config(attention_gfx12_kernel, default_config, specimen.spec);
    CHECK_MESSAGE(check_kernel_config(attention_gfx12_kernel, fitted, specimen.spec, kTarget).empty(),
                  "default config ", config_id(fitted), " rejected for ", specimen.label);
    if (specimen.spec.key_mask) CHECK(fitted.at("rows_per_wave") == gfx12_key_mask_rows_per_wave);
  }
  REQUIRE(!jobs.empty());

  const fs::path directory = fs::temp_directory_path() / fmt::format("sagejit-gfx12-isa-{}", ::getpid());
  fs::create_directories(directory);
  std::vector<IsaFigures> results(jobs.size());
  // Two compiles at a time (CI has two cores); each is ~1-3 s.
  for (std::size_t i = 0; i < jobs.size(); i += 2) {
    std::vector<std::future<IsaFigures>> running;
    for (std::size_t j = i; j < std::min(i + 2, jobs.size()); ++j)
      running.push_back(std::async(std::launch::async, build_and_inspect, std::cref(attention_gfx12_kernel),
                                   std::cref(jobs[j].config), std::cref(jobs[j].specimen->spec), std::cref(tools),
                                   std::cref(directory)));
    for (std::size_t j = 0; j < running.size(); ++j) results[i + j] = running[j].get();
  }

  std::string table_text = "specimen | config | VGPRs (estimate) | LDS B | QK+PV WMMA per tile per wave | compile s\n";
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    const Job& job = jobs[i];
    const IsaFigures& got = results[i];
    const std::string name = fmt::format("{} {}", job.specimen->label, config_id(job.config));
    INFO(name, ": ", got.error);
    REQUIRE(got.ok);
    table_text += fmt::format("{} | {} | {} ({}) | {} | {}+{} | {:.1f}\n", job.specimen->label, config_id(job.config),
                              got.vgprs, job.expected.vgpr_estimate, got.lds_bytes, got.qk_wmma, got.pv_wmma,
                              got.compile_seconds);
    check_attention(got, job.expected);
  }
  MESSAGE(table_text);

  // The shared prepare kernel (one source for both vendors) must build for gfx1201 too.
  const KernelDesc* prepare = nullptr;
  try {
    prepare = &kernel_by_name("prepare");
  } catch (const Error&) {
    MESSAGE("prepare kernel not registered yet: its gfx1201 build is not checked");
  }
  if (prepare != nullptr) {
    for (const Specimen& specimen : specimens) {
      const IsaFigures got = build_and_inspect(*prepare, TileConfig{{"threads", 256}}, specimen.spec, tools, directory);
      const std::string context = fmt::format("prepare {}: {}", specimen.label, got.error);
      INFO(context);
      REQUIRE(got.ok);
      MESSAGE(fmt::format("prepare {} gfx1201: {} VGPRs, {} B LDS, compile {:.1f} s", specimen.label, got.vgprs,
                          got.lds_bytes, got.compile_seconds));
      check_no_scratch(got);
    }
  }
  std::error_code ignored;
  fs::remove_all(directory, ignored);
}

TEST_CASE("gfx12 attention descriptor rejects what the kernel does not support, with reasons") {
  const Specialization spec;
  const TileConfig good{{"waves", 4}, {"rows_per_wave", 16}, {"block_n", 32}, {"stages", 2}};
  CHECK(check_kernel_config(attention_gfx12_kernel, good, spec, "gfx1201").empty());
  CHECK(check_kernel_config(attention_gfx12_kernel, good, spec, "gfx1200").empty());
  CHECK(check_kernel_config(attention_gfx12_kernel, good, spec, "gfx1201:xnack-").empty());
  CHECK(kernel_supports(attention_gfx12_kernel, "gfx1201:sramecc-:xnack-"));
  CHECK_FALSE(kernel_supports(attention_gfx12_kernel, "gfx1100"));
  CHECK_FALSE(kernel_supports(attention_gfx12_kernel, "sm_90"));
  CHECK(check_kernel_config(attention_gfx12_kernel, good, spec, "gfx942").find("gfx942") != std::string::npos);

  Specialization d96 = spec;
  d96.head_dim = 96;
  CHECK(check_kernel_config(attention_gfx12_kernel, good, d96, kTarget).find("head_dim 96") != std::string::npos);
  Specialization fp32 = spec;
  fp32.dtype = 2;
  CHECK(check_kernel_config(attention_gfx12_kernel, good, fp32, kTarget).find("dtype") != std::string::npos);
  // PV runs in fp8 on gfx12 (native WMMA): the fp16-PV family of the NVIDIA kernels is no parameter here.
  TileConfig pv16 = good;
  pv16["pv_fp16"] = 1;
  CHECK(check_kernel_config(attention_gfx12_kernel, pv16, spec, kTarget).find("pv_fp16") != std::string::npos);
  CHECK(kernel_v_input(attention_gfx12_kernel, good) == VInput{false, VOrder::natural});

  TileConfig unknown = good;
  unknown["lds_pad"] = 16;
  CHECK(check_kernel_config(attention_gfx12_kernel, unknown, spec, kTarget).find("lds_pad") != std::string::npos);
  TileConfig bad_bn = good;
  bad_bn["block_n"] = 128;
  CHECK(check_kernel_config(attention_gfx12_kernel, bad_bn, spec, kTarget).find("block_n 128") != std::string::npos);
  // 32 rows a wave at D=128 with 64-key tiles needs more than 256 VGPRs.
  const TileConfig heavy{{"waves", 4}, {"rows_per_wave", 32}, {"block_n", 64}, {"stages", 2}};
  CHECK(check_kernel_config(attention_gfx12_kernel, heavy, spec, kTarget).find("VGPRs") != std::string::npos);

  // Launch geometry: one workgroup per waves*rows_per_wave query rows, per head, per batch.
  ProblemShape shape;
  shape.batch = 3;
  shape.heads_q = 5;
  shape.seq_q = 1000;
  const LaunchGeometry geometry = kernel_geometry(attention_gfx12_kernel, 0, good, spec, shape);
  CHECK(geometry.grid[0] == 16u);  // ceil(1000 / 64)
  CHECK(geometry.grid[1] == 5u);
  CHECK(geometry.grid[2] == 3u);
  CHECK(geometry.block[0] == 128u);

  const auto defines = kernel_defines(attention_gfx12_kernel, good, spec);
  CHECK(std::find(defines.begin(), defines.end(), std::pair<std::string, std::string>{"SJ_BLOCK_N", "32"}) != defines.end());
  CHECK(std::find(defines.begin(), defines.end(), std::pair<std::string, std::string>{"SJ_HEAD_DIM", "128"}) != defines.end());
}

// Head dims other than 64, 128 and 256 run zero-padded (plan/attention_plan.hpp kernel_head_dim_for):
// the plan of a D=40 call (SD 1.5), of a D=96 causal LSE call (Lumina 2) and of a D=160 call (SD 1.5's
// deepest UNet blocks) on gfx1201 takes the D=64 / D=128 / D=256 code objects, whose prologue reads
// p.head_dim channels and whose epilogue writes p.head_dim columns; exactly those code objects (the
// plan's configs from the gfx1201 table) must build with clang-22, as must a D=256 causal LSE call's.
TEST_CASE("gfx12: the plan's kernels for head dims 40, 96, 160 (zero-padded) and 256 build for gfx1201") {
  const Tools tools = configured_tools();
  if (const std::string missing = missing_build_tools(tools); !missing.empty()) {
    SAGEJIT_SKIP(missing);
    return;
  }
  const fs::path directory = fs::temp_directory_path() / fmt::format("sagejit-gfx12-padded-{}", ::getpid());
  fs::create_directories(directory);
  for (const std::int64_t head_dim : {40, 96, 160, 256}) {
    AttentionCall call;
    call.heads_q = call.heads_kv = 2;
    call.seq_q = 300;
    call.seq_kv = 500;
    call.head_dim = head_dim;
    call.sm_scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
    call.causal = call.want_lse = head_dim == 96 || head_dim == 256;
    call.dtype = call.causal ? DType::fp16 : DType::bf16;
    const AttentionPlan plan = plan_attention(call, kTarget);
    CAPTURE(head_dim);
    CHECK(plan.head_dim == head_dim);
    CHECK(plan.spec.head_dim == (head_dim <= 64 ? 64 : head_dim <= 128 ? 128 : 256));
    for (const auto& [desc, config] : {std::pair{plan.attention, plan.attention_config}, {plan.prepare, plan.prepare_config}}) {
      const IsaFigures got = build_and_inspect(*desc, config, plan.spec, tools, directory);
      INFO(desc->name, " ", config_id(config), ": ", got.error);
      REQUIRE(got.ok);
      MESSAGE(fmt::format("D={} (run at {}) {} {}: {} VGPRs, {} B LDS, compile {:.1f} s", head_dim, plan.spec.head_dim,
                          desc->name, config_id(config), got.vgprs, got.lds_bytes, got.compile_seconds));
      if (desc == plan.attention)
        check_attention(got, gfx12_attention_figures(gfx12_attention_tile(config), plan.spec.head_dim));
      else
        check_no_scratch(got);
    }
  }
  std::error_code ignored;
  fs::remove_all(directory, ignored);
}
