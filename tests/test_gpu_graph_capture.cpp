// Graph capture with the runtime's own workspace (docs/API.md, "Graph capture"): after a warm-up, a
// captured attention() is launch-only and its graph replays to the eager result; growth after the
// capture keeps the captured buffer alive; growth during a capture is a clear error that leaves the
// capture intact; a caller's workspace captures too. Skips without a GPU (or without graph support).
#include <doctest/doctest.h>

#include "skip_support.hpp"

#include <dlfcn.h>

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "gpu_attention_support.hpp"
#include "random_support.hpp"
#include "sagejit/sagejit.hpp"

using namespace sagejit;
using namespace sagejit::test;
using numerics::HostTensor;

namespace {

// The few graph calls of the vendor's driver-level API the test needs (the runtime itself never
// captures), resolved from the library the runtime loaded. CUDA driver API or HIP, same shapes.
struct GraphApi {
  using Handle = void*;
  int (*stream_create)(Handle* stream, unsigned flags) = nullptr;
  int (*stream_destroy)(Handle stream) = nullptr;
  int (*stream_synchronize)(Handle stream) = nullptr;
  int (*begin_capture)(Handle stream, int mode) = nullptr;
  int (*end_capture)(Handle stream, Handle* graph) = nullptr;
  int (*instantiate)(Handle* exec, Handle graph, unsigned long long flags) = nullptr;
  int (*launch)(Handle exec, Handle stream) = nullptr;
  int (*exec_destroy)(Handle exec) = nullptr;
  int (*graph_destroy)(Handle graph) = nullptr;
  std::string missing;

  // Makes device 0 current on this thread for the calls above (the runtime restores the caller's
  // context after each of its own calls, so the test sets its own).
  bool make_current(void* library, bool nvidia) {
    if (nvidia) {
      int (*device_get)(int*, int) = nullptr;
      int (*retain)(Handle*, int) = nullptr;
      int (*set_current)(Handle) = nullptr;
      resolve(library, device_get, "cuDeviceGet");
      resolve(library, retain, "cuDevicePrimaryCtxRetain");
      resolve(library, set_current, "cuCtxSetCurrent");
      if (!missing.empty()) return false;
      int device = 0;
      Handle context = nullptr;
      return device_get(&device, 0) == 0 && retain(&context, device) == 0 && set_current(context) == 0;
    }
    int (*set_device)(int) = nullptr;
    resolve(library, set_device, "hipSetDevice");
    return missing.empty() && set_device(0) == 0;
  }

  template <typename F>
  void resolve(void* library, F*& target, const char* name) {
    target = reinterpret_cast<F*>(::dlsym(library, name));
    if (target == nullptr) missing += std::string(missing.empty() ? "" : ", ") + name;
  }

  static std::optional<GraphApi> load(const Device& device, std::string& why) {
    void* library = ::dlopen(device.library_path().c_str(), RTLD_NOW | RTLD_LOCAL);
    if (library == nullptr) {
      why = "cannot dlopen " + device.library_path();
      return std::nullopt;
    }
    const bool nvidia = device.vendor() == Vendor::nvidia;
    GraphApi api;
    api.resolve(library, api.stream_create, nvidia ? "cuStreamCreate" : "hipStreamCreateWithFlags");
    api.resolve(library, api.stream_destroy, nvidia ? "cuStreamDestroy_v2" : "hipStreamDestroy");
    api.resolve(library, api.stream_synchronize, nvidia ? "cuStreamSynchronize" : "hipStreamSynchronize");
    api.resolve(library, api.begin_capture, nvidia ? "cuStreamBeginCapture_v2" : "hipStreamBeginCapture");
    api.resolve(library, api.end_capture, nvidia ? "cuStreamEndCapture" : "hipStreamEndCapture");
    api.resolve(library, api.instantiate, nvidia ? "cuGraphInstantiateWithFlags" : "hipGraphInstantiateWithFlags");
    api.resolve(library, api.launch, nvidia ? "cuGraphLaunch" : "hipGraphLaunch");
    api.resolve(library, api.exec_destroy, nvidia ? "cuGraphExecDestroy" : "hipGraphExecDestroy");
    api.resolve(library, api.graph_destroy, nvidia ? "cuGraphDestroy" : "hipGraphDestroy");
    if (!api.make_current(library, nvidia) || !api.missing.empty()) {
      why = "graph API unavailable in " + device.library_path() + (api.missing.empty() ? "" : ": missing " + api.missing);
      return std::nullopt;
    }
    return api;
  }
};

constexpr int kCaptureModeGlobal = 0;  // CU_STREAM_CAPTURE_MODE_GLOBAL / hipStreamCaptureModeGlobal: the strictest
constexpr unsigned kNonBlocking = 1;   // CU_STREAM_NON_BLOCKING / hipStreamNonBlocking

// One problem's device tensors (q, k, v random; two outputs, poisoned).
struct Problem {
  Problem(const Gpu& gpu, std::int64_t seq, std::mt19937_64& rng)
      : q({1, 2, seq, 128}, DType::bf16, Layout::HND),
        k({1, 2, seq, 128}, DType::bf16, Layout::HND),
        v({1, 2, seq, 128}, DType::bf16, Layout::HND),
        out({1, 2, seq, 128}, DType::bf16, Layout::HND),
        dq(device_buffer(gpu, bytes(q))),
        dk(device_buffer(gpu, bytes(k))),
        dv(device_buffer(gpu, bytes(v))),
        dout(device_buffer(gpu, bytes(out))) {
    fill_and_upload_inputs(q, k, v, dq, dk, dv, rng);
    poison_output();
  }
  static std::size_t bytes(const HostTensor& t) { return t.storage().size() * 2; }
  static TensorView view(const HostTensor& host, const DeviceBuffer& device) {
    TensorView view = host.view();
    view.data = device.get();
    return view;
  }
  void poison_output() { dout.upload(out.storage().data(), bytes(out)); }  // `out` stays all poison on the host
  void attend(void* stream) const { attention(view(q, dq), view(k, dk), view(v, dv), view(out, dout), {}, stream); }
  void attend(void* stream, Workspace workspace) const {
    attention(view(q, dq), view(k, dk), view(v, dv), view(out, dout), {}, stream, workspace);
  }
  std::size_t workspace_bytes() const { return workspace_size(view(q, dq), view(k, dk), view(v, dv)); }
  std::vector<std::uint16_t> result() const {
    std::vector<std::uint16_t> host(out.storage().size());
    dout.download(host.data(), bytes(out));
    return host;
  }

  HostTensor q, k, v, out;
  DeviceBuffer dq, dk, dv, dout;
};

std::size_t poisoned(const std::vector<std::uint16_t>& values) {
  std::size_t count = 0;
  for (std::uint16_t bits : values) count += bits == HostTensor::poison_bits(DType::bf16);
  return count;
}

}  // namespace

TEST_CASE("graph capture: warm pool and caller workspace are launch-only; growth is kept or refused") {
  const std::optional<Gpu> gpu = gpu_or_skip();
  if (!gpu) return;
  std::string why;
  std::optional<GraphApi> api = GraphApi::load(*gpu->device, why);
  if (!api) {
    SAGEJIT_SKIP(why);
    return;
  }
  GraphApi::Handle stream = nullptr;
  REQUIRE(api->stream_create(&stream, kNonBlocking) == 0);
  release_workspaces();
  REQUIRE(workspace_bytes_held() == 0);

  std::mt19937_64& rng = thread_rng();
  Problem small(*gpu, 300, rng), large(*gpu, 2000, rng), huge(*gpu, 8000, rng);

  // Eager reference, which also warms the pool (and the code cache) for `small`.
  small.attend(stream);
  REQUIRE(api->stream_synchronize(stream) == 0);
  const std::vector<std::uint16_t> eager = small.result();
  REQUIRE(poisoned(eager) == 0);
  const std::size_t warm_bytes = workspace_bytes_held();
  REQUIRE(warm_bytes >= small.workspace_bytes());

  // Capture a call on the warm stream: nothing is allocated, the capture stays valid.
  small.poison_output();
  REQUIRE(api->begin_capture(stream, kCaptureModeGlobal) == 0);
  small.attend(stream);
  GraphApi::Handle graph = nullptr, exec = nullptr;
  REQUIRE(api->end_capture(stream, &graph) == 0);
  REQUIRE(api->instantiate(&exec, graph, 0) == 0);
  CHECK(poisoned(small.result()) == small.out.storage().size());  // captured, not run
  CHECK(workspace_bytes_held() == warm_bytes);

  // Replay: the eager result, bit for bit (same kernels, same inputs).
  REQUIRE(api->launch(exec, stream) == 0);
  REQUIRE(api->stream_synchronize(stream) == 0);
  CHECK(small.result() == eager);

  // A larger eager call grows the pool; the captured buffer is kept, not freed, so the graph still
  // replays correctly.
  large.attend(stream);
  REQUIRE(api->stream_synchronize(stream) == 0);
  CHECK(poisoned(large.result()) == 0);
  CHECK(workspace_bytes_held() >= warm_bytes + large.workspace_bytes());
  small.poison_output();
  REQUIRE(api->launch(exec, stream) == 0);
  REQUIRE(api->stream_synchronize(stream) == 0);
  CHECK(small.result() == eager);

  // Growth needed during a capture: a named error, and the capture is still intact.
  REQUIRE(api->begin_capture(stream, kCaptureModeGlobal) == 0);
  try {
    huge.attend(stream);
    FAIL("growth during capture was accepted");
  } catch (const Error& error) {
    CHECK(error.code() == ErrorCode::unsupported);
    CHECK_MESSAGE(std::string(error.what()).find("being captured") != std::string::npos, error.what());
    CHECK_MESSAGE(std::string(error.what()).find("warm-up") != std::string::npos, error.what());
  }
  GraphApi::Handle empty_graph = nullptr;
  CHECK(api->end_capture(stream, &empty_graph) == 0);  // fails if the error had broken the capture
  if (empty_graph != nullptr) api->graph_destroy(empty_graph);

  // A caller's workspace captures without the pool.
  DeviceBuffer workspace = device_buffer(*gpu, huge.workspace_bytes());
  huge.attend(stream, Workspace{workspace.get(), workspace.bytes()});
  REQUIRE(api->stream_synchronize(stream) == 0);
  const std::vector<std::uint16_t> huge_eager = huge.result();
  huge.poison_output();
  GraphApi::Handle graph2 = nullptr, exec2 = nullptr;
  REQUIRE(api->begin_capture(stream, kCaptureModeGlobal) == 0);
  huge.attend(stream, Workspace{workspace.get(), workspace.bytes()});
  REQUIRE(api->end_capture(stream, &graph2) == 0);
  REQUIRE(api->instantiate(&exec2, graph2, 0) == 0);
  REQUIRE(api->launch(exec2, stream) == 0);
  REQUIRE(api->stream_synchronize(stream) == 0);
  CHECK(huge.result() == huge_eager);

  api->exec_destroy(exec2);
  api->graph_destroy(graph2);
  api->exec_destroy(exec);
  api->graph_destroy(graph);
  release_workspaces();
  CHECK(workspace_bytes_held() == 0);
  api->stream_destroy(stream);
}
