#pragma once
// The CPU emulator's options that reproduce a plan: the one place that maps what plan_attention chose
// (key tile, V format, causal, LSE, smoothing) onto numerics::EmulatorOptions. The C ABI's CPU
// emulation, the GPU tests, the tools and the benchmarks all ask it.
#include "numerics/emulator.hpp"
#include "plan/attention_call.hpp"
#include "plan/attention_plan.hpp"

namespace sagejit {

// The emulator options that predict what `plan` computes for `call` (its key tile and V format).
numerics::EmulatorOptions emulator_options_for(const AttentionPlan& plan, const AttentionCall& call);

}  // namespace sagejit
