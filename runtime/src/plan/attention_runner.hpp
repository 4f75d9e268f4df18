#pragma once
// Launches one planned attention call on a device: the prepare kernels (Q/K/V quantization into the
// workspace) and then the attention kernel, on the caller's stream. Vendor-neutral: the kernels are
// the plan's (plan/attention_plan.hpp), loaded through the JIT (jit/jit.hpp), so the same code drives
// the NVIDIA and AMD backends.
#include "device/device.hpp"
#include "jit/jit.hpp"
#include "plan/attention_call.hpp"
#include "plan/attention_plan.hpp"

namespace sagejit {

// The plan's two kernels loaded on one device (jit/jit.hpp: loaded once, then a lookup).
struct PlanKernels {
  const LoadedKernel* prepare = nullptr;
  const LoadedKernel* attention = nullptr;
};

// The plan's kernels on `ordinal` of `device`, through the process-wide code cache and the device's
// compiler (load_kernel). Throws what the JIT throws.
PlanKernels load_plan_kernels(Device& device, int ordinal, const AttentionPlan& plan);

// Enqueues the plan's prepare and attention kernels (`kernels`, loaded for this plan on this device)
// on `stream`: what a repeated call does after its lookups, with no host allocation. `workspace`,
// q, k, v and out as run_attention says; throws like it.
void launch_attention(Device& device, int ordinal, const AttentionPlan& plan, const PlanKernels& kernels,
                      const AttentionCall& call, void* workspace, Stream stream);

// Loads (compiling on first use) the plan's kernels and enqueues them on `stream`. `workspace` must
// hold plan.workspace.total_bytes bytes of device memory; q, k, v and out must be device pointers.
// Throws Error(invalid_argument) for a null pointer, and what the JIT and the device throw.
void run_attention(Device& device, int ordinal, const AttentionPlan& plan, const AttentionCall& call, void* workspace,
                   Stream stream);

// Plans `call` for the device's target and runs it (tools and tests that bring their own workspace).
void run_attention(Device& device, int ordinal, const AttentionCall& call, void* workspace, Stream stream);

}  // namespace sagejit
