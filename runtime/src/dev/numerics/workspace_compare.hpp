#pragma once
// Bit-for-bit comparison of prepare-stage workspaces (emulator vs a GPU prepare downloaded into a
// PreparedTensors), reporting the first differing element with its index and coordinates.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "numerics/emulator.hpp"

namespace sagejit::numerics {

struct WorkspaceMismatch {
  std::string buffer;       // "q8", "q_scale", "k8", "k_scale", "k_mean", "v8", "v16", "v_scale", "lse_delta", "key_bias"
  std::size_t index = 0;    // flat element index in the buffer's documented layout
  std::string coordinates;  // e.g. "[b=0, h=3, n=130, d=7]"
  std::string expected, actual;  // values (and bit patterns for floats)

  std::string describe() const;  // "k8[...] at index 1234 [b=0, h=1, n=2, d=3]: expected 5, got 6"
};

// Maps a key's position inside its aligned group of 32 keys to the slot the backend stores it in
// (the backend's `v_key_slot`); empty means the natural order.
using KeySlotMap = std::function<int(int)>;

// Compares every workspace of `actual` against `expected` (sizes included; floats by bit pattern,
// so -0 vs +0 and NaN payloads count). The V buffer of `actual` is read through `v_key_slot`.
// lse_delta is not bit-compared (docs/NUMERICS.md: fp32, any order); it is skipped here.
std::optional<WorkspaceMismatch> compare_prepared(const PreparedTensors& expected, const PreparedTensors& actual,
                                                  const KeySlotMap& v_key_slot = {});

}  // namespace sagejit::numerics
