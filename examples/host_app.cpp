// A small host application: allocates q, k, v and out on the GPU, calls sagejit::attention twice and
// prints the first call's time (compile, or load from the code-object cache) and the steady-state
// time, plus the workspace (the only extra device memory a call needs) for the shapes of DESIGN.md
// section 10.
//
//   host_app                        # 1,24,4608,128 bf16, HND
//   host_app --shape 4,32,4096,128 --causal --layout NHD --iterations 20
#include <CLI/CLI.hpp>

#include <array>
#include <chrono>
#include <cstring>
#include <cstdio>
#include <random>
#include <vector>

#include "device/device.hpp"  // allocation and event timing only (see CMakeLists.txt)
#include "sagejit/sagejit.hpp"

namespace {

struct Shape {
  std::int64_t batch, heads, tokens, head_dim;
  bool causal;
};

std::array<std::int64_t, 4> dims(const Shape& s, sagejit::Layout layout) {
  return layout == sagejit::Layout::HND ? std::array<std::int64_t, 4>{s.batch, s.heads, s.tokens, s.head_dim}
                                        : std::array<std::int64_t, 4>{s.batch, s.tokens, s.heads, s.head_dim};
}

// bf16 bits of random normal values (truncation is fine for inputs).
std::vector<std::uint16_t> random_bf16(std::size_t count, std::mt19937& rng) {
  std::normal_distribution<float> normal;
  std::vector<std::uint16_t> values(count);
  for (auto& value : values) {
    const float x = normal(rng);
    std::uint32_t bits;
    std::memcpy(&bits, &x, 4);
    value = static_cast<std::uint16_t>(bits >> 16);
  }
  return values;
}

double mib(std::size_t bytes) { return static_cast<double>(bytes) / (1024.0 * 1024.0); }

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"sagejit host example: two attention calls, first-call and steady-state times"};
  std::vector<std::int64_t> shape_arg{1, 24, 4608, 128};
  bool causal = false;
  std::string layout_name = "HND";
  int iterations = 10;
  app.add_option("--shape", shape_arg, "B,H,N,D")->delimiter(',')->expected(4);
  app.add_flag("--causal", causal, "causal attention");
  app.add_option("--layout", layout_name, "HND or NHD")->check(CLI::IsMember({"HND", "NHD"}));
  app.add_option("--iterations", iterations, "steady-state calls to average")->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);

  try {
    sagejit::Device& device = sagejit::default_device();
    const sagejit::DeviceInfo info = device.info(0);
    std::printf("sagejit %s on %s (%s)\n", std::string(sagejit::version()).c_str(), info.name.c_str(),
                info.target.c_str());
    const sagejit::Layout layout = layout_name == "HND" ? sagejit::Layout::HND : sagejit::Layout::NHD;
    const Shape shape{shape_arg[0], shape_arg[1], shape_arg[2], shape_arg[3], causal};

    // q, k, v, out: dense bf16 tensors in the chosen layout.
    const auto shape4 = dims(shape, layout);
    const std::size_t count = static_cast<std::size_t>(shape.batch * shape.heads * shape.tokens * shape.head_dim);
    std::mt19937 rng(std::random_device{}());
    std::vector<void*> buffers;
    for (int i = 0; i < 4; ++i) {
      buffers.push_back(device.allocate(0, count * 2));
      if (i < 3) device.copy_to_device(0, buffers.back(), random_bf16(count, rng).data(), count * 2);
    }
    const auto view = [&](int i) {
      return sagejit::TensorView{buffers[i], sagejit::DType::bf16, shape4, sagejit::contiguous_strides(shape4), 0};
    };
    sagejit::AttentionOptions options;
    options.layout = layout;
    options.causal = causal;

    const sagejit::Support support = sagejit::supports(view(0), view(1), view(2), view(3), options);
    if (!support) {
      std::printf("not supported: %s\n", support.reason.c_str());
      return 1;
    }

    void* start = device.create_event(0);
    void* stop = device.create_event(0);
    const auto wall = std::chrono::steady_clock::now();
    sagejit::attention(view(0), view(1), view(2), view(3), options, nullptr);
    device.synchronize(0, nullptr);
    const double first_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - wall).count();

    sagejit::attention(view(0), view(1), view(2), view(3), options, nullptr);  // warm
    device.record_event(0, start, nullptr);
    for (int i = 0; i < iterations; ++i) sagejit::attention(view(0), view(1), view(2), view(3), options, nullptr);
    device.record_event(0, stop, nullptr);
    device.synchronize(0, nullptr);
    const double steady_ms = device.elapsed_ms(0, start, stop) / iterations;
    const double flops = 4.0 * static_cast<double>(shape.batch * shape.heads) * static_cast<double>(shape.tokens) *
                         static_cast<double>(shape.tokens) * static_cast<double>(shape.head_dim) *
                         (causal ? 0.5 : 1.0);
    std::printf("shape B=%lld H=%lld N=%lld D=%lld %s%s\n", static_cast<long long>(shape.batch),
                static_cast<long long>(shape.heads), static_cast<long long>(shape.tokens),
                static_cast<long long>(shape.head_dim), layout_name.c_str(), causal ? " causal" : "");
    std::printf("first call (compile or cache load + run): %.1f ms\n", first_ms);
    std::printf("steady state: %.3f ms per call (%.0f TOPS, mean of %d)\n", steady_ms, flops / steady_ms * 1e-9,
                iterations);

    // Extra device memory per call = the workspace (inputs and output are the caller's).
    std::printf("workspace (peak extra device memory per call), DESIGN.md section 10 shapes:\n");
    const std::vector<Shape> design_shapes{{1, 24, 4608, 128, false}, {1, 28, 16384, 128, false},
                                           {1, 40, 32760, 128, false}, {1, 16, 8192, 64, false},
                                           {4, 32, 4096, 128, true}};
    for (const Shape& s : design_shapes) {
      const auto d = dims(s, sagejit::Layout::HND);
      const sagejit::TensorView t{buffers[0], sagejit::DType::bf16, d, sagejit::contiguous_strides(d), 0};
      sagejit::AttentionOptions o;
      o.causal = s.causal;
      const std::size_t bytes = sagejit::workspace_size(t, t, t, o);
      const std::size_t inputs = 3 * static_cast<std::size_t>(s.batch * s.heads * s.tokens * s.head_dim) * 2;
      std::printf("  %lld,%lld,%lld,%lld%s: %.1f MiB (%.2f x the bytes of q+k+v)\n", static_cast<long long>(s.batch),
                  static_cast<long long>(s.heads), static_cast<long long>(s.tokens),
                  static_cast<long long>(s.head_dim), s.causal ? " causal" : "", mib(bytes),
                  static_cast<double>(bytes) / static_cast<double>(inputs));
    }
    std::printf("runtime workspace held now: %.1f MiB\n", mib(sagejit::workspace_bytes_held()));
    device.destroy_event(0, start);
    device.destroy_event(0, stop);
    sagejit::release_workspaces();
    for (void* buffer : buffers) device.free(0, buffer);
    return 0;
  } catch (const sagejit::Error& error) {
    std::fprintf(stderr, "sagejit error (%s): %s\n", sagejit::to_string(error.code()), error.what());
    return 1;
  }
}
