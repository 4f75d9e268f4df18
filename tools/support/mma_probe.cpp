#include "support/mma_probe.hpp"

#include <cstdint>
#include <random>

#include <fmt/format.h>

#include "support/compile_job.hpp"
#include "dev/device_buffer.hpp"
#include "dev/mma_probe_reference.hpp"
#include "jit/jit.hpp"
#include "core/error.hpp"
#include "kernels/registry.hpp"

namespace sagejit::tools {

namespace {

template <typename T>
ProbeCheck compare(const char* instruction, const std::vector<T>& expected, const std::vector<T>& got, int per_lane) {
  ProbeCheck check{instruction, true, {}};
  for (std::size_t i = 0; i < expected.size(); ++i)
    if (!(expected[i] == got[i])) {
      check.passed = false;
      std::size_t wrong = 0;
      for (std::size_t j = 0; j < expected.size(); ++j) wrong += !(expected[j] == got[j]);
      check.detail = fmt::format("lane {} register {}: expected {}, got {} ({} of {} values differ)", i / per_lane,
                                 i % per_lane, expected[i], got[i], wrong, expected.size());
      return check;
    }
  check.detail = fmt::format("{} values match", expected.size());
  return check;
}

std::vector<ProbeCheck> run_gfx12(Device& device, int ordinal, void* function, std::mt19937& rng) {
  const Gfx12ProbeData d = gfx12_probe_data(rng);
  DeviceBuffer dk(device, ordinal, d.k8.size()), dq(device, ordinal, d.q8.size()), dv(device, ordinal, d.v8.size()),
      dp(device, ordinal, d.p8.size()), ds(device, ordinal, 32 * 8 * 4), dout(device, ordinal, 32 * 8 * 4);
  dk.upload(d.k8);
  dq.upload(d.q8);
  dv.upload(d.v8);
  dp.upload(d.p8);
  device.memset(ordinal, ds.get(), 0xff, ds.bytes(), nullptr);
  device.memset(ordinal, dout.get(), 0xff, dout.bytes(), nullptr);
  void* pointers[] = {dk.get(), dq.get(), dv.get(), dp.get(), ds.get(), dout.get()};
  void* args[] = {&pointers[0], &pointers[1], &pointers[2], &pointers[3], &pointers[4], &pointers[5]};
  LaunchGeometry geometry;
  geometry.block = {32, 1, 1};
  device.launch(ordinal, function, geometry, nullptr, args);
  device.synchronize(ordinal, nullptr);
  return {compare("wmma i32_16x16x16_iu8 (S = K*Q^T fragments)", d.s_expected, ds.download_as<int>(32 * 8), 8),
          compare("wmma f32_16x16x16_fp8_fp8 (O = V^T*P^T fragments)", d.o_expected, dout.download_as<float>(32 * 8), 8)};
}

std::vector<ProbeCheck> run_sm80(Device& device, int ordinal, void* function, std::mt19937& rng) {
  const Sm80ProbeData d = sm80_probe_data(rng);
  DeviceBuffer da8(device, ordinal, d.a8.size()), db8(device, ordinal, d.b8.size()), dae(device, ordinal, d.ae.size()),
      dbe(device, ordinal, d.be.size()), da16(device, ordinal, d.a16.size() * 2), db16(device, ordinal, d.b16.size() * 2),
      ds8(device, ordinal, 32 * 4 * 4), de(device, ordinal, 32 * 4 * 4), dh(device, ordinal, 32 * 4 * 4);
  da8.upload(d.a8);
  db8.upload(d.b8);
  dae.upload(d.ae);
  dbe.upload(d.be);
  da16.upload(d.a16);
  db16.upload(d.b16);
  for (DeviceBuffer* out : {&ds8, &de, &dh}) device.memset(ordinal, out->get(), 0xff, out->bytes(), nullptr);
  void* pointers[] = {da8.get(), db8.get(), dae.get(), dbe.get(), da16.get(), db16.get(), ds8.get(), de.get(), dh.get()};
  void* args[9];
  for (int i = 0; i < 9; ++i) args[i] = &pointers[i];
  LaunchGeometry geometry;
  geometry.block = {32, 1, 1};
  device.launch(ordinal, function, geometry, nullptr, args);
  device.synchronize(ordinal, nullptr);
  return {compare("mma.sync m16n8k32 s8 (QK^T fragments)", d.s8_expected, ds8.download_as<int>(32 * 4), 4),
          compare("mma.sync m16n8k32 e4m3 (fp8 PV fragments)", d.e4m3_expected, de.download_as<float>(32 * 4), 4),
          compare("mma.sync m16n8k16 f16 (fp16 PV fragments)", d.f16_expected, dh.download_as<float>(32 * 4), 4)};
}

}  // namespace

std::vector<ProbeCheck> run_mma_probe(Device& device, int ordinal, CodeCache& cache, unsigned seed) {
  const DeviceInfo info = device.info(ordinal);
  const KernelDesc& desc = find_kernel("probe", info.target);
  const Specialization spec;
  const LoadedKernel& kernel =
      load_kernel(device, ordinal, desc, TileConfig{}, spec, *device_compiler_choice(device, ordinal).compiler, cache);
  std::mt19937 rng(seed);
  return desc.name == "probe_gfx12" ? run_gfx12(device, ordinal, kernel.functions.at(0), rng)
                                    : run_sm80(device, ordinal, kernel.functions.at(0), rng);
}

}  // namespace sagejit::tools
