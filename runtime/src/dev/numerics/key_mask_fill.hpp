#pragma once
// Key masks for the numerics tests (docs/NUMERICS.md "Key masks"): host buffers of each kind, in
// the patterns the masked kernels must get right, viewed as the plan and the emulator take them.
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "numerics/key_mask_view.hpp"

namespace sagejit::numerics {

// Which keys a generated mask leaves out.
enum class MaskPattern {
  random,       // each key masked with probability 1/3
  padded_tail,  // a text-padding mask: the last keys of each batch item (HunyuanVideo)
  masked_tiles, // whole runs of 64 keys (key tiles) masked, the rest valid
  all_masked,   // every key of batch item 0 masked (its rows are all-masked), others random
  none_masked,  // every key valid (the unmasked result, bit for bit)
};

// A mask of `kind` (SJ_KEY_MASK_BOOL | _F32 | _BF16 | _F16) for `batch` x `keys`, element (b, n) at
// b * stride_batch + n * stride_key (stride_key >= 1; stride_batch 0: one row for every batch item,
// then the pattern is drawn once). A boolean mask stores 0 for masked keys; an additive one -inf for
// masked keys (or, with `ltx_style`, -10000 as LTX's (1 - mask) * -10000, which masks nothing in the
// sense of the contract: the key stays valid) and for valid keys 0 or a small normal bias.
struct KeyMaskBuffer {
  std::vector<std::uint8_t> bytes;
  KeyMaskView view;
  std::string description;
};

KeyMaskBuffer make_key_mask(int kind, MaskPattern pattern, std::int64_t batch, std::int64_t keys,
                            std::int64_t stride_batch, std::int64_t stride_key, bool ltx_style, std::mt19937_64& rng);
// The same with a mask per head (heads > 1: row (b, h) at b * stride_batch + h * stride_head, each row's
// pattern drawn on its own, so that the heads differ).
KeyMaskBuffer make_key_mask(int kind, MaskPattern pattern, std::int64_t batch, std::int64_t heads, std::int64_t keys,
                            std::int64_t stride_batch, std::int64_t stride_head, std::int64_t stride_key, bool ltx_style,
                            std::mt19937_64& rng);

// Whether key n of batch item b is masked by `mask` for head h (its log2 bias is -inf:
// kernel_src/common/key_mask.h); h is ignored by a mask that is the same for every head.
bool key_masked(const KeyMaskView& mask, std::int64_t b, std::int64_t n, std::int64_t h = 0);

}  // namespace sagejit::numerics
