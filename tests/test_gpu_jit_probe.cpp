// End to end on a GPU: load_kernel (render, cache, compile, module load) of the probe kernel, launch
// it on random data, check y = scale * x + y exactly; a second load_kernel returns the same kernel.
#include <doctest/doctest.h>

#include "skip_support.hpp"

#include <cmath>
#include <random>
#include <vector>

#include "cache/code_cache.hpp"
#include "cache_test_support.hpp"
#include "core/error.hpp"
#include "device/device.hpp"
#include "jit/jit.hpp"
#include "kernels/registry.hpp"

using namespace sagejit;

TEST_CASE("the probe kernel runs through load_kernel and computes y = scale * x + y") {
  Device* device = nullptr;
  try {
    device = &default_device();
  } catch (const Error& error) {
    SAGEJIT_SKIP("no GPU: " << std::string(error.what()));
    return;
  }
  test::TempDir root;
  CodeCache cache(test::settings_for(root / "cache"));
  const int scale = 2 + static_cast<int>(test::rng()() % 50);
  const TileConfig config{{"block", 128}, {"scale", scale}};
  const Compiler& chosen = *device_compiler_choice(*device, 0).compiler;
  LoadedKernel& kernel = load_kernel(*device, 0, jit_probe_kernel, config, {}, chosen, cache);
  CHECK(&load_kernel(*device, 0, jit_probe_kernel, config, {}, chosen, cache) == &kernel);

  const int n = 1000 + static_cast<int>(test::rng()() % 5000);
  std::uniform_real_distribution<float> uniform(-4.0f, 4.0f);
  std::vector<float> x(n), y(n);
  for (int i = 0; i < n; ++i) {
    // Multiples of 1/16 in [-4, 4]: scale * x + y is exact in fp32, so the check can be exact.
    x[i] = std::round(uniform(test::rng()) * 16) / 16;
    y[i] = std::round(uniform(test::rng()) * 16) / 16;
  }
  const std::size_t bytes = sizeof(float) * static_cast<std::size_t>(n);
  void* x_device = device->allocate(0, bytes);
  void* y_device = device->allocate(0, bytes);
  device->copy_to_device(0, x_device, x.data(), bytes);
  device->copy_to_device(0, y_device, y.data(), bytes);
  int count = n;
  void* args[] = {&x_device, &y_device, &count};
  LaunchGeometry geometry;
  geometry.grid = {static_cast<unsigned>((n + 127) / 128), 1, 1};
  geometry.block = {128, 1, 1};
  device->launch(0, kernel.function("sagejit_probe_axpy"), geometry, nullptr, args);
  device->synchronize(0, nullptr);
  std::vector<float> result(n);
  device->copy_to_host(0, result.data(), y_device, bytes);
  device->free(0, x_device);
  device->free(0, y_device);
  int wrong = 0;
  for (int i = 0; i < n; ++i) wrong += result[i] == static_cast<float>(scale) * x[i] + y[i] ? 0 : 1;
  CHECK(wrong == 0);
}
