#pragma once
// Launches one attention call on a device: the prepare kernels (Q/K/V quantization into the
// workspace) and then the attention kernel, on the caller's stream. Vendor-neutral: the kernels are
// picked from the registry by family and device target and loaded through the JIT (load_kernel), so
// the same code drives the NVIDIA (attention_sm80) and AMD (attention_gfx12) backends.
#include <cstdint>

#include "device/device.hpp"
#include "kernels/kernel_desc.hpp"
#include "kernels/workspace_layout.hpp"
#include "sagejit/types.hpp"

namespace sagejit {

// Strides of a tensor in elements, in (batch, head, token) order whatever its memory layout; the
// channel stride is 1.
struct RowStrides {
  std::int64_t batch = 0, head = 0, token = 0;
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
  // Tile configs; an empty map means "ask the tuning tables" (tuning_tables().lookup).
  TileConfig attention_config;
  TileConfig prepare_config;
};

// The configs the call will run with (empty ones filled from the tuning tables for `target`).
struct ResolvedConfigs {
  TileConfig attention;
  TileConfig prepare;
  bool pv_fp16 = false;  // the attention config's PV family
};
ResolvedConfigs resolve_configs(const AttentionCall& call, const std::string& target);

// The workspace the call needs with those configs (what run_attention writes into).
WorkspaceShape workspace_shape(const AttentionCall& call, bool pv_fp16);

// Validates sizes and pointers (Error(invalid_argument) naming the field), resolves the configs,
// loads (compiling on first use) the prepare and attention kernels for the device's target and
// enqueues them on `stream`. `workspace` must hold workspace_layout(workspace_shape(call,
// resolve_configs(call, target).pv_fp16)).total_bytes bytes of device memory.
void run_attention(Device& device, int ordinal, const AttentionCall& call, void* workspace, Stream stream);

}  // namespace sagejit
