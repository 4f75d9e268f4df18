#include "common/mma_probe.hpp"

#include <cstdint>
#include <random>

#include <fmt/format.h>

#include "arch/mma_gfx12.h"
#include "arch/mma_sm80.h"
#include "common/e4m3.h"
#include "common/compile_job.hpp"
#include "dev/device_buffer.hpp"
#include "jit/jit.hpp"
#include "core/error.hpp"
#include "kernels/registry.hpp"

namespace sagejit::tools {

namespace {

// Small values so every fp32 sum of products is exact: int8 in [-127, 127]; fp8 / fp16 values in
// multiples of 0.5 with |x| <= 4 (products are multiples of 0.25, sums of 32 stay below 2^9).
std::vector<std::int8_t> random_int8(std::mt19937& rng, std::size_t count) {
  std::uniform_int_distribution<int> value(-127, 127);
  std::vector<std::int8_t> out(count);
  for (auto& x : out) x = static_cast<std::int8_t>(value(rng));
  return out;
}

std::vector<float> random_halves(std::mt19937& rng, std::size_t count) {
  std::uniform_int_distribution<int> value(-8, 8);
  std::vector<float> out(count);
  for (auto& x : out) x = 0.5f * static_cast<float>(value(rng));
  return out;
}

std::vector<std::uint8_t> to_e4m3(const std::vector<float>& values) {
  std::vector<std::uint8_t> out;
  for (float x : values) out.push_back(sj_e4m3_encode(x));
  return out;
}

std::vector<std::uint16_t> to_f16(const std::vector<float>& values) {
  std::vector<std::uint16_t> out;
  for (float x : values) out.push_back(sj_f32_to_f16(x));
  return out;
}

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
  const auto k8 = random_int8(rng, 16 * 32), q8 = random_int8(rng, 16 * 32);
  const auto v = random_halves(rng, 32 * 16), p = random_halves(rng, 16 * 32);
  const auto v8 = to_e4m3(v), p8 = to_e4m3(p);

  // What each lane must hold if the index functions describe the hardware.
  std::vector<int> channels;  // channels summed by WMMA step 0
  std::vector<int> keys;      // keys summed by key block 0
  for (int lane = 0; lane < 32; lane += 16)
    for (int byte = 0; byte < 8; ++byte) {
      channels.push_back(sj_g12_qk_channel(0, lane, byte));
      keys.push_back(sj_g12_v_frag_key(0, lane, byte));
    }
  std::vector<int> s_expected(32 * 8);
  std::vector<float> o_expected(32 * 8);
  for (int lane = 0; lane < 32; ++lane)
    for (int vgpr = 0; vgpr < 8; ++vgpr) {
      const int key = sj_g12_s_key(0, lane, vgpr), query = sj_g12_s_query(lane);
      int s = 0;
      for (int c : channels) s += int{k8[key * 32 + c]} * int{q8[query * 32 + c]};
      s_expected[lane * 8 + vgpr] = s;
      const int channel = sj_g12_o_channel(lane, vgpr), o_query = sj_g12_o_query(lane);
      float o = 0;
      for (int k : keys) o += sj_e4m3_decode(v8[k * 16 + channel]) * sj_e4m3_decode(p8[o_query * 32 + k]);
      o_expected[lane * 8 + vgpr] = o;
    }

  DeviceBuffer dk(device, ordinal, k8.size()), dq(device, ordinal, q8.size()), dv(device, ordinal, v8.size()),
      dp(device, ordinal, p8.size()), ds(device, ordinal, 32 * 8 * 4), dout(device, ordinal, 32 * 8 * 4);
  dk.upload(k8);
  dq.upload(q8);
  dv.upload(v8);
  dp.upload(p8);
  device.memset(ordinal, ds.get(), 0xff, ds.bytes(), nullptr);
  device.memset(ordinal, dout.get(), 0xff, dout.bytes(), nullptr);
  void* pointers[] = {dk.get(), dq.get(), dv.get(), dp.get(), ds.get(), dout.get()};
  void* args[] = {&pointers[0], &pointers[1], &pointers[2], &pointers[3], &pointers[4], &pointers[5]};
  LaunchGeometry geometry;
  geometry.block = {32, 1, 1};
  device.launch(ordinal, function, geometry, nullptr, args);
  device.synchronize(ordinal, nullptr);
  return {compare("wmma i32_16x16x16_iu8 (S = K*Q^T fragments)", s_expected, ds.download_as<int>(32 * 8), 8),
          compare("wmma f32_16x16x16_fp8_fp8 (O = V^T*P^T fragments)", o_expected, dout.download_as<float>(32 * 8), 8)};
}

std::vector<ProbeCheck> run_sm80(Device& device, int ordinal, void* function, std::mt19937& rng) {
  const auto a8 = random_int8(rng, 16 * 32), b8 = random_int8(rng, 32 * 8);
  const auto ae_values = random_halves(rng, 16 * 32), be_values = random_halves(rng, 32 * 8);
  const auto a16_values = random_halves(rng, 16 * 16), b16_values = random_halves(rng, 16 * 8);
  const auto ae = to_e4m3(ae_values), be = to_e4m3(be_values);
  const auto a16 = to_f16(a16_values), b16 = to_f16(b16_values);

  std::vector<int> s8_expected(32 * 4);
  std::vector<float> e4m3_expected(32 * 4), f16_expected(32 * 4);
  for (int lane = 0; lane < 32; ++lane)
    for (int i = 0; i < 4; ++i) {
      const int row = sj_sm80_c_row(lane, i), col = sj_sm80_c_col(lane, i);
      int s = 0;
      float e = 0, h = 0;
      for (int k = 0; k < 32; ++k) {
        s += int{a8[row * 32 + k]} * int{b8[k * 8 + col]};
        e += sj_e4m3_decode(ae[row * 32 + k]) * sj_e4m3_decode(be[k * 8 + col]);
      }
      for (int k = 0; k < 16; ++k) h += sj_f16_to_f32(a16[row * 16 + k]) * sj_f16_to_f32(b16[k * 8 + col]);
      s8_expected[lane * 4 + i] = s;
      e4m3_expected[lane * 4 + i] = e;
      f16_expected[lane * 4 + i] = h;
    }

  DeviceBuffer da8(device, ordinal, a8.size()), db8(device, ordinal, b8.size()), dae(device, ordinal, ae.size()),
      dbe(device, ordinal, be.size()), da16(device, ordinal, a16.size() * 2), db16(device, ordinal, b16.size() * 2),
      ds8(device, ordinal, 32 * 4 * 4), de(device, ordinal, 32 * 4 * 4), dh(device, ordinal, 32 * 4 * 4);
  da8.upload(a8);
  db8.upload(b8);
  dae.upload(ae);
  dbe.upload(be);
  da16.upload(a16);
  db16.upload(b16);
  for (DeviceBuffer* out : {&ds8, &de, &dh}) device.memset(ordinal, out->get(), 0xff, out->bytes(), nullptr);
  void* pointers[] = {da8.get(), db8.get(), dae.get(), dbe.get(), da16.get(), db16.get(), ds8.get(), de.get(), dh.get()};
  void* args[9];
  for (int i = 0; i < 9; ++i) args[i] = &pointers[i];
  LaunchGeometry geometry;
  geometry.block = {32, 1, 1};
  device.launch(ordinal, function, geometry, nullptr, args);
  device.synchronize(ordinal, nullptr);
  return {compare("mma.sync m16n8k32 s8 (QK^T fragments)", s8_expected, ds8.download_as<int>(32 * 4), 4),
          compare("mma.sync m16n8k32 e4m3 (fp8 PV fragments)", e4m3_expected, de.download_as<float>(32 * 4), 4),
          compare("mma.sync m16n8k16 f16 (fp16 PV fragments)", f16_expected, dh.download_as<float>(32 * 4), 4)};
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
