#include "dev/mma_probe_reference.hpp"

#include <string_view>

#include "arch/mma_gfx12.h"
#include "arch/mma_sm80.h"
#include "common/e4m3.h"
#include "core/error.hpp"

namespace sagejit {

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

// buffer[row * columns + column], after checking that the element lies inside the probe buffer.
template <typename T>
T element(const std::vector<T>& buffer, int row, int column, int columns, std::string_view name) {
  const long long index = static_cast<long long>(row) * columns + column;
  if (row < 0 || column < 0 || column >= columns || index >= static_cast<long long>(buffer.size()))
    fail(ErrorCode::internal, "layout probe: {}[{}][{}] is outside the {}-element buffer", name, row, column,
         buffer.size());
  return buffer[static_cast<std::size_t>(index)];
}

}  // namespace

Gfx12ProbeData gfx12_probe_data(std::mt19937& rng) {
  Gfx12ProbeData d;
  d.k8 = random_int8(rng, gfx12_probe_keys * gfx12_probe_channels);
  d.q8 = random_int8(rng, gfx12_probe_queries * gfx12_probe_channels);
  const auto v = random_halves(rng, gfx12_probe_keys * gfx12_probe_v_channels);
  const auto p = random_halves(rng, gfx12_probe_queries * gfx12_probe_keys);
  d.v8 = to_e4m3(v);
  d.p8 = to_e4m3(p);

  // What each lane must hold if the index functions describe the hardware.
  std::vector<int> channels;  // channels summed by WMMA step 0
  std::vector<int> keys;      // keys summed by key block 0
  for (int lane = 0; lane < 32; lane += 16)
    for (int byte = 0; byte < 8; ++byte) {
      channels.push_back(sj_g12_qk_channel(0, lane, byte));
      keys.push_back(sj_g12_v_frag_key(0, lane, byte));
    }
  d.s_expected.resize(32 * 8);
  d.o_expected.resize(32 * 8);
  for (int lane = 0; lane < 32; ++lane)
    for (int vgpr = 0; vgpr < 8; ++vgpr) {
      const int key = sj_g12_s_key(0, lane, vgpr), query = sj_g12_s_query(lane);
      int s = 0;
      for (int c : channels)
        s += int{element(d.k8, key, c, gfx12_probe_channels, "k8")} *
             int{element(d.q8, query, c, gfx12_probe_channels, "q8")};
      d.s_expected[lane * 8 + vgpr] = s;
      const int channel = sj_g12_o_channel(lane, vgpr), o_query = sj_g12_o_query(lane);
      float o = 0;
      for (int k : keys)
        o += sj_e4m3_decode(element(d.v8, k, channel, gfx12_probe_v_channels, "v8")) *
             sj_e4m3_decode(element(d.p8, o_query, k, gfx12_probe_keys, "p8"));
      d.o_expected[lane * 8 + vgpr] = o;
    }
  return d;
}

Sm80ProbeData sm80_probe_data(std::mt19937& rng) {
  Sm80ProbeData d;
  d.a8 = random_int8(rng, 16 * 32);
  d.b8 = random_int8(rng, 32 * 8);
  const auto ae_values = random_halves(rng, 16 * 32), be_values = random_halves(rng, 32 * 8);
  const auto a16_values = random_halves(rng, 16 * 16), b16_values = random_halves(rng, 16 * 8);
  d.ae = to_e4m3(ae_values);
  d.be = to_e4m3(be_values);
  d.a16 = to_f16(a16_values);
  d.b16 = to_f16(b16_values);

  d.s8_expected.resize(32 * 4);
  d.e4m3_expected.resize(32 * 4);
  d.f16_expected.resize(32 * 4);
  for (int lane = 0; lane < 32; ++lane)
    for (int i = 0; i < 4; ++i) {
      const int row = sj_sm80_c_row(lane, i), col = sj_sm80_c_col(lane, i);
      int s = 0;
      float e = 0, h = 0;
      for (int k = 0; k < 32; ++k) {
        s += int{element(d.a8, row, k, 32, "a8")} * int{element(d.b8, k, col, 8, "b8")};
        e += sj_e4m3_decode(element(d.ae, row, k, 32, "ae")) * sj_e4m3_decode(element(d.be, k, col, 8, "be"));
      }
      for (int k = 0; k < 16; ++k)
        h += sj_f16_to_f32(element(d.a16, row, k, 16, "a16")) * sj_f16_to_f32(element(d.b16, k, col, 8, "b16"));
      d.s8_expected[lane * 4 + i] = s;
      d.e4m3_expected[lane * 4 + i] = e;
      d.f16_expected[lane * 4 + i] = h;
    }
  return d;
}

}  // namespace sagejit
