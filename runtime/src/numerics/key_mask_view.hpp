#pragma once
// A key mask as the plan, the runner and the emulator see it (docs/NUMERICS.md "Key masks"): element
// (b, h, n) of `kind` (SJ_KEY_MASK_BOOL | _F32 | _BF16 | _F16 of kernel_src/common/key_mask.h; 0: no
// mask) at b * stride_batch + h * stride_head + n * stride_key elements from `data` (device memory for
// a GPU call, host memory for the emulator). stride_batch 0 is one mask for every batch item; heads 1
// (stride_head 0) one for every head, heads H (only where Hq = Hk = H) one per head.
#include <cstdint>

#include "common/key_mask.h"

namespace sagejit::numerics {

struct KeyMaskView {
  const void* data = nullptr;
  int kind = 0;
  std::int64_t stride_batch = 0, stride_key = 1;
  int heads = 1;
  std::int64_t stride_head = 0;
  bool present() const { return kind != 0; }
  bool per_head() const { return heads > 1; }
  // The element offset of key n of batch item b and head h (h is ignored by one mask for every head).
  std::int64_t offset(std::int64_t b, std::int64_t h, std::int64_t n) const {
    return sj_key_mask_offset(stride_batch, per_head() ? stride_head : 0, stride_key, b, h, n);
  }
};

}  // namespace sagejit::numerics
