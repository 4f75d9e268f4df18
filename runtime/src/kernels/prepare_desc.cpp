// Descriptor of kernel_src/prepare.cu: the prepare stage for every vendor (one source). The only
// arch-specific choice is the key order of the transposed V, which the attention kernel of the
// target dictates: the sm80 kernel's fp8 family reads V in sj_sm80_v_slot_of_key order, every other
// kernel (sm80 fp16 family, gfx12) in natural order.
#include <fmt/format.h>

#include "kernels/registry.hpp"

namespace sagejit {
namespace {

constexpr int k_mean_chunk = 64;  // SJ_K_MEAN_CHUNK
constexpr int quant_block = 32;   // SJ_QUANT_BLOCK
constexpr int seq_pad = 128;      // SJ_SEQ_PAD

bool prepare_supports(const std::string& target) { return target.rfind("sm_", 0) == 0 || target.rfind("gfx", 0) == 0; }

int threads_of(const TileConfig& config) {
  const auto it = config.find("threads");
  return it == config.end() ? 256 : it->second;
}

std::string prepare_check(const TileConfig& config, const Specialization& spec, const std::string&) {
  for (const auto& [name, value] : config)
    if (name != "threads") return fmt::format("unknown prepare parameter \"{}\" (accepted: threads)", name);
  const int threads = threads_of(config);
  if (threads != 128 && threads != 256) return fmt::format("prepare threads {} is not one of [128, 256]", threads);
  if (spec.head_dim != 64 && spec.head_dim != 128) return fmt::format("head_dim {} is not one of [64, 128]", spec.head_dim);
  if (spec.dtype != 0 && spec.dtype != 1) return fmt::format("dtype {} is not bf16 (0) or fp16 (1)", spec.dtype);
  return {};
}

// The sm80 attention kernel's fp8 family wants V keys permuted inside each group of 32.
bool permuted_v(const Specialization& spec) { return spec.target.rfind("sm_", 0) == 0 && !spec.pv_fp16; }

std::vector<std::pair<std::string, std::string>> prepare_defines(const TileConfig& config, const Specialization& spec) {
  return {{"SJ_HEAD_DIM", std::to_string(spec.head_dim)},
          {"SJ_DTYPE", std::to_string(spec.dtype)},
          {"SJ_PV_FP16", spec.pv_fp16 ? "1" : "0"},
          {"SJ_PREPARE_THREADS", std::to_string(threads_of(config))},
          {"SJ_V_PERMUTE", permuted_v(spec) ? "1" : "0"}};
}

unsigned round_up(int value, int multiple) { return static_cast<unsigned>((value + multiple - 1) / multiple * multiple); }

LaunchGeometry prepare_geometry(int entry, const TileConfig& config, const Specialization&, const ProblemShape& shape) {
  LaunchGeometry geometry;
  geometry.block = {static_cast<unsigned>(threads_of(config)), 1, 1};
  const unsigned b = static_cast<unsigned>(shape.batch), hq = static_cast<unsigned>(shape.heads_q),
                 hk = static_cast<unsigned>(shape.heads_kv);
  switch (entry) {
    case 0:  // sj_prepare_stats
      geometry.grid = {static_cast<unsigned>((shape.seq_kv + k_mean_chunk - 1) / k_mean_chunk), hk, b};
      break;
    case 1:  // sj_prepare_finalize
      geometry.grid = {hk, b, 1};
      break;
    default: {  // sj_prepare_quantize
      const unsigned q_blocks = round_up(shape.seq_q, seq_pad) / quant_block;
      const unsigned k_blocks = round_up(shape.seq_kv, seq_pad) / quant_block;
      geometry.grid = {hq * q_blocks + 2 * hk * k_blocks, b, 1};
    }
  }
  return geometry;
}

}  // namespace

extern const KernelDesc prepare_kernel{
    .name = "prepare",
    .family = "prepare",
    .source_path = "prepare.cu",
    .entries = {"sj_prepare_stats", "sj_prepare_finalize", "sj_prepare_quantize"},
    .supports_target = prepare_supports,
    .check_config = prepare_check,
    .defines = prepare_defines,
    .geometry = prepare_geometry,
};

}  // namespace sagejit
