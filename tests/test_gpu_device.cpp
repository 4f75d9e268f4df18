// End to end on a CUDA GPU: NVRTC compiles a kernel for the device's own target, the CUDA backend
// loads it, launches it on the default stream between two events, and the results come back exact.
// Skips with a message when there is no CUDA GPU (or no NVRTC) on this machine.
#include <doctest/doctest.h>

#include "skip_support.hpp"

#include <cstdint>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "random_support.hpp"
#include "compiler/compiler.hpp"
#include "core/error.hpp"
#include "dev/device_buffer.hpp"
#include "device/device.hpp"

using namespace sagejit;

namespace {

Device* cuda_with_device() {
  try {
    Device& device = cuda_device();
    if (device.device_count() > 0) return &device;
    SAGEJIT_SKIP("the CUDA driver " << device.runtime_version() << " reports no device");
  } catch (const Error& error) {
    SAGEJIT_SKIP("no CUDA GPU runtime: " << std::string(error.what()));
  }
  return nullptr;
}

const Compiler* nvrtc_or_skip() {
  try {
    return &nvrtc_compiler();
  } catch (const Error& error) {
    SAGEJIT_SKIP("NVRTC not available: " << std::string(error.what()));
    return nullptr;
  }
}

// Integer arithmetic so the expected values are exact on the host; the tail past n must stay as
// memset left it, which catches an out-of-bounds write.
const char* kKernel = R"(
extern "C" __global__ void mix(const unsigned* x, unsigned* y, unsigned a, unsigned n) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + (y[i] ^ (i * 2654435761u));
}
)";

}  // namespace

TEST_CASE("CUDA: compile with NVRTC, load, launch on a stream, copy back, time with events") {
  Device* device = cuda_with_device();
  if (device == nullptr) return;
  const Compiler* nvrtc = nvrtc_or_skip();
  if (nvrtc == nullptr) return;

  const DeviceInfo info = device->info(0);
  MESSAGE("device 0: ", info.name, " (", info.target, "), ", info.compute_units, " SMs, ", info.shared_memory_per_block_optin,
          " B opt-in shared memory, ", device->runtime_version(), ", ", nvrtc->identity());
  CHECK(info.target.rfind("sm_", 0) == 0);
  CHECK(info.compute_units > 0);
  CHECK(info.shared_memory_per_block_optin >= info.shared_memory_per_block);
  CHECK(device->current_device() >= 0);

  const CompileResult compiled = nvrtc->compile({"mix.gpu_test", kKernel, info.target, {}});
  auto module = device->load_module(0, std::span<const std::byte>(compiled.code));
  void* function = module->function("mix");
  REQUIRE(function != nullptr);
  try {
    module->function("sagejit_no_such_kernel");
    FAIL("a missing kernel name resolved");
  } catch (const Error& error) {
    CHECK(error.code() == ErrorCode::device_error);
    CHECK(std::string(error.what()).find("sagejit_no_such_kernel") != std::string::npos);
  }
  CHECK_THROWS_AS(device->load_module(0, {}), Error);

  // Fresh data each run, from the run's logged (replayable) seed.
  std::mt19937& random = sagejit::test::logged_rng();
  const unsigned n = 100000 + random() % 1000;  // not a multiple of the block size
  const unsigned tail = 64;
  const unsigned a = 3 + random() % 1000;
  std::vector<std::uint32_t> x(n), y(n);
  for (auto& value : x) value = random();
  for (auto& value : y) value = random();

  DeviceBuffer dx(*device, 0, n * sizeof(std::uint32_t));
  DeviceBuffer dy(*device, 0, (n + tail) * sizeof(std::uint32_t));
  device->memset(0, dy.get(), 0x5a, (n + tail) * sizeof(std::uint32_t), nullptr);
  device->copy_to_device(0, dx.get(), x.data(), n * sizeof(std::uint32_t));
  device->copy_to_device(0, dy.get(), y.data(), n * sizeof(std::uint32_t));

  void* start = device->create_event(0);
  void* stop = device->create_event(0);
  LaunchGeometry geometry;
  geometry.block = {256, 1, 1};
  geometry.grid = {(n + 255) / 256, 1, 1};
  void* x_arg = dx.get();
  void* y_arg = dy.get();
  unsigned a_arg = a;
  unsigned n_arg = n;
  void* args[] = {&x_arg, &y_arg, &a_arg, &n_arg};
  device->record_event(0, start, nullptr);
  device->launch(0, function, geometry, nullptr, args);
  device->record_event(0, stop, nullptr);
  const float milliseconds = device->elapsed_ms(0, start, stop);
  device->synchronize(0, nullptr);
  MESSAGE("kernel time between events: ", milliseconds, " ms");
  CHECK(milliseconds > 0.0f);
  device->destroy_event(0, start);
  device->destroy_event(0, stop);

  std::vector<std::uint32_t> result(n + tail);
  device->copy_to_host(0, result.data(), dy.get(), (n + tail) * sizeof(std::uint32_t));
  unsigned mismatches = 0;
  for (unsigned i = 0; i < n; ++i) {
    const std::uint32_t expected = a * x[i] + (y[i] ^ (i * 2654435761u));
    if (result[i] != expected && ++mismatches <= 5) MESSAGE("index ", i, ": got ", result[i], ", expected ", expected);
  }
  CHECK(mismatches == 0);
  for (unsigned i = n; i < n + tail; ++i) CHECK(result[i] == 0x5a5a5a5au);

  CHECK_THROWS_AS(device->launch(0, nullptr, geometry, nullptr, args), Error);
}
