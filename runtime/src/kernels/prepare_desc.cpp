// Descriptor of kernel_src/prepare.cu: the prepare stage for every vendor (one source). It writes V
// in the format the attention kernel of the call reads (Specialization::v, which the attention plan
// takes from that kernel's descriptor).
#include <cstdint>

#include "common/constants.h"
#include "kernels/launch_shapes.hpp"

namespace sagejit {
namespace {

LaunchGeometry prepare_geometry(int entry, const TileConfig& config, const Specialization& spec,
                                const ProblemShape& shape) {
  LaunchGeometry geometry;
  geometry.block = {static_cast<unsigned>(config.at("threads")), 1, 1};
  const unsigned b = static_cast<unsigned>(shape.batch), hk = static_cast<unsigned>(shape.heads_kv);
  switch (entry) {
    case 0:  // sj_prepare_stats
      geometry.grid = {static_cast<unsigned>(sj_k_mean_chunks(shape.seq_kv)), hk, b};
      break;
    case 1:  // sj_prepare_finalize
      geometry.grid = {hk, b, static_cast<unsigned>(spec.head_dim / SJ_FINALIZE_CHANNELS)};
      break;
    default:  // sj_prepare_quantize (plan/kernel_limits.cpp keeps its block indices within an int)
      geometry.grid = {static_cast<unsigned>(sj_quantize_workgroups<std::int64_t>(shape.heads_q, shape.seq_q,
                                                                                  shape.heads_kv, shape.seq_kv)),
                       b, 1};
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
    .specialized_on = spec_head_dim | spec_dtype | spec_v_format | spec_key_mask,
    .params = {{"threads", {128, 256}, 256, "SJ_PREPARE_THREADS"}},
    .geometry = prepare_geometry,
};

}  // namespace sagejit
