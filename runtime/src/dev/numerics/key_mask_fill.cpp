#include "dev/numerics/key_mask_fill.hpp"

#include <algorithm>
#include <cstring>
#include <limits>

#include <fmt/format.h>

#include "common/key_mask.h"
#include "core/error.hpp"

namespace sagejit::numerics {
namespace {

std::size_t element_bytes(int kind) { return kind == SJ_KEY_MASK_BOOL ? 1 : kind == SJ_KEY_MASK_F32 ? 4 : 2; }

const char* pattern_name(MaskPattern pattern) {
  switch (pattern) {
    case MaskPattern::random: return "random";
    case MaskPattern::padded_tail: return "padded tail";
    case MaskPattern::masked_tiles: return "masked tiles";
    case MaskPattern::all_masked: return "all masked (batch 0)";
    case MaskPattern::none_masked: return "none masked";
  }
  return "?";
}

const char* kind_name(int kind) {
  switch (kind) {
    case SJ_KEY_MASK_BOOL: return "bool";
    case SJ_KEY_MASK_F32: return "fp32";
    case SJ_KEY_MASK_BF16: return "bf16";
    case SJ_KEY_MASK_F16: return "fp16";
  }
  return "?";
}

}  // namespace

KeyMaskBuffer make_key_mask(int kind, MaskPattern pattern, std::int64_t batch, std::int64_t keys,
                            std::int64_t stride_batch, std::int64_t stride_key, bool ltx_style, std::mt19937_64& rng) {
  return make_key_mask(kind, pattern, batch, 1, keys, stride_batch, 0, stride_key, ltx_style, rng);
}

KeyMaskBuffer make_key_mask(int kind, MaskPattern pattern, std::int64_t batch, std::int64_t heads, std::int64_t keys,
                            std::int64_t stride_batch, std::int64_t stride_head, std::int64_t stride_key, bool ltx_style,
                            std::mt19937_64& rng) {
  if (kind < SJ_KEY_MASK_BOOL || kind > SJ_KEY_MASK_F16 || stride_key < 1 || stride_batch < 0 || heads < 1 ||
      (heads > 1 && stride_head < 1))
    fail(ErrorCode::invalid_argument, "make_key_mask: kind {}, heads {} or strides ({}, {}, {}) not accepted", kind, heads,
         stride_batch, stride_head, stride_key);
  const std::int64_t rows = stride_batch == 0 ? 1 : batch;
  const std::int64_t elements = (rows - 1) * stride_batch + (heads - 1) * stride_head + (keys - 1) * stride_key + 1;
  KeyMaskBuffer buffer;
  // Elements no view addresses (strides past 1) hold the opposite of a plausible value, so a kernel
  // that reads the wrong element shows.
  buffer.bytes.assign(static_cast<std::size_t>(elements) * element_bytes(kind), 0xAB);
  std::bernoulli_distribution third(1.0 / 3.0);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_int_distribution<std::int64_t> tail(0, std::max<std::int64_t>(keys - 1, 0));
  for (std::int64_t row = 0; row < rows * heads; ++row) {
    const std::int64_t b = row / heads, h = row % heads;
    const std::int64_t padding = tail(rng);  // padded_tail: the last `padding` keys
    const std::int64_t tile_phase = tail(rng) % 2;
    for (std::int64_t n = 0; n < keys; ++n) {
      bool masked = false;
      switch (pattern) {
        case MaskPattern::random: masked = third(rng); break;
        case MaskPattern::padded_tail: masked = n >= keys - padding; break;
        case MaskPattern::masked_tiles: masked = (n / 64) % 2 == tile_phase; break;
        case MaskPattern::all_masked: masked = b == 0 || third(rng); break;
        case MaskPattern::none_masked: masked = false; break;
      }
      const std::size_t offset = static_cast<std::size_t>(sj_key_mask_offset(stride_batch, stride_head, stride_key, b, h, n));
      if (kind == SJ_KEY_MASK_BOOL) {
        buffer.bytes[offset] = masked ? 0 : 1;
        continue;
      }
      float value = masked ? (ltx_style ? -10000.0f : -std::numeric_limits<float>::infinity())
                           : (ltx_style || third(rng) ? 0.0f : normal(rng));
      if (kind == SJ_KEY_MASK_F32) {
        std::memcpy(&buffer.bytes[offset * 4], &value, 4);
      } else {
        const std::uint16_t bits = sj_to_dtype(value, kind == SJ_KEY_MASK_BF16 ? 0 : 1);
        std::memcpy(&buffer.bytes[offset * 2], &bits, 2);
      }
    }
  }
  buffer.view = {buffer.bytes.data(), kind, stride_batch, stride_key};
  buffer.view.heads = static_cast<int>(heads);
  buffer.view.stride_head = heads > 1 ? stride_head : 0;
  buffer.description = fmt::format("{} mask{}, {}{}, strides ({}, {}, {})", kind_name(kind),
                                   heads > 1 ? fmt::format(" per head ({})", heads) : "", pattern_name(pattern),
                                   ltx_style && kind != SJ_KEY_MASK_BOOL ? " (-10000 style)" : "", stride_batch,
                                   stride_head, stride_key);
  return buffer;
}

bool key_masked(const KeyMaskView& mask, std::int64_t b, std::int64_t n, std::int64_t h) {
  return mask.present() && !sj_key_bias_valid(sj_key_bias(mask.data, mask.kind, mask.offset(b, h, n)));
}

}  // namespace sagejit::numerics
