#pragma once
// Shared by test_gpu_prepare.cpp and test_gpu_attention.cpp: find a GPU (or say why not), run one
// attention call through plan/attention_runner with host tensors, with every output buffer
// poisoned and followed by a guard region, and hand back what the device wrote.
#include <doctest/doctest.h>

#include "skip_support.hpp"

#include <cstdint>
#include <cstring>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "dev/device_buffer.hpp"
#include "device/device.hpp"
#include "jit/jit.hpp"
#include "plan/attention_runner.hpp"
#include "dev/attention_harness.hpp"
#include "numerics/emulator.hpp"
#include "numerics/host_tensor.hpp"
#include "dev/numerics/key_mask_fill.hpp"
#include "dev/numerics/random_fill.hpp"
#include "random_support.hpp"

namespace sagejit::test {

struct Gpu {
  Device* device = nullptr;
  int ordinal = 0;
  std::string target;
};

// The first GPU of the default backend, or nullopt with the reason in `why`.
inline std::optional<Gpu> find_gpu(std::string& why) {
  try {
    Device& device = default_device();
    if (device.device_count() < 1) {
      why = "no GPU device";
      return std::nullopt;
    }
    return Gpu{&device, 0, device.info(0).target};
  } catch (const std::exception& error) {
    why = error.what();
    return std::nullopt;
  }
}

// The GPU to test on, or nullopt after logging "skipped: <why>"; the test then returns.
inline std::optional<Gpu> gpu_or_skip() {
  std::string why;
  std::optional<Gpu> gpu = find_gpu(why);
  if (!gpu) SAGEJIT_SKIP(why);
  return gpu;
}

// Device memory owned for one test, on the test's GPU.
inline DeviceBuffer device_buffer(const Gpu& gpu, std::size_t bytes) { return DeviceBuffer(*gpu.device, gpu.ordinal, bytes); }

enum class Fill { normal, channel_offsets, equal_rows };

struct Case {
  DType dtype = DType::bf16;
  std::int64_t batch = 1, heads_q = 2, heads_kv = 2, seq_q = 256, seq_kv = 256, head_dim = 128;
  Layout layout = Layout::HND;
  numerics::StridePadding padding{};  // applied to q, k, v and out
  bool causal = false, smooth_k = true, lse = false;
  Fill fill = Fill::normal;
  TileConfig attention{{"warps", 4}, {"rows_per_warp", 16}, {"block_n", 64}, {"stages", 2}, {"pv_fp16", 0}};
  TileConfig prepare{{"threads", 256}};
  std::uint64_t seed = 1;
  // A key mask (docs/NUMERICS.md "Key masks"): kind 0 none, else SJ_KEY_MASK_* with the pattern and
  // strides below (drawn from the case's seed after the inputs), uploaded next to the inputs.
  int mask_kind = 0;
  numerics::MaskPattern mask_pattern = numerics::MaskPattern::random;
  bool mask_ltx_style = false;
  std::int64_t mask_stride_batch = -1, mask_stride_key = 1;  // -1: dense [B, (H,) Nk]
  std::int64_t mask_heads = 1, mask_stride_head = -1;        // heads_q: a mask per head; -1: dense rows
  // Applied to the inputs after they are filled, before upload (e.g. a NaN placed on purpose).
  std::function<void(numerics::HostTensor& q, numerics::HostTensor& k, numerics::HostTensor& v)> edit_inputs;

  std::string describe() const {
    return fmt::format("{} B{} Hq{} Hk{} Nq{} Nk{} D{} {} causal={} smooth={} lse={} cfg={}", to_string(dtype), batch,
                       heads_q, heads_kv, seq_q, seq_kv, head_dim, to_string(layout), causal, smooth_k, lse,
                       config_id(attention));
  }
};

// What both zero-padded head-dim tests draw first, in this order (a logged seed replays either test):
// dtype, KV heads, the GQA group, the token counts (1..max_seq_q, 1..max_seq_kv), the layout. The strides
// are padded by the channels between head_dim and the kernel head dim it runs at.
inline Case random_padded_head_dim_case(std::int64_t head_dim, std::int64_t max_seq_q, std::int64_t max_seq_kv) {
  Case c;
  c.head_dim = head_dim;
  c.dtype = random_in(0, 1) != 0 ? DType::fp16 : DType::bf16;
  c.heads_kv = random_in(1, 2);
  c.heads_q = c.heads_kv * random_in(1, 3);
  c.seq_q = random_in(1, max_seq_q);
  c.seq_kv = random_in(1, max_seq_kv);
  c.layout = random_in(0, 1) != 0 ? Layout::NHD : Layout::HND;
  const std::int64_t pad = kernel_head_dim_for(head_dim) - head_dim;
  c.padding = {0, pad, pad};
  return c;
}

// The inputs of the API-level GPU tests, drawn in this order from `rng`: q and v normal, k with
// channel offsets of 3 (what K smoothing exists for); each uploaded to its device buffer.
inline void fill_and_upload_inputs(numerics::HostTensor& q, numerics::HostTensor& k, numerics::HostTensor& v,
                                   DeviceBuffer& dq, DeviceBuffer& dk, DeviceBuffer& dv, std::mt19937_64& rng) {
  numerics::fill_normal(q, rng);
  numerics::fill_channel_offsets(k, rng, 3.0);
  numerics::fill_normal(v, rng);
  dq.upload(q.storage());
  dk.upload(k.storage());
  dv.upload(v.storage());
}

constexpr std::size_t guard_elements = 4096;  // poisoned elements after the output and the LSE
constexpr std::uint32_t lse_poison = 0x7fc00bad;  // a NaN with a recognisable payload

struct CaseResult {
  numerics::HostTensor q, k, v, out;
  std::vector<float> lse;              // [B, Hq, Nq] when requested
  std::vector<std::uint8_t> workspace;  // the whole workspace after the call
  numerics::KeyMaskBuffer mask;         // the host copy of the key mask (view.kind 0: none)
  WorkspaceLayout layout;
  AttentionPlan plan;                   // what ran
  AttentionCall call;                   // with which sizes, strides and scale
  bool out_guard_intact = true, lse_guard_intact = true, out_padding_intact = true;
};

inline void fill(numerics::HostTensor& tensor, Fill kind, std::mt19937_64& rng) {
  switch (kind) {
    case Fill::normal: numerics::fill_normal(tensor, rng); break;
    case Fill::channel_offsets: numerics::fill_channel_offsets(tensor, rng, 8.0); break;
    case Fill::equal_rows: numerics::fill_equal_rows(tensor, rng); break;
  }
}

// Runs the case on the GPU. K gets `fill`; Q and V are normal.
inline CaseResult run_case(const Gpu& gpu, const Case& c) {
  std::mt19937_64 rng(c.seed);
  const numerics::Dims q_dims{c.batch, c.heads_q, c.seq_q, c.head_dim};
  const numerics::Dims kv_dims{c.batch, c.heads_kv, c.seq_kv, c.head_dim};
  CaseResult r{numerics::HostTensor(q_dims, c.dtype, c.layout, c.padding),
               numerics::HostTensor(kv_dims, c.dtype, c.layout, c.padding),
               numerics::HostTensor(kv_dims, c.dtype, c.layout, c.padding),
               numerics::HostTensor(q_dims, c.dtype, c.layout, c.padding), {}, {}, {}, {}, {}, {}};
  fill(r.q, Fill::normal, rng);
  fill(r.k, c.fill, rng);
  fill(r.v, Fill::normal, rng);
  if (c.edit_inputs) c.edit_inputs(r.q, r.k, r.v);

  const auto bytes = [](const numerics::HostTensor& t) { return t.storage().size() * sizeof(std::uint16_t); };
  DeviceBuffer q = device_buffer(gpu, bytes(r.q)), k = device_buffer(gpu, bytes(r.k)), v = device_buffer(gpu, bytes(r.v));
  q.upload(r.q.storage().data(), bytes(r.q));
  k.upload(r.k.storage().data(), bytes(r.k));
  v.upload(r.v.storage().data(), bytes(r.v));

  // Output storage (padding included, poisoned by HostTensor) plus a poisoned guard region.
  std::vector<std::uint16_t> out_host(r.out.storage());
  out_host.resize(out_host.size() + guard_elements, numerics::HostTensor::poison_bits(c.dtype));
  DeviceBuffer out = device_buffer(gpu, out_host.size() * 2);
  out.upload(out_host.data(), out_host.size() * 2);

  const std::size_t lse_count = static_cast<std::size_t>(c.batch * c.heads_q * c.seq_q);
  std::vector<std::uint32_t> lse_host(lse_count + guard_elements, lse_poison);
  DeviceBuffer lse = device_buffer(gpu, lse_host.size() * 4);
  lse.upload(lse_host.data(), lse_host.size() * 4);

  AttentionCall call = attention_call_for(r.q, r.k, r.v, r.out,
                                          {q.get(), k.get(), v.get(), out.get(),
                                           c.lse ? static_cast<float*>(lse.get()) : nullptr},
                                          c.causal, c.smooth_k);
  call.attention_config = c.attention;
  call.prepare_config = c.prepare;
  std::optional<DeviceBuffer> mask;
  if (c.mask_kind != 0) {
    const std::int64_t stride_head =
        c.mask_heads == 1 ? 0 : c.mask_stride_head < 0 ? c.seq_kv * c.mask_stride_key : c.mask_stride_head;
    const std::int64_t row = c.mask_heads == 1 ? c.seq_kv * c.mask_stride_key : c.mask_heads * stride_head;
    const std::int64_t stride_batch = c.mask_stride_batch < 0 ? row : c.mask_stride_batch;
    r.mask = numerics::make_key_mask(c.mask_kind, c.mask_pattern, c.batch, c.mask_heads, c.seq_kv, stride_batch,
                                     stride_head, c.mask_stride_key, c.mask_ltx_style, rng);
    mask.emplace(device_buffer(gpu, r.mask.bytes.size()));
    mask->upload(r.mask.bytes.data(), r.mask.bytes.size());
    call.key_mask = r.mask.view;
    call.key_mask.data = mask->get();
  }

  const AttentionPlan plan = plan_attention(call, device_target(*gpu.device, gpu.ordinal));
  r.layout = plan.workspace;
  r.plan = plan;
  r.call = call;
  std::vector<std::uint8_t> poison(r.layout.total_bytes, 0xA5);  // unwritten workspace shows up as 0xA5
  DeviceBuffer workspace = device_buffer(gpu, r.layout.total_bytes);
  workspace.upload(poison.data(), poison.size());

  run_attention(*gpu.device, gpu.ordinal, plan, call, workspace.get(), nullptr);
  gpu.device->synchronize(gpu.ordinal, nullptr);

  out.download(out_host.data(), out_host.size() * 2);
  const std::size_t out_elements = r.out.storage().size();
  for (std::size_t i = 0; i < out_elements; ++i) {
    if (r.out.is_padding(i) && out_host[i] != numerics::HostTensor::poison_bits(c.dtype)) r.out_padding_intact = false;
    r.out.storage()[i] = out_host[i];
  }
  for (std::size_t i = out_elements; i < out_host.size(); ++i)
    if (out_host[i] != numerics::HostTensor::poison_bits(c.dtype)) r.out_guard_intact = false;

  lse.download(lse_host.data(), lse_host.size() * 4);
  for (std::size_t i = lse_count; i < lse_host.size(); ++i)
    if (lse_host[i] != lse_poison) r.lse_guard_intact = false;
  if (c.lse) {
    r.lse.resize(lse_count);
    std::memcpy(r.lse.data(), lse_host.data(), lse_count * 4);
  } else {
    for (std::size_t i = 0; i < lse_count; ++i)
      if (lse_host[i] != lse_poison) r.lse_guard_intact = false;  // no LSE requested: nothing written
  }

  r.workspace.resize(r.layout.total_bytes);
  workspace.download(r.workspace.data(), r.workspace.size());
  return r;
}

}  // namespace sagejit::test
