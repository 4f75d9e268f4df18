// Stage 2 of the emulator: the attention loop of docs/NUMERICS.md per query row, with the tile-loop
// math of kernel_src/common/online_softmax.h (the functions every attention kernel uses). Like the
// kernels it runs at the workspace's channel count (head_dim_pad) and writes out's head_dim columns.
#include <algorithm>
#include <cmath>

#include "common/constants.h"
#include "common/e4m3.h"
#include "common/key_mask.h"
#include "common/online_softmax.h"
#include "core/error.hpp"
#include "numerics/emulator.hpp"
#include "numerics/parallel.hpp"

namespace sagejit::numerics {

namespace {

constexpr std::int64_t kRowsPerItem = 64;  // query rows per parallel work item

std::size_t idx(std::int64_t i) { return static_cast<std::size_t>(i); }

// Exact int32 dot product of two int8 rows. kDim > 0 fixes the length at compile time so the
// compiler vectorises it fully; 0 means `dim` at run time.
template <int kDim>
int dot_int8(const std::int8_t* __restrict a, const std::int8_t* __restrict b, std::int64_t dim) {
  const std::int64_t n = kDim > 0 ? kDim : dim;
  int sum = 0;
  for (std::int64_t d = 0; d < n; ++d) sum += static_cast<int>(a[d]) * static_cast<int>(b[d]);
  return sum;
}

// acc[d] += weight * values[d] (each channel an independent fp32 accumulator, keys in order).
template <int kDim>
void accumulate(float* __restrict acc, float weight, const float* __restrict values, std::int64_t dim) {
  const std::int64_t n = kDim > 0 ? kDim : dim;
  for (std::int64_t d = 0; d < n; ++d) acc[d] += weight * values[d];
}

template <int kDim>
void scale(float* __restrict acc, float factor, std::int64_t dim) {
  const std::int64_t n = kDim > 0 ? kDim : dim;
  for (std::int64_t d = 0; d < n; ++d) acc[d] *= factor;
}

struct RowContext {
  const PreparedTensors& p;
  const std::vector<float>& v_values;  // dequantised-to-code V, keys-major [B, Hk, Nk_pad, D]
  const HostView& out;
  float* lse;
  int block_n;
  bool causal;
  bool pv_into_output;
  bool fused_scores;
  bool sum_quantized_p;
};

// One query block of one (b, hq): rows [first, first + rows).
template <int kDim>
void attend_rows(const RowContext& c, std::int64_t b, std::int64_t hq, std::int64_t first, std::int64_t rows) {
  const PreparedTensors& p = c.p;
  const std::int64_t D = p.head_dim_pad;
  const std::int64_t hk = hq / p.gqa_ratio();
  const int dtype = static_cast<int>(p.dtype);  // SJ_DTYPE: the enum value (core/kernel_inputs.hpp)
  const std::int64_t q_head = b * p.heads_q + hq, kv_head = b * p.heads_kv + hk;
  const std::int8_t* k8 = &p.k8[idx(kv_head * p.seq_kv_pad * D)];
  const float* k_scale = &p.k_scale[idx(kv_head * p.seq_kv_pad / SJ_QUANT_BLOCK)];
  const float* v_values = &c.v_values[idx(kv_head * p.seq_kv_pad * D)];
  const float* v_scale = &p.v_scale[idx(kv_head * D)];
  const float* key_bias = p.key_bias.empty() ? nullptr
                                             : &p.key_bias[idx(sj_key_mask_row(p.key_mask_heads, static_cast<int>(b),
                                                                               static_cast<int>(hk)) * p.seq_kv_pad)];

  std::vector<float> o(idx(D)), tile_o(idx(D)), s(idx(c.block_n)), pq(idx(c.block_n));
  std::vector<unsigned char> visible(idx(c.block_n));
  for (std::int64_t i = first; i < first + rows; ++i) {
    const std::int8_t* q8 = &p.q8[idx((q_head * p.seq_q_pad + i) * D)];
    const float q_scale = p.q_scale[idx(q_head * p.seq_q_pad / SJ_QUANT_BLOCK + i / SJ_QUANT_BLOCK)];
    const int row = static_cast<int>(i);
    const int keys = sj_keys_to_visit(row, 1, static_cast<int>(p.seq_kv), c.causal);
    float m = sj_neg_inf(), l = 0.0f;
    std::fill(o.begin(), o.end(), 0.0f);
    for (int tile = 0; tile < keys; tile += c.block_n) {
      const int width = std::min(c.block_n, static_cast<int>(p.seq_kv_pad) - tile);
      float tile_max = sj_neg_inf();
      bool any_visible = false;
      for (int j = 0; j < width; ++j) {
        const int key = tile + j;
        visible[idx(j)] = sj_key_visible(row, key, static_cast<int>(p.seq_kv), c.causal) &&
                          (key_bias == nullptr || sj_key_bias_valid(key_bias[key]));
        if (!visible[idx(j)]) continue;
        const int dot = dot_int8<kDim>(q8, &k8[idx(key * D)], D);
        const float ks = k_scale[key / SJ_QUANT_BLOCK];
        if (c.fused_scores && key_bias != nullptr) {
          // Fused with a mask: s holds the biased score x, tile_max the largest x less P_OFFSET.
          s[idx(j)] = sj_masked_fused_score(static_cast<float>(dot), q_scale, ks, key_bias[key]);
          tile_max = std::fmax(tile_max, sj_masked_shifted_max(s[idx(j)]));
        } else if (c.fused_scores) {
          // Fused: s holds float(dot) (exact) and tile_max the largest shifted group maximum, per
          // 32-key group (one K scale); fmax ignores the NaN of a NaN scale, as the kernel's v_max does.
          s[idx(j)] = static_cast<float>(dot);
          tile_max = std::fmax(tile_max, sj_shifted_group_max(s[idx(j)], q_scale, ks));
        } else {
          s[idx(j)] = sj_score(dot, q_scale, ks);
          if (key_bias != nullptr) s[idx(j)] = sj_masked_score(s[idx(j)], key_bias[key]);
          tile_max = std::max(tile_max, s[idx(j)]);
        }
        any_visible = true;
      }
      if (!any_visible) continue;  // a fully masked tile changes nothing (the kernels skip it)
      // Fused: m is the shifted maximum, raised by sj_shifted_round_up (monotone: the kernel applies
      // it per lane before the max over lanes, which gives the same value).
      const float m_new = c.fused_scores ? std::fmax(m, sj_shifted_round_up(tile_max)) : std::max(m, tile_max);
      const float alpha = sj_rescale(m, m_new);
      float tile_sum = 0.0f;
      for (int j = 0; j < width; ++j) {
        const int key = tile + j;
        float prob = 0.0f;
        if (visible[idx(j)])
          prob = !c.fused_scores      ? sj_prob(s[idx(j)], m_new)
                 : key_bias != nullptr ? sj_exp2(sj_masked_fused_arg(s[idx(j)], m_new))
                                       : sj_exp2(sj_fused_arg(s[idx(j)], q_scale, k_scale[key / SJ_QUANT_BLOCK], m_new));
        pq[idx(j)] = p.pv_fp16 ? sj_f16_to_f32(sj_f32_to_f16(prob)) : sj_e4m3_decode(sj_e4m3_encode(prob));
        // l accumulates the fp32 p, or (sum_quantized_p, fp8 PV) the e4m3 p the PV product uses
        tile_sum += c.sum_quantized_p && !p.pv_fp16 ? pq[idx(j)] : prob;
      }
      l = l * alpha + tile_sum;
      if (p.pv_fp16 || c.pv_into_output) {
        // fp16 PV, and fp8 PV of kernels that accumulate through the C operand (gfx12): the
        // products go straight into the rescaled o. alpha == 1 leaves o as it is (the kernels skip it).
        scale<kDim>(o.data(), alpha, D);
        for (int j = 0; j < width; ++j)
          if (pq[idx(j)] != 0.0f) accumulate<kDim>(o.data(), pq[idx(j)], &v_values[idx((tile + j) * D)], D);
      } else {
        // fp8 PV: two-level accumulation, tile sum from zero, then o = o * alpha + tile_o.
        std::fill(tile_o.begin(), tile_o.end(), 0.0f);
        for (int j = 0; j < width; ++j)
          if (pq[idx(j)] != 0.0f) accumulate<kDim>(tile_o.data(), pq[idx(j)], &v_values[idx((tile + j) * D)], D);
        for (std::int64_t d = 0; d < D; ++d) o[idx(d)] = o[idx(d)] * alpha + tile_o[idx(d)];
      }
      m = m_new;
    }
    for (std::int64_t d = 0; d < p.head_dim; ++d)  // padded channels are not written
      c.out.data[c.out.offset(b, hq, i, d)] = sj_to_dtype(
          key_bias != nullptr ? sj_masked_output(o[idx(d)], l, v_scale[d]) : sj_output(o[idx(d)], l, v_scale[d]), dtype);
    if (c.lse) {
      const float delta = p.lse_delta.empty() ? 0.0f : p.lse_delta[idx(q_head * p.seq_q + i)];
      c.lse[idx(q_head * p.seq_q + i)] = c.fused_scores ? sj_lse_fused(m, l, delta) : sj_lse(m, l, delta);
    }
  }
}

// Keys-major float copy of the V codes (exact: every E4M3 / fp16 code is an fp32 value), so the PV
// loop reads contiguous channels.
std::vector<float> decode_v(const PreparedTensors& p) {
  const std::int64_t D = p.head_dim_pad;
  std::vector<float> values(idx(p.batch * p.heads_kv * p.seq_kv_pad * D));
  parallel_for(p.batch * p.heads_kv, [&](std::int64_t head) {
    for (std::int64_t d = 0; d < D; ++d)
      for (std::int64_t n = 0; n < p.seq_kv_pad; ++n) {
        const std::size_t from = idx((head * D + d) * p.seq_kv_pad + n);
        values[idx((head * p.seq_kv_pad + n) * D + d)] = p.pv_fp16 ? sj_f16_to_f32(p.v16[from]) : sj_e4m3_decode(p.v8[from]);
      }
  });
  return values;
}

void check_consistent(const PreparedTensors& p, const EmulatorOptions& options) {
  if (options.block_n < 1)
    fail(ErrorCode::invalid_argument, "emulator: block_n {} must be >= 1 (kernels use 32 or 64)", options.block_n);
  if (options.pv_fp16 != p.pv_fp16)
    fail(ErrorCode::invalid_argument, "emulator: options.pv_fp16 = {} but the workspaces were prepared with pv_fp16 = {}",
         options.pv_fp16, p.pv_fp16);
  if (options.return_lse && options.smooth_k != p.smooth_k)
    fail(ErrorCode::invalid_argument, "emulator: options.smooth_k = {} but the workspaces were prepared with smooth_k = {}",
         options.smooth_k, p.smooth_k);
  if (options.return_lse && p.smooth_k && p.lse_delta.size() != idx(p.batch * p.heads_q * p.seq_q))
    fail(ErrorCode::invalid_argument, "emulator: return_lse with smoothing needs lse_delta: prepare with return_lse = true");
  const std::int64_t D = p.head_dim_pad;
  const bool sizes_ok =
      p.batch >= 1 && p.heads_kv >= 1 && p.heads_q % p.heads_kv == 0 && p.seq_q >= 1 && p.seq_kv >= 1 &&
      p.head_dim >= 1 && D >= p.head_dim &&
      p.seq_q_pad == sj_padded_length(p.seq_q) && p.seq_kv_pad == sj_padded_length(p.seq_kv) &&
      p.q8.size() == idx(p.batch * p.heads_q * p.seq_q_pad * D) &&
      p.q_scale.size() == idx(p.batch * p.heads_q * p.seq_q_pad / SJ_QUANT_BLOCK) &&
      p.k8.size() == idx(p.batch * p.heads_kv * p.seq_kv_pad * D) &&
      p.k_scale.size() == idx(p.batch * p.heads_kv * p.seq_kv_pad / SJ_QUANT_BLOCK) &&
      p.v_scale.size() == idx(p.batch * p.heads_kv * D) &&
      (p.pv_fp16 ? p.v16.size() : p.v8.size()) == idx(p.batch * p.heads_kv * D * p.seq_kv_pad) &&
      (p.key_bias.empty() || p.key_bias.size() == idx(sj_key_mask_rows(p.key_mask_heads, p.batch) * p.seq_kv_pad));
  if (!sizes_ok) fail(ErrorCode::invalid_argument, "emulator: prepared workspaces have inconsistent sizes");
}

}  // namespace

void attention_into(const PreparedTensors& prepared, const EmulatorOptions& options, const TensorView& out,
                    Layout out_layout, float* lse) {
  check_consistent(prepared, options);
  const HostView out_view = HostView::from(out, out_layout, "out");
  const Dims expected{prepared.batch, prepared.heads_q, prepared.seq_q, prepared.head_dim};
  if (!(out_view.dims == expected))
    fail(ErrorCode::invalid_argument, "emulator: out is [B={}, H={}, N={}, D={}], expected [B={}, H={}, N={}, D={}]",
         out_view.dims.batch, out_view.dims.heads, out_view.dims.tokens, out_view.dims.head_dim, expected.batch,
         expected.heads, expected.tokens, expected.head_dim);
  if (out_view.dtype != prepared.dtype)
    fail(ErrorCode::invalid_argument, "emulator: out dtype {} must equal the input dtype {}", to_string(out_view.dtype),
         to_string(prepared.dtype));
  if (options.return_lse != (lse != nullptr))
    fail(ErrorCode::invalid_argument, "emulator: lse buffer must be given exactly when options.return_lse is set");

  const std::vector<float> v_values = decode_v(prepared);
  const RowContext context{prepared,       v_values,       out_view,
                           lse,            options.block_n, options.causal,
                           options.pv_into_output, options.fused_scores, options.sum_quantized_p};
  const std::int64_t blocks = (prepared.seq_q + kRowsPerItem - 1) / kRowsPerItem;
  const std::int64_t heads = prepared.batch * prepared.heads_q;
  // Largest (causal: latest) query blocks first so the dynamic schedule ends balanced.
  parallel_for(heads * blocks, [&](std::int64_t item) {
    const std::int64_t block = blocks - 1 - item / heads, head = item % heads;
    const std::int64_t b = head / prepared.heads_q, hq = head % prepared.heads_q;
    const std::int64_t first = block * kRowsPerItem;
    const std::int64_t rows = std::min(kRowsPerItem, prepared.seq_q - first);
    switch (prepared.head_dim_pad) {
      case 64: attend_rows<64>(context, b, hq, first, rows); break;
      case 128: attend_rows<128>(context, b, hq, first, rows); break;
      case 256: attend_rows<256>(context, b, hq, first, rows); break;
      default: attend_rows<0>(context, b, hq, first, rows); break;
    }
  });
}

EmulatorResult attention(const PreparedTensors& prepared, const EmulatorOptions& options, Layout out_layout) {
  EmulatorResult result{HostTensor({prepared.batch, prepared.heads_q, prepared.seq_q, prepared.head_dim},
                                   prepared.dtype, out_layout),
                        {}};
  if (options.return_lse) result.lse.assign(idx(prepared.batch * prepared.heads_q * prepared.seq_q), 0.0f);
  attention_into(prepared, options, result.out.view(), out_layout, options.return_lse ? result.lse.data() : nullptr);
  return result;
}

EmulatorResult emulate(const TensorView& q, const TensorView& k, const TensorView& v, Layout layout,
                       const EmulatorOptions& options, Layout out_layout) {
  return attention(prepare(q, k, v, layout, options), options, out_layout);
}

}  // namespace sagejit::numerics
