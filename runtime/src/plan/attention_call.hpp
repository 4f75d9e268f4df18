#pragma once
// One attention call as the runtime sees it after the API normalised the caller's tensors: sizes as
// (B, H, N, D), strides as (batch, head, token) whatever the memory layout, device pointers, options
// and (optionally) explicit tile configs.
#include <cstdint>

#include "core/tile_config.hpp"
#include "numerics/key_mask_view.hpp"
#include "sagejit/types.hpp"

namespace sagejit {

// Strides of a tensor in elements, in (batch, head, token) order whatever its memory layout; the
// channel stride is 1.
struct RowStrides {
  std::int64_t batch = 0, head = 0, token = 0;
};

// A packed varlen call (docs/NUMERICS.md "Varlen"): the call's batch is its number of sequences and
// seq_q / seq_kv the longest of them; q, out (cu_seqlens_q) and k, v (cu_seqlens_k) are packed along
// their token dimension with batch strides 0, sequence b being rows cu[b] .. cu[b + 1] - 1 (device int32
// arrays of batch + 1 values, read by the kernels: no host synchronisation). It runs the key-mask
// kernels: keys past a sequence's length are its masked keys.
struct VarlenView {
  const std::int32_t* cu_seqlens_q = nullptr;  // null: a dense call
  const std::int32_t* cu_seqlens_k = nullptr;
  std::int64_t total_q = 0, total_k = 0;       // rows of the packed tensors
  bool present() const { return cu_seqlens_q != nullptr; }
};

struct AttentionCall {
  std::int64_t batch = 1, heads_q = 1, heads_kv = 1, seq_q = 1, seq_kv = 1, head_dim = 128;
  DType dtype = DType::bf16;  // of q, k, v and out
  const void* q = nullptr;    // device pointers
  const void* k = nullptr;
  const void* v = nullptr;
  void* out = nullptr;
  RowStrides q_strides, k_strides, v_strides, out_strides;
  bool causal = false;
  float sm_scale = 0.0f;      // resolved by the caller (e.g. 1/sqrt(head_dim))
  bool smooth_k = true;
  float* lse = nullptr;       // fp32 [B, Hq, Nq] contiguous, or null
  bool want_lse = false;      // plan for an LSE output even before `lse` points anywhere
  // Per (batch item, key), in device memory (docs/NUMERICS.md "Key masks"); kind 0: none. Its
  // presence is a specialization of both kernels; its pointer and strides are per launch.
  numerics::KeyMaskView key_mask;
  VarlenView varlen;
  // Tile configs; an empty map means "ask the tuning tables".
  TileConfig attention_config;
  TileConfig prepare_config;
  // attention_config is a tuning table's config (sagejit-precompile enumerates the tables' configs):
  // the plan fits it to the call's specialization as it fits its own table choice
  // (kernel_table_config), instead of taking it as it is.
  bool attention_config_from_table = false;

  bool writes_lse() const { return lse != nullptr || want_lse; }
  // Whether the call runs the key-mask kernels (Specialization::key_mask): a caller's mask or varlen.
  bool masked_kernels() const { return key_mask.present() || varlen.present(); }
};

}  // namespace sagejit
