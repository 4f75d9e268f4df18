#include "dev/numerics/workspace_compare.hpp"

#include <bit>
#include <vector>

#include <fmt/format.h>

#include "common/constants.h"
#include "common/key_mask.h"
#include "core/error.hpp"

namespace sagejit::numerics {

std::string WorkspaceMismatch::describe() const {
  return fmt::format("{} differs at index {} {}: expected {}, got {}", buffer, index, coordinates, expected, actual);
}

namespace {

struct Shape {
  std::vector<const char*> names;
  std::vector<std::int64_t> extents;

  std::string coordinates(std::size_t index) const {
    std::vector<std::int64_t> coordinate(extents.size());
    auto rest = static_cast<std::int64_t>(index);
    for (std::size_t i = extents.size(); i-- > 0;) {
      coordinate[i] = extents[i] > 0 ? rest % extents[i] : 0;
      rest = extents[i] > 0 ? rest / extents[i] : 0;
    }
    std::string text = "[";
    for (std::size_t i = 0; i < extents.size(); ++i)
      text += fmt::format("{}{}={}", i ? ", " : "", names[i], coordinate[i]);
    return text + "]";
  }
};

std::string show(std::int8_t value) { return fmt::format("{}", value); }
std::string show(std::uint8_t value) { return fmt::format("0x{:02x}", value); }
std::string show(std::uint16_t value) { return fmt::format("0x{:04x}", value); }
std::string show(float value) { return fmt::format("{} (0x{:08x})", value, std::bit_cast<std::uint32_t>(value)); }

bool same_bits(float a, float b) { return std::bit_cast<std::uint32_t>(a) == std::bit_cast<std::uint32_t>(b); }
template <typename T>
bool same_bits(T a, T b) {
  return a == b;
}

template <typename T>
std::optional<WorkspaceMismatch> first_mismatch(const char* buffer, const Shape& shape, const std::vector<T>& expected,
                                                const std::vector<T>& actual) {
  const std::size_t common = std::min(expected.size(), actual.size());
  for (std::size_t i = 0; i < common; ++i)
    if (!same_bits(expected[i], actual[i]))
      return WorkspaceMismatch{buffer, i, shape.coordinates(i), show(expected[i]), show(actual[i])};
  if (expected.size() != actual.size())
    return WorkspaceMismatch{buffer, common, "(size)", fmt::format("{} elements", expected.size()),
                             fmt::format("{} elements", actual.size())};
  return std::nullopt;
}

// The backend's stored V rows in natural key order.
template <typename T>
std::vector<T> natural_key_order(const std::vector<T>& stored, std::int64_t seq_kv_pad, const KeySlotMap& slot) {
  if (!slot) return stored;
  std::vector<T> natural(stored.size());
  for (std::size_t row = 0; row + static_cast<std::size_t>(seq_kv_pad) <= stored.size();
       row += static_cast<std::size_t>(seq_kv_pad))
    for (std::int64_t key = 0; key < seq_kv_pad; ++key) {
      const int position = slot(static_cast<int>(key % 32));
      if (position < 0 || position >= 32)
        fail(ErrorCode::invalid_argument, "compare_prepared: v_key_slot({}) = {} is outside 0..31", key % 32, position);
      natural[row + static_cast<std::size_t>(key)] = stored[row + static_cast<std::size_t>(key / 32 * 32 + position)];
    }
  return natural;
}

}  // namespace

std::optional<WorkspaceMismatch> compare_prepared(const PreparedTensors& e, const PreparedTensors& a,
                                                  const KeySlotMap& v_key_slot) {
  const std::int64_t d = e.head_dim_pad;  // channels of the workspace rows (padded ones included)
  const Shape q8{{"b", "h", "n", "d"}, {e.batch, e.heads_q, e.seq_q_pad, d}};
  const Shape q_scale{{"b", "h", "block"}, {e.batch, e.heads_q, e.seq_q_pad / SJ_QUANT_BLOCK}};
  const Shape k8{{"b", "h", "n", "d"}, {e.batch, e.heads_kv, e.seq_kv_pad, d}};
  const Shape k_scale{{"b", "h", "block"}, {e.batch, e.heads_kv, e.seq_kv_pad / SJ_QUANT_BLOCK}};
  const Shape per_channel{{"b", "h", "d"}, {e.batch, e.heads_kv, d}};
  const Shape v{{"b", "h", "d", "n"}, {e.batch, e.heads_kv, d, e.seq_kv_pad}};
  if (auto m = first_mismatch("q8", q8, e.q8, a.q8)) return m;
  if (auto m = first_mismatch("q_scale", q_scale, e.q_scale, a.q_scale)) return m;
  if (auto m = first_mismatch("k_mean", per_channel, e.k_mean, a.k_mean)) return m;
  if (auto m = first_mismatch("k8", k8, e.k8, a.k8)) return m;
  if (auto m = first_mismatch("k_scale", k_scale, e.k_scale, a.k_scale)) return m;
  if (auto m = first_mismatch("v_scale", per_channel, e.v_scale, a.v_scale)) return m;
  if (auto m = first_mismatch("v8", v, e.v8, natural_key_order(a.v8, e.seq_kv_pad, v_key_slot))) return m;
  if (auto m = first_mismatch("v16", v, e.v16, natural_key_order(a.v16, e.seq_kv_pad, v_key_slot))) return m;
  // One row per batch item (and head, with a per-head mask); empty without a key mask.
  const Shape key_bias{{"row", "n"}, {sj_key_mask_rows(e.key_mask_heads, e.batch), e.seq_kv_pad}};
  if (auto m = first_mismatch("key_bias", key_bias, e.key_bias, a.key_bias)) return m;
  return std::nullopt;
}

}  // namespace sagejit::numerics
