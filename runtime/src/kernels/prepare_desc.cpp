// Descriptor of kernel_src/prepare.cu: the prepare stage for every vendor (one source). It writes V
// in the format the attention kernel of the call reads (Specialization::v, which the attention plan
// takes from that kernel's descriptor).
#include "kernels/launch_shapes.hpp"

namespace sagejit {
namespace {

constexpr int k_mean_chunk = 64;  // SJ_K_MEAN_CHUNK
constexpr int quant_block = 32;   // SJ_QUANT_BLOCK
constexpr int seq_pad = 128;      // SJ_SEQ_PAD

unsigned round_up(int value, int multiple) { return static_cast<unsigned>((value + multiple - 1) / multiple * multiple); }

LaunchGeometry prepare_geometry(int entry, const TileConfig& config, const Specialization&, const ProblemShape& shape) {
  LaunchGeometry geometry;
  geometry.block = {static_cast<unsigned>(config.at("threads")), 1, 1};
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
    .targets = {{.vendor = Vendor::nvidia}, {.vendor = Vendor::amd}},
    .specialized_on = spec_head_dim | spec_dtype | spec_v_format,
    .params = {{"threads", {128, 256}, 256, "SJ_PREPARE_THREADS"}},
    .geometry = prepare_geometry,
};

}  // namespace sagejit
