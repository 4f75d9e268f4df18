#pragma once
// The attention harness shared by the GPU tests, the tools (selftest, autotune) and the benchmarks:
// the runtime call for host tensors and their device copies, the plan's V key order, and the prepare
// stage's workspace read back in the emulator's form (the emulator options of a plan are
// plan/emulator_options.hpp).
// Everything here follows the plan (plan/attention_plan.hpp); nothing re-derives a rule of it.
#include <cstddef>
#include <span>

#include "dev/numerics/workspace_compare.hpp"
#include "numerics/emulator.hpp"
#include "numerics/host_tensor.hpp"
#include "plan/attention_plan.hpp"
#include "plan/emulator_options.hpp"  // emulator_options_for, for every user of the harness

namespace sagejit {

// Device copies of q, k, v and the output (same layouts and strides as the host tensors).
struct DevicePointers {
  const void* q = nullptr;
  const void* k = nullptr;
  const void* v = nullptr;
  void* out = nullptr;
  float* lse = nullptr;  // fp32 [B, Hq, Nq], or null
};

// The runtime call for host tensors (sizes, dtype and strides from q, k, v and out) at `device`,
// with the emulator's default sm_scale (bit for bit) and no explicit configs.
AttentionCall attention_call_for(const numerics::HostTensor& q, const numerics::HostTensor& k,
                                 const numerics::HostTensor& v, const numerics::HostTensor& out, const DevicePointers& device, bool causal,
                                 bool smooth_k);

// The key order of V in the workspace: the plan's attention kernel's (VInput::order).
numerics::KeySlotMap v_key_slots(const AttentionPlan& plan);

// The prepare stage's output in a copy of the workspace, in the emulator's form.
numerics::PreparedTensors prepared_from_workspace(std::span<const std::byte> workspace, const AttentionPlan& plan,
                                                  const AttentionCall& call);

}  // namespace sagejit
