#include "support/fp8_accumulation_probe.hpp"

#include <cstdint>
#include <vector>

#include "arch/mma_gfx12.h"
#include "core/error.hpp"
#include "dev/device_buffer.hpp"
#include "jit/jit.hpp"
#include "kernels/registry.hpp"

namespace sagejit::tools {

Fp8AccumulationPrecision measure_fp8_accumulation(Device& device, int ordinal, CodeCache& cache) {
  const DeviceInfo info = device.info(ordinal);
  const KernelDesc& desc = find_kernel("probe", info.target);
  if (desc.name != "probe_gfx12")
    fail(ErrorCode::unsupported, "the fp8 accumulation probe is for gfx12 (RDNA4) GPUs; this is {}", info.target);
  const LoadedKernel& kernel = load_kernel(device, ordinal, desc, TileConfig{}, Specialization{},
                                           *device_compiler_choice(device, ordinal).compiler, cache);
  const auto [k0, k1] = fp8_probe_key_slots_summed();
  const std::vector<Fp8AccumulationCase> cases = fp8_accumulation_cases(k0, k1);
  std::vector<std::uint8_t> a, b;
  std::vector<float> c;
  for (const Fp8AccumulationCase& one : cases) {
    a.insert(a.end(), one.a.begin(), one.a.end());
    b.insert(b.end(), one.b.begin(), one.b.end());
    c.push_back(one.c);
  }
  DeviceBuffer da(device, ordinal, a.size()), db(device, ordinal, b.size()), dc(device, ordinal, c.size() * 4),
      dout(device, ordinal, c.size() * 4);
  da.upload(a);
  db.upload(b);
  dc.upload(c);
  device.memset(ordinal, dout.get(), 0xff, dout.bytes(), nullptr);  // NaN until written
  int count = static_cast<int>(cases.size());
  void* pointers[] = {da.get(), db.get(), dc.get(), dout.get()};
  void* args[] = {&pointers[0], &pointers[1], &pointers[2], &pointers[3], &count};
  LaunchGeometry geometry;
  geometry.block = {SJ_GFX12_WAVE, 1, 1};
  device.launch(ordinal, kernel.functions.at(1), geometry, nullptr, args);
  device.synchronize(ordinal, nullptr);
  const std::vector<float> results = dout.download_as<float>(cases.size());
  return analyse_fp8_accumulation(cases, results);
}

}  // namespace sagejit::tools
