// What the wheel's precompiled set (SAGEJIT_WHEEL_PRECOMPILE: sagejit-precompile --all-specializations
// per gfx12 arch) must hold: for every call a diffusers or ComfyUI run can make with the shipped
// tables (bf16/fp16, every accepted head dim, so the zero-padded ones too, causal or not, with or
// without LSE, any sequence lengths, GQA), the attention config the plan picks is one precompile
// builds for that call's problem — the table's default or an entry of the call's dtype, kernel head
// dim and causal flag (tools/sagejit-precompile.cpp, family_configs) — and the specialization is
// one of the dtype x kernel head dim x causal x LSE x key mask it enumerates. A plan that reached past that set
// (a nearest-entry fallback into another problem's config) would compile on a default user's first call.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/tile_config.hpp"
#include "jit/kernel_config.hpp"
#include "jit/kernel_desc.hpp"
#include "kernels/registry.hpp"
#include "plan/attention_plan.hpp"

namespace fs = std::filesystem;
using namespace sagejit;

namespace {

// The attention configs precompile builds for (dtype, kernel head dim, causal) from the shipped table,
// as the kernel each selects reads them (without the switches of the family's other kernels, as the
// plan's config is) and as a specialization runs a table's config (kernel_table_config: gfx12's key
// mask at 16 rows per wave; precompile passes its configs as the tables').
std::vector<TileConfig> precompiled_configs(const nlohmann::json& attention, const std::string& arch,
                                            const std::string& dtype, int head_dim, bool causal,
                                            const Specialization& spec) {
  std::vector<TileConfig> configs{attention.at("default").get<TileConfig>()};
  for (const nlohmann::json& entry : attention.at("entries")) {
    const nlohmann::json& problem = entry.at("problem");
    if (problem.at("dtype") == dtype && problem.at("head_dim") == head_dim && problem.at("causal") == causal)
      configs.push_back(entry.at("config").get<TileConfig>());
  }
  for (TileConfig& config : configs) {
    const KernelDesc& kernel = find_kernel("attention", arch, config);
    config = kernel_table_config(kernel, kernel_config_of(kernel, config), spec);
  }
  return configs;
}

}  // namespace

TEST_CASE("every gfx12 call the shipped tables can plan is in the wheel's precompiled set") {
  const std::vector<std::int64_t> lengths{1, 77, 128, 300, 512, 513, 1024, 1025, 2047, 2048, 4095, 4096, 4608, 9216, 75600};
  int calls = 0;
  for (const std::string arch : {"gfx1201", "gfx1200"}) {
    std::ifstream file(fs::path(SAGEJIT_SOURCE_DIR) / "configs" / (arch + ".json"));
    REQUIRE(file.good());
    const nlohmann::json attention = nlohmann::json::parse(file).at("kernels").at("attention");
    for (const DType dtype : {DType::bf16, DType::fp16})
      for (std::int64_t head_dim = 8; head_dim <= 256; head_dim += 8)
        for (const bool causal : {false, true})
          for (const bool lse : {false, true})
           for (const bool masked : {false, true})
            for (const std::int64_t seq_q : lengths)
              for (const std::int64_t seq_kv : {seq_q, std::int64_t{77}, std::int64_t{4608}}) {
                AttentionCall call;
                call.batch = 1;
                call.heads_q = 8;
                call.heads_kv = 2;
                call.seq_q = seq_q;
                call.seq_kv = seq_kv;
                call.head_dim = head_dim;
                call.dtype = dtype;
                call.causal = causal;
                call.want_lse = lse;
                call.sm_scale = 0.125f;
                static const unsigned char mask_byte = 1;
                if (masked) call.key_mask = {&mask_byte, 1, 0, 1};  // a key mask: only its presence plans
                const AttentionPlan plan = plan_attention(call, arch);
                const std::string dtype_name = dtype == DType::bf16 ? "bf16" : "fp16";
                CAPTURE(arch);
                CAPTURE(dtype_name);
                CAPTURE(head_dim);
                CAPTURE(causal);
                CAPTURE(seq_q);
                CAPTURE(seq_kv);
                CHECK(is_kernel_head_dim(plan.spec.head_dim));
                CHECK(plan.spec.causal == causal);
                CHECK(plan.spec.write_lse == lse);
                CHECK(plan.spec.key_mask == masked);
                CHECK(plan.spec.dtype == (dtype == DType::bf16 ? 0 : 1));
                const std::vector<TileConfig> built = precompiled_configs(attention, arch, dtype_name, plan.spec.head_dim, causal, plan.spec);
                const bool covered = std::find(built.begin(), built.end(), plan.attention_config) != built.end();
                CHECK_MESSAGE(covered, "planned config ", config_id(plan.attention_config), " is not precompiled");
                ++calls;
              }
  }
  MESSAGE(calls, " calls planned");
}
