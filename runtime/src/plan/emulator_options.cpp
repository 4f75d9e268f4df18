#include "plan/emulator_options.hpp"

namespace sagejit {

numerics::EmulatorOptions emulator_options_for(const AttentionPlan& plan, const AttentionCall& call) {
  numerics::EmulatorOptions options;
  options.causal = plan.spec.causal;
  options.smooth_k = plan.smooth_k;
  options.return_lse = plan.spec.write_lse;
  options.sm_scale = call.sm_scale;
  options.block_n = plan.attention_config.at("block_n");
  options.pv_fp16 = plan.spec.v.pv_fp16;
  options.head_dim_pad = plan.spec.head_dim;  // the kernel head dim: zero-padded channels
  options.pv_into_output = plan.attention != nullptr && plan.attention->pv_into_output;
  options.fused_scores = plan.attention != nullptr && plan.attention->fused_scores;
  options.sum_quantized_p = plan.attention != nullptr && plan.attention->sum_quantized_p;
  options.key_mask = call.key_mask;  // host memory when the emulator runs
  return options;
}

}  // namespace sagejit
