// Host cost of one attention call, per call, beside a bare launch of the same kernels (issue 24), and
// one JSON document on stdout (a table on stderr). For each shape (bf16, HND, dense, on device 0):
//   sagejit::attention, the runtime's workspace       the public C++ API, repeated calls
//   sagejit::attention, a caller's workspace
//   sagejit_attention_launch                          the C ABI with a reused launch struct (where the
//                                                     headers have it: SAGEJIT_LAUNCH_V1_SIZE)
//   run_attention, plan given                         the runner alone (no validation, no plan lookup)
//   bare launches                                     the same kernels with the same arguments, recorded
//                                                     from one call, replayed through Device::launch
// Host cost: the issuing thread's wall time per call over rounds of --calls calls with no
// synchronisation inside a round (a round starts on an idle GPU, so the launch queue never pushes
// back), the median over --rounds rounds. Stream time per call: device events around --calls
// back-to-back calls of the public API; where it equals the host cost the shape is host-bound (the
// GPU waits for the launches), where it exceeds it the GPU decides.
// The same source builds against an older tree (it uses only the public API, the plan, the runner,
// the JIT loader and the device layer), so one run can compare two trees.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <iostream>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "common/params.h"
#include "common/prelude.h"
#include "dev/c_abi_tensor.hpp"
#include "dev/device_buffer.hpp"
#include "device/device.hpp"
#include "jit/jit.hpp"
#include "plan/attention_plan.hpp"
#include "plan/attention_runner.hpp"
#include "sagejit/sagejit.h"
#include "sagejit/sagejit.hpp"

using namespace sagejit;

namespace {

struct Shape {
  std::int64_t batch, heads, seq, head_dim;
  std::string name() const { return fmt::format("{}x{}x{}x{}", batch, heads, seq, head_dim); }
};

Shape parse_shape(const std::string& text) {
  Shape s{};
  if (std::sscanf(text.c_str(), "%ldx%ldx%ldx%ld", &s.batch, &s.heads, &s.seq, &s.head_dim) != 4)
    throw CLI::ValidationError("--shape", "expected BxHxNxD, e.g. 1x2x128x128: " + text);
  return s;
}

// One launch as the runtime made it: the function, its geometry and copies of its arguments.
struct RecordedLaunch {
  void* function = nullptr;
  LaunchGeometry geometry;
  alignas(64) std::array<std::byte, sizeof(SjAttentionParams) + sizeof(SjPrepareParams)> params{};
  alignas(64) std::array<std::byte, kKernelExtraArgumentBytes> extra{};
  bool has_extra = false;
};

// The real device, with every launch also recorded (the attention kernel's parameter struct told
// apart from prepare's by its function handle).
class RecordingDevice final : public Device {
 public:
  RecordingDevice(Device& real, void* const* attention_function) : real_(real), attention_(attention_function) {}
  Vendor vendor() const override { return real_.vendor(); }
  std::string runtime_version() const override { return real_.runtime_version(); }
  std::string library_path() const override { return real_.library_path(); }
  int device_count() const override { return real_.device_count(); }
  DeviceInfo info(int ordinal) const override { return real_.info(ordinal); }
  int current_device() const override { return real_.current_device(); }
  std::unique_ptr<LoadedModule> load_module(int ordinal, std::span<const std::byte> code) override {
    return real_.load_module(ordinal, code);
  }
  void launch(int ordinal, void* function, const LaunchGeometry& geometry, Stream stream, void** args) override {
    RecordedLaunch& launch = launches.emplace_back();
    launch.function = function;
    launch.geometry = geometry;
    const std::size_t bytes = function == *attention_ ? sizeof(SjAttentionParams) : sizeof(SjPrepareParams);
    std::memcpy(launch.params.data(), args[0], bytes);
    launch.has_extra = args[1] != nullptr;
    if (launch.has_extra) std::memcpy(launch.extra.data(), args[1], launch.extra.size());
    real_.launch(ordinal, function, geometry, stream, args);
  }
  void* allocate(int ordinal, std::size_t bytes) override { return real_.allocate(ordinal, bytes); }
  void free(int ordinal, void* pointer) noexcept override { real_.free(ordinal, pointer); }
  void copy_to_device(int o, void* d, const void* s, std::size_t n) override { real_.copy_to_device(o, d, s, n); }
  void copy_to_host(int o, void* d, const void* s, std::size_t n) override { real_.copy_to_host(o, d, s, n); }
  void memset(int o, void* d, int v, std::size_t n, Stream s) override { real_.memset(o, d, v, n, s); }
  void synchronize(int ordinal, Stream stream) override { real_.synchronize(ordinal, stream); }
  bool stream_is_capturing(int ordinal, Stream stream) override { return real_.stream_is_capturing(ordinal, stream); }
  void* create_event(int ordinal) override { return real_.create_event(ordinal); }
  void destroy_event(int ordinal, void* event) noexcept override { real_.destroy_event(ordinal, event); }
  void record_event(int ordinal, void* event, Stream stream) override { real_.record_event(ordinal, event, stream); }
  float elapsed_ms(int ordinal, void* start, void* stop) override { return real_.elapsed_ms(ordinal, start, stop); }
  void encode_tensor_map(const TensorMapRequest& request, void* map) const override {
    real_.encode_tensor_map(request, map);
  }

  std::vector<RecordedLaunch> launches;

 private:
  Device& real_;
  void* const* attention_;
};

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

struct Settings {
  int rounds = 41, calls = 50, warmup = 50;
};

// Median over rounds of the issuing thread's microseconds per call.
double host_us_per_call(Device& device, const Settings& settings, const std::function<void()>& call) {
  for (int i = 0; i < settings.warmup; ++i) call();
  device.synchronize(0, nullptr);
  std::vector<double> per_call;
  for (int round = 0; round < settings.rounds; ++round) {
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < settings.calls; ++i) call();
    const auto stop = std::chrono::steady_clock::now();
    per_call.push_back(std::chrono::duration<double, std::micro>(stop - start).count() / settings.calls);
    device.synchronize(0, nullptr);  // outside the timed loop: the next round starts on an idle GPU
  }
  return median(per_call);
}

// Median over rounds of device-event microseconds per call, for `calls` back-to-back calls.
double stream_us_per_call(Device& device, const Settings& settings, const std::function<void()>& call) {
  void* start = device.create_event(0);
  void* stop = device.create_event(0);
  std::vector<double> per_call;
  for (int round = 0; round < settings.rounds; ++round) {
    device.record_event(0, start, nullptr);
    for (int i = 0; i < settings.calls; ++i) call();
    device.record_event(0, stop, nullptr);
    device.synchronize(0, nullptr);
    per_call.push_back(device.elapsed_ms(0, start, stop) * 1000.0 / settings.calls);
  }
  device.destroy_event(0, start);
  device.destroy_event(0, stop);
  return median(per_call);
}

DeviceBuffer random_bf16(Device& device, std::size_t elements, std::mt19937& rng) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<std::uint16_t> host(elements);
  for (auto& value : host) value = sj_f32_to_bf16(normal(rng));
  DeviceBuffer buffer(device, 0, elements * 2);
  buffer.upload(host);
  return buffer;
}

nlohmann::json bench_shape(Device& device, const Shape& shape, const Settings& settings, std::mt19937& rng) {
  const std::array<std::int64_t, 4> dims{shape.batch, shape.heads, shape.seq, shape.head_dim};
  const auto elements = static_cast<std::size_t>(shape.batch * shape.heads * shape.seq * shape.head_dim);
  DeviceBuffer q = random_bf16(device, elements, rng), k = random_bf16(device, elements, rng),
               v = random_bf16(device, elements, rng), out(device, 0, elements * 2);
  const auto view = [&](const DeviceBuffer& buffer) {
    return TensorView{buffer.get(), DType::bf16, dims, contiguous_strides(dims), 0};
  };
  const TensorView qv = view(q), kv = view(k), vv = view(v), ov = view(out);
  const AttentionOptions options;
  const std::size_t workspace_bytes = workspace_size(qv, kv, vv, options);
  DeviceBuffer workspace(device, 0, workspace_bytes);

  nlohmann::json rows = nlohmann::json::object();
  const auto public_call = [&] { attention(qv, kv, vv, ov, options, nullptr); };
  rows["sagejit::attention (runtime workspace)"] = host_us_per_call(device, settings, public_call);
  rows["sagejit::attention (caller's workspace)"] = host_us_per_call(device, settings, [&] {
    attention(qv, kv, vv, ov, options, nullptr, Workspace{workspace.get(), workspace_bytes});
  });
#ifdef SAGEJIT_LAUNCH_V1_SIZE
  const sagejit_tensor cq = dev::c_abi_tensor(qv), ck = dev::c_abi_tensor(kv), cv = dev::c_abi_tensor(vv),
                       cout = dev::c_abi_tensor(ov);
  const sagejit_options c_options = sagejit_default_options();
  sagejit_launch launch = sagejit_default_launch();
  rows["sagejit_attention_launch (C ABI)"] = host_us_per_call(device, settings, [&] {
    if (sagejit_attention_launch(&cq, &ck, &cv, &cout, &c_options, &launch) != SAGEJIT_SUCCESS)
      throw std::runtime_error(sagejit_last_error());
  });
#endif

  // The runner with its plan, and the recorded launches of one call replayed bare.
  AttentionCall call;
  call.batch = shape.batch, call.heads_q = call.heads_kv = shape.heads, call.seq_q = call.seq_kv = shape.seq;
  call.head_dim = shape.head_dim;
  call.dtype = DType::bf16;
  call.q = q.get(), call.k = k.get(), call.v = v.get(), call.out = out.get();
  call.q_strides = call.k_strides = call.v_strides = call.out_strides =
      RowStrides{shape.heads * shape.seq * shape.head_dim, shape.seq * shape.head_dim, shape.head_dim};
  call.sm_scale = 1.0f / std::sqrt(static_cast<float>(shape.head_dim));
  const AttentionPlan plan = plan_attention(call, device_target(device, 0));
  rows["run_attention (plan given)"] = host_us_per_call(device, settings, [&] {
    run_attention(device, 0, plan, call, workspace.get(), nullptr);
  });
  void* attention_function = nullptr;
  RecordingDevice recorder(device, &attention_function);
  attention_function = load_kernel(recorder, 0, *plan.attention, plan.attention_config, plan.spec).functions.at(0);
  run_attention(recorder, 0, plan, call, workspace.get(), nullptr);
  device.synchronize(0, nullptr);
  std::vector<RecordedLaunch> launches = std::move(recorder.launches);
  rows["bare launches"] = host_us_per_call(device, settings, [&] {
    for (RecordedLaunch& recorded : launches) {
      void* args[] = {recorded.params.data(), recorded.has_extra ? recorded.extra.data() : nullptr};
      device.launch(0, recorded.function, recorded.geometry, nullptr, args);
    }
  });

  nlohmann::json result;
  result["shape"] = shape.name();
  result["dtype"] = "bf16";
  result["launches_per_call"] = launches.size();
  result["host_us_per_call"] = rows;
  result["stream_us_per_call"] = stream_us_per_call(device, settings, public_call);
  result["attention_config"] = config_id(plan.attention_config);
  return result;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Host cost per attention call beside bare launches of the same kernels (one JSON document)"};
  std::vector<std::string> shape_texts = {"1x2x128x128", "2x24x1024x128"};
  Settings settings;
  std::string label;
  app.add_option("--shape", shape_texts, "BxHxNxD (bf16, HND); repeatable");
  app.add_option("--rounds", settings.rounds, "timed rounds (the median is reported)");
  app.add_option("--calls", settings.calls, "calls per round");
  app.add_option("--label", label, "a name for this tree in the output (e.g. before, after)");
  CLI11_PARSE(app, argc, argv);
  try {
    Device& device = default_device();
    std::mt19937 rng(20261202);
    nlohmann::json report;
    report["label"] = label;
    report["device"] = device.info(0).name;
    report["version"] = std::string(version());
    report["rounds"] = settings.rounds;
    report["calls"] = settings.calls;
    for (const std::string& text : shape_texts) {
      const nlohmann::json row = bench_shape(device, parse_shape(text), settings, rng);
      report["results"].push_back(row);
      std::cerr << fmt::format("{} {} ({} launches, stream {:.1f} us/call):\n", label, row["shape"].get<std::string>(),
                               row["launches_per_call"].get<int>(), row["stream_us_per_call"].get<double>());
      for (const auto& [name, us] : row["host_us_per_call"].items())
        std::cerr << fmt::format("  {:42s} {:8.2f} us\n", name, us.get<double>());
    }
    std::cout << report.dump(1) << "\n";
  } catch (const std::exception& error) {
    std::cerr << "bench_host_cost: " << error.what() << "\n";
    return 1;
  }
  return 0;
}
