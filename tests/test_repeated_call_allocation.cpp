// A repeated attention call allocates nothing on the host (issue 24): the steps attention() takes after
// the first call of a signature (validate_attention, checked device target, cached_plan, the JIT's
// kernel lookup, the workspace lease, launch_attention) run under a counting global operator new, on a
// fake device with a fake compiler (no GPU, nothing compiled), for NVIDIA and AMD targets, with and
// without an LSE, in both layouts. The launches carry the repeated call's own pointers.
// tests/test_gpu_repeated_call_allocation.cpp checks the public attention() and the C ABI on a GPU.
#include <doctest/doctest.h>

#include <array>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "api/attention_problem.hpp"
#include "api/workspace_pool.hpp"
#include "allocation_counter.hpp"
#include "api_test_support.hpp"
#include "cache/code_cache.hpp"
#include "cache_test_support.hpp"
#include "fake_gpu_support.hpp"
#include "common/params.h"
#include "core/error.hpp"
#include "jit/jit.hpp"
#include "kernels/registry.hpp"
#include "plan/attention_runner.hpp"
#include "plan/plan_cache.hpp"

using namespace sagejit;
using namespace sagejit::test;

namespace {

class FakeCompiler final : public Compiler {
 public:
  CompilerKind kind() const override { return CompilerKind::clang; }
  std::string identity() const override { return "fake-compiler " + version_; }
  std::string location() const override { return "(test)"; }
  std::vector<std::string> base_options(const std::string&) const override { return {"-O3"}; }
  CompileResult compile(const CompileRequest& request) const override {
    CompileResult result;
    const Target target = parse_target(request.target);
    result.code = fake_code_object(request.source, target.is_nvidia() ? elf_machine_cuda : elf_machine_amdgpu);
    return result;
  }
  std::string version_ = std::to_string(test::rng()());  // fresh identity: no stale keys across runs
};

// One launch as the device saw it: the function and the parameter struct's first pointers.
struct SeenLaunch {
  void* function;
  const void* first_input;  // prepare: q; attention: the quantized Q in the workspace
};

class FakeDevice final : public FakeDeviceBase {
 public:
  FakeDevice(Vendor vendor, std::string target) : FakeDeviceBase(vendor, std::move(target)) {}
  void launch(int, void* function, const LaunchGeometry&, Stream, void** args) override {
    // Both parameter structs start with device pointers: prepare's q, attention's q8.
    const void* first = *static_cast<const void* const*>(args[0]);
    if (seen_count < seen.size()) seen[seen_count] = {function, first};
    ++seen_count;
  }

  std::array<SeenLaunch, 8> seen{};  // fixed storage: recording a launch allocates nothing
  std::size_t seen_count = 0;
};

// What attention() does for one call after validation: the device's target, the plan, the kernels,
// a workspace lease and the launches (api/attention_api.cpp with the fake device, compiler and cache).
struct Pipeline {
  FakeDevice& device;
  const Compiler& compiler;
  CodeCache& cache;
  Stream stream;

  const AttentionPlan* run(const ValidCall& call) {
    const AttentionProblem problem = validate_attention(call.q, call.k, call.v, call.out, call.options);
    const std::shared_ptr<const AttentionPlan> plan =
        cached_plan(problem.call, device_target(device, problem.device));
    const PlanKernels kernels{
        &load_kernel(device, problem.device, *plan->prepare, plan->prepare_config, plan->spec, compiler, cache),
        &load_kernel(device, problem.device, *plan->attention, plan->attention_config, plan->spec, compiler, cache)};
    const WorkspacePool::Lease lease =
        workspace_pool().acquire(device, problem.device, stream, plan->workspace.total_bytes);
    launch_attention(device, problem.device, *plan, kernels, problem.call, lease.data(), stream);
    return plan.get();  // the cache keeps it
  }
};

// The same call at other addresses: a repeated signature.
ValidCall moved(ValidCall call, std::uintptr_t offset) {
  for (TensorView* view : {&call.q, &call.k, &call.v, &call.out})
    view->data = static_cast<char*>(view->data) + offset * 256;
  if (call.options.lse != nullptr) call.options.lse += offset * 64;
  return call;
}

}  // namespace

TEST_CASE("a repeated call allocates nothing on the host and launches with its own pointers") {
  test::TempDir root;
  CodeCache cache(test::settings_for(root / "cache"));
  const FakeCompiler compiler;
  // Process-wide singletons (the workspace pool) keep the device's address: it outlives them.
  static FakeDevice nvidia(Vendor::nvidia, "sm_90");
  static FakeDevice amd(Vendor::amd, "gfx1201:xnack-");
  for (int round = 0; round < 24; ++round) {
    FakeDevice& device = round % 2 == 0 ? nvidia : amd;
    // Keys up to 3000: both sides of the finalize rule (plan finalize_in_quantize, 1024 keys).
    ValidCall call = make_valid_call(round % 4 < 2 ? Layout::HND : Layout::NHD, 3000);
    if (random_in(0, 1) != 0) call.options.lse = static_cast<float*>(fake_pointer(5));
    call.options.causal = random_in(0, 1) != 0;
    CAPTURE(round);
    CAPTURE(device.info(0).full_target);
    CAPTURE(call.q.shape);
    Pipeline pipeline{device, compiler, cache, reinterpret_cast<Stream>(static_cast<std::uintptr_t>(0x100 + round % 3))};
    const AttentionPlan* plan = pipeline.run(call);  // first call: plans, loads, grows the workspace

    for (std::uintptr_t repeat = 1; repeat <= 3; ++repeat) {
      const ValidCall again = moved(call, repeat);
      device.seen_count = 0;
      test::AllocationCount allocations;
      const AttentionPlan* repeated = pipeline.run(again);
      CHECK(allocations.stop() == 0);
      CHECK(repeated == plan);
      // stats (when gathered), finalize (unless in quantize), quantize, attention; prepare reads the
      // call's own q.
      const std::size_t launches = 2 + (plan->gather_stats() ? 1 : 0) + (plan->finalize_in_quantize() ? 0 : 1);
      REQUIRE(device.seen_count == launches);
      CHECK(device.seen[0].first_input == again.q.data);
      CHECK(device.seen[launches - 1].first_input != nullptr);
    }
  }
}

TEST_CASE("the finalize kernel is launched exactly for key sequences past 16 K-mean chunks") {
  test::TempDir root;
  CodeCache cache(test::settings_for(root / "cache"));
  const FakeCompiler compiler;
  static FakeDevice device(Vendor::nvidia, "sm_90");
  for (const std::int64_t seq_kv : {1, 64, 1024, 1025, 4096}) {
    CAPTURE(seq_kv);
    ValidCall call = make_valid_call(Layout::HND, 1);
    for (TensorView* view : {&call.k, &call.v}) {
      view->shape[2] = seq_kv;
      view->strides = contiguous_strides(view->shape);
    }
    Pipeline pipeline{device, compiler, cache, reinterpret_cast<Stream>(std::uintptr_t{0x200})};
    device.seen_count = 0;
    const AttentionPlan* plan = pipeline.run(call);  // smoothing (the default): stats run
    CHECK(plan->finalize_in_quantize() == (seq_kv <= 1024));
    CHECK(device.seen_count == (seq_kv <= 1024 ? 3u : 4u));
  }
}

TEST_CASE("a repeated kernel lookup tells every specialization field apart, the key mask too") {
  test::TempDir root;
  CodeCache cache(test::settings_for(root / "cache"));
  const FakeCompiler compiler;
  static FakeDevice device(Vendor::nvidia, "sm_90");
  const KernelDesc& prepare = kernel_by_name("prepare");
  const TileConfig config{{"threads", 256}};
  Specialization plain;
  Specialization masked = plain;
  masked.key_mask = true;
  const LoadedKernel* first_plain = &load_kernel(device, 0, prepare, config, plain, compiler, cache);
  const LoadedKernel* first_masked = &load_kernel(device, 0, prepare, config, masked, compiler, cache);
  CHECK(first_plain != first_masked);  // two code objects (SJ_KEY_MASK 1 renders another source)
  for (int repeat = 0; repeat < 3; ++repeat) {  // the remembered (fast) lookups keep them apart
    CHECK(&load_kernel(device, 0, prepare, config, masked, compiler, cache) == first_masked);
    CHECK(&load_kernel(device, 0, prepare, config, plain, compiler, cache) == first_plain);
  }
}

TEST_CASE("the counting operator new counts (the check above can fail)") {
  test::AllocationCount allocations;
  std::string grown(100, 'x');  // past the small-string buffer: one allocation
  const std::vector<int> numbers(10, 1);
  const auto aligned = std::make_unique<std::array<std::max_align_t, 4>>();
  CHECK(allocations.stop() == 3);
  CHECK(grown.size() == 100);
  CHECK(numbers.size() == 10);
}
