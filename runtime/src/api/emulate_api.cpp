// The public CPU emulation (sagejit::emulate_attention, sagejit_emulate_attention): the call a GPU
// would get, validated and planned for a named target exactly as attention() does, then computed by
// the CPU emulator (numerics/) on host memory instead of being launched.
#include <algorithm>
#include <string>

#include <fmt/ranges.h>

#include "api/attention_problem.hpp"
#include "api/device_support.hpp"
#include "core/error.hpp"
#include "core/target.hpp"
#include "numerics/emulator.hpp"
#include "plan/attention_plan.hpp"
#include "plan/emulator_options.hpp"
#include "sagejit/sagejit.hpp"

namespace sagejit {
namespace {

// `target` parsed, when it names an arch with attention kernels (features allowed: "gfx1201:xnack-").
Target emulation_target(std::string_view target) {
  const std::vector<std::string> archs = attention_archs();
  const std::optional<Target> parsed = try_parse_target(target);
  if (!parsed || std::find(archs.begin(), archs.end(), parsed->arch) == archs.end())
    fail(ErrorCode::invalid_argument,
         "target \"{}\" is not an arch with sagejit kernels; accepted: [{}] (the GPU whose kernels' numerics are "
         "emulated)",
         target, fmt::join(archs, ", "));
  return *parsed;
}

// Host tensors carry no device: validation sees them all on one (unused) ordinal.
TensorView on_host(TensorView view) {
  view.device = 0;
  return view;
}

// The call validated and planned for `target`, as attention() on that GPU would (nothing is computed).
struct TargetCall {
  AttentionProblem problem;
  AttentionPlan plan;
};

TargetCall plan_for_target(const TensorView& q, const TensorView& k, const TensorView& v, const TensorView& out,
                           const AttentionOptions& options, std::string_view target) {
  AttentionOptions host_options = options;
  host_options.device = -1;
  host_options.key_mask.device = 0;  // host memory, like the tensors (on_host)
  TargetCall call;
  call.problem = validate_attention(on_host(q), on_host(k), on_host(v), on_host(out), host_options);
  call.plan = plan_attention(call.problem.call, emulation_target(target));
  return call;
}

}  // namespace

Support supports_target(const TensorView& q, const TensorView& k, const TensorView& v, const TensorView& out,
                        const AttentionOptions& options, std::string_view target) {
  try {
    plan_for_target(q, k, v, out, options, target);
    return {true, {}};
  } catch (const Error& error) {
    return {false, error.what()};
  }
}

void emulate_attention(const TensorView& q, const TensorView& k, const TensorView& v, const TensorView& out,
                       const AttentionOptions& options, std::string_view target) {
  const TargetCall call = plan_for_target(q, k, v, out, options, target);
  const AttentionProblem& problem = call.problem;
  const AttentionPlan& plan = call.plan;
  const numerics::EmulatorOptions emulator = emulator_options_for(plan, problem.call);
  if (problem.call.varlen.present()) {  // host cu_seqlens, like the tensors
    const Varlen& varlen = options.varlen;
    numerics::varlen_attention_into(q, k, v, out, varlen.cu_seqlens_q, varlen.cu_seqlens_k, varlen.batch,
                                    varlen.max_seqlen_q, varlen.max_seqlen_k, emulator, options.lse);
    return;
  }
  const numerics::PreparedTensors prepared = numerics::prepare(q, k, v, options.layout, emulator);
  numerics::attention_into(prepared, emulator, out, options.layout, options.lse);
}

}  // namespace sagejit
