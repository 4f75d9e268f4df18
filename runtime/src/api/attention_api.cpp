// The public C++ API (sagejit/sagejit.hpp): validate, resolve the device, choose kernels, find a
// workspace, enqueue; and the API's part in choosing the GPU runtime libraries, the host's search
// directories (set_library_search_dirs; the rule itself is platform/runtime_discovery).
#include <cstdint>
#include <memory>

#include "api/attention_problem.hpp"
#include "api/device_support.hpp"
#include "api/workspace_pool.hpp"
#include "build_info.hpp"
#include "core/error.hpp"
#include "jit/jit.hpp"
#include "plan/attention_runner.hpp"
#include "plan/plan_cache.hpp"
#include "platform/runtime_discovery.hpp"
#include "sagejit/sagejit.hpp"

namespace sagejit {
namespace {

// A validated call on its device with its plan (kernels, configs, workspace) for the device's target,
// planned once per signature (plan/plan_cache.hpp).
struct PreparedCall {
  AttentionProblem problem;
  Device* backend = nullptr;
  std::shared_ptr<const AttentionPlan> plan;
};

PreparedCall prepare_call(const TensorView& q, const TensorView& k, const TensorView& v, const TensorView* out,
                          const AttentionOptions& options) {
  PreparedCall call;
  call.problem = out != nullptr ? validate_attention(q, k, v, *out, options) : validate_attention_inputs(q, k, v, options);
  call.backend = &checked_backend(call.problem.device);
  call.plan = cached_plan(call.problem.call, device_target(*call.backend, call.problem.device));
  return call;
}

}  // namespace

Support supports(const TensorView& q, const TensorView& k, const TensorView& v, const TensorView& out,
                 const AttentionOptions& options) {
  try {
    prepare_call(q, k, v, &out, options);
    return {true, {}};
  } catch (const Error& error) {
    return {false, error.what()};
  }
}

std::size_t workspace_size(const TensorView& q, const TensorView& k, const TensorView& v,
                           const AttentionOptions& options) {
  return prepare_call(q, k, v, nullptr, options).plan->workspace.total_bytes;
}

void attention(const TensorView& q, const TensorView& k, const TensorView& v, const TensorView& out,
               const AttentionOptions& options, void* stream) {
  const PreparedCall call = prepare_call(q, k, v, &out, options);
  const WorkspacePool::Lease lease = workspace_pool().acquire(*call.backend, call.problem.device, stream,
                                                              call.plan->workspace.total_bytes);
  run_attention(*call.backend, call.problem.device, *call.plan, call.problem.call, lease.data(), stream);
}

void attention(const TensorView& q, const TensorView& k, const TensorView& v, const TensorView& out,
               const AttentionOptions& options, void* stream, Workspace workspace) {
  const PreparedCall call = prepare_call(q, k, v, &out, options);
  const std::size_t needed = call.plan->workspace.total_bytes;
  if (workspace.data == nullptr)
    fail(ErrorCode::invalid_argument, "workspace.data is null; pass a device buffer of at least {} bytes", needed);
  if (workspace.bytes < needed)
    fail(ErrorCode::invalid_argument, "workspace.bytes {} is too small: this call needs {} bytes (workspace_size())",
         workspace.bytes, needed);
  if (reinterpret_cast<std::uintptr_t>(workspace.data) % WorkspaceLayout::alignment != 0)
    fail(ErrorCode::invalid_argument, "workspace.data {} is not aligned to {} bytes", workspace.data,
         WorkspaceLayout::alignment);
  run_attention(*call.backend, call.problem.device, *call.plan, call.problem.call, workspace.data, stream);
}

void release_workspaces() { workspace_pool().release_all(); }

std::size_t workspace_bytes_held() { return workspace_pool().bytes_held(); }

std::vector<std::string> supported_archs() { return attention_archs(); }

Support supports_head_dim(std::int64_t head_dim) {
  try {
    check_head_dim(head_dim);
    return {true, {}};
  } catch (const Error& error) {
    return {false, error.what()};
  }
}

void set_library_search_dirs(const std::vector<std::string>& directories) { hand_over_library_dirs(directories); }

std::string_view version() noexcept { return build::version; }

}  // namespace sagejit
