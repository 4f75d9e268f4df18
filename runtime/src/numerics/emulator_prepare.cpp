// Stage 1 of the emulator: the prepare step of docs/NUMERICS.md, using the scalar steps of
// kernel_src/common/quant.h that the GPU prepare kernels use, so the workspaces match bit for bit.
#include <algorithm>
#include <cmath>
#include <vector>

#include "common/constants.h"
#include "common/key_mask.h"
#include "common/quant.h"
#include "core/error.hpp"
#include "numerics/emulator.hpp"
#include "numerics/parallel.hpp"

namespace sagejit::numerics {

float default_sm_scale(std::int64_t head_dim) {
  if (head_dim < 1) fail(ErrorCode::invalid_argument, "default_sm_scale: head_dim {} must be >= 1", head_dim);
  return static_cast<float>(1.0 / std::sqrt(static_cast<double>(head_dim)));
}

namespace {

void check_options(const EmulatorOptions& options) {
  if (options.block_n < 1)
    fail(ErrorCode::invalid_argument, "emulator: block_n {} must be >= 1 (kernels use 32 or 64)", options.block_n);
  if (std::isinf(options.sm_scale) || options.sm_scale == 0.0f)
    fail(ErrorCode::invalid_argument, "emulator: sm_scale {} must be finite and non-zero (NaN selects 1/sqrt(D))",
         options.sm_scale);
  const KeyMaskView& mask = options.key_mask;
  if (mask.kind < 0 || mask.kind > SJ_KEY_MASK_F16)
    fail(ErrorCode::invalid_argument, "emulator: key_mask.kind {} is not 0 (none) or SJ_KEY_MASK_BOOL .. _F16 (1-4)",
         mask.kind);
  if (mask.present() && mask.data == nullptr) fail(ErrorCode::invalid_argument, "emulator: key_mask.data is null");
  if (options.head_dim_pad < 0)
    fail(ErrorCode::invalid_argument, "emulator: head_dim_pad {} must be >= 0 (0: no padding)", options.head_dim_pad);
}

// int8 blocks of 32 rows of x = transform(row, d) (docs/NUMERICS.md steps 3-5) for one head: rows of
// head_dim_pad channels, where channels past head_dim are x = 0 (outside the amax, as the prepare
// kernel does) and quantize to 0. Rows that are not row_valid (masked keys) are treated like rows
// past the end: outside the amax, stored as 0.
template <typename Transform, typename RowValid>
void quantize_rows(std::int64_t rows, std::int64_t rows_pad, std::int64_t head_dim, std::int64_t head_dim_pad,
                   Transform transform, RowValid row_valid, std::int8_t* out8, float* out_scale) {
  const std::int64_t D = head_dim_pad;
  std::vector<float> x(static_cast<std::size_t>(SJ_QUANT_BLOCK * D), 0.0f);
  for (std::int64_t first = 0; first < rows_pad; first += SJ_QUANT_BLOCK) {
    const std::int64_t valid = std::clamp<std::int64_t>(rows - first, 0, SJ_QUANT_BLOCK);
    float amax = 0.0f;
    std::vector<unsigned char> kept(SJ_QUANT_BLOCK, 0);
    for (std::int64_t r = 0; r < valid; ++r) {
      kept[static_cast<std::size_t>(r)] = row_valid(first + r) ? 1 : 0;
      if (!kept[static_cast<std::size_t>(r)]) continue;
      for (std::int64_t d = 0; d < head_dim; ++d) {
        const float value = transform(first + r, d);
        x[static_cast<std::size_t>(r * D + d)] = value;
        amax = sj_amax_update(amax, value);
      }
    }
    const float scale = sj_int8_scale(amax);
    out_scale[first / SJ_QUANT_BLOCK] = scale;
    for (std::int64_t r = 0; r < SJ_QUANT_BLOCK; ++r)
      for (std::int64_t d = 0; d < D; ++d)
        out8[(first + r) * D + d] =
            r < valid && kept[static_cast<std::size_t>(r)] ? sj_quantize_int8(x[static_cast<std::size_t>(r * D + d)], scale) : 0;
  }
}

}  // namespace

PreparedTensors prepare(const TensorView& q, const TensorView& k, const TensorView& v, Layout layout,
                        const EmulatorOptions& options) {
  check_options(options);
  const HostView qv = HostView::from(q, layout, "q");
  const HostView kv = HostView::from(k, layout, "k");
  const HostView vv = HostView::from(v, layout, "v");
  if (kv.dtype != qv.dtype || vv.dtype != qv.dtype)
    fail(ErrorCode::invalid_argument, "emulator: q, k, v dtypes differ ({}, {}, {}); they must be equal",
         to_string(qv.dtype), to_string(kv.dtype), to_string(vv.dtype));
  if (!(kv.dims == vv.dims))
    fail(ErrorCode::invalid_argument, "emulator: k [B={}, H={}, N={}, D={}] and v [B={}, H={}, N={}, D={}] differ",
         kv.dims.batch, kv.dims.heads, kv.dims.tokens, kv.dims.head_dim, vv.dims.batch, vv.dims.heads,
         vv.dims.tokens, vv.dims.head_dim);
  if (qv.dims.batch != kv.dims.batch || qv.dims.head_dim != kv.dims.head_dim)
    fail(ErrorCode::invalid_argument, "emulator: q (B={}, D={}) and k (B={}, D={}) must agree in batch and head_dim",
         qv.dims.batch, qv.dims.head_dim, kv.dims.batch, kv.dims.head_dim);
  if (qv.dims.heads % kv.dims.heads != 0)
    fail(ErrorCode::invalid_argument, "emulator: q heads {} must be a multiple of k/v heads {} (GQA/MQA)",
         qv.dims.heads, kv.dims.heads);
  const KeyMaskView& key_mask = options.key_mask;
  if (key_mask.present() && key_mask.heads != 1 && (key_mask.heads != qv.dims.heads || qv.dims.heads != kv.dims.heads))
    fail(ErrorCode::invalid_argument, "emulator: key_mask.heads {} is not 1, or Hq = Hk ({} and {})", key_mask.heads,
         qv.dims.heads, kv.dims.heads);

  PreparedTensors p;
  p.batch = qv.dims.batch;
  p.heads_q = qv.dims.heads;
  p.heads_kv = kv.dims.heads;
  p.seq_q = qv.dims.tokens;
  p.seq_kv = kv.dims.tokens;
  p.seq_q_pad = sj_padded_length(p.seq_q);
  p.seq_kv_pad = sj_padded_length(p.seq_kv);
  p.head_dim = qv.dims.head_dim;
  p.head_dim_pad = options.head_dim_pad == 0 ? p.head_dim : options.head_dim_pad;
  if (p.head_dim_pad < p.head_dim)
    fail(ErrorCode::invalid_argument, "emulator: head_dim_pad {} is below the inputs' head_dim {}", p.head_dim_pad,
         p.head_dim);
  p.dtype = qv.dtype;
  p.smooth_k = options.smooth_k;
  p.pv_fp16 = options.pv_fp16;
  p.sm_scale = std::isnan(options.sm_scale) ? default_sm_scale(p.head_dim) : options.sm_scale;
  p.q_mul = sj_q_multiplier(p.sm_scale);

  const std::int64_t D = p.head_dim_pad, channels = p.head_dim;  // workspace row, input row
  const auto size = [](std::int64_t n) { return static_cast<std::size_t>(n); };
  p.q8.assign(size(p.batch * p.heads_q * p.seq_q_pad * D), 0);
  p.q_scale.assign(size(p.batch * p.heads_q * p.seq_q_pad / SJ_QUANT_BLOCK), 0.0f);
  p.k8.assign(size(p.batch * p.heads_kv * p.seq_kv_pad * D), 0);
  p.k_scale.assign(size(p.batch * p.heads_kv * p.seq_kv_pad / SJ_QUANT_BLOCK), 0.0f);
  p.k_mean.assign(size(p.batch * p.heads_kv * D), 0.0f);
  p.v_scale.assign(size(p.batch * p.heads_kv * D), 1.0f);
  if (p.pv_fp16)
    p.v16.assign(size(p.batch * p.heads_kv * D * p.seq_kv_pad), 0);
  else
    p.v8.assign(size(p.batch * p.heads_kv * D * p.seq_kv_pad), 0);
  const bool want_delta = options.return_lse && options.smooth_k;
  if (want_delta) p.lse_delta.assign(size(p.batch * p.heads_q * p.seq_q), 0.0f);

  // The key mask as the log2-domain bias of every key (-inf past Nk), and which keys are valid.
  const KeyMaskView& mask = options.key_mask;
  if (mask.present()) {
    p.key_mask_heads = mask.heads;
    p.key_bias.assign(size(sj_key_mask_rows(mask.heads, p.batch) * p.seq_kv_pad), sj_neg_inf());
    for (std::int64_t b = 0; b < p.batch; ++b)
      for (int h = 0; h < mask.heads; ++h)
        for (std::int64_t n = 0; n < p.seq_kv; ++n)
          p.key_bias[size(sj_key_mask_row(mask.heads, static_cast<int>(b), h) * p.seq_kv_pad + n)] =
              sj_key_bias(mask.data, mask.kind, mask.offset(b, h, n));
  }
  // Whether key n of batch item b takes part for KV head h.
  const auto key_valid_for = [&](std::int64_t b, std::int64_t h, std::int64_t n) {
    return !mask.present() ||
           sj_key_bias_valid(p.key_bias[size(sj_key_mask_row(mask.heads, static_cast<int>(b), static_cast<int>(h)) *
                                                 p.seq_kv_pad + n)]);
  };

  // K mean, K and V per (b, hk).
  parallel_for(p.batch * p.heads_kv, [&](std::int64_t item) {
    const std::int64_t b = item / p.heads_kv, h = item % p.heads_kv;
    const auto key_valid = [&](std::int64_t, std::int64_t n) { return key_valid_for(b, h, n); };
    float* mean = &p.k_mean[size(item * D)];
    if (p.smooth_k) {
      // Each chunk's key step: its sampled keys, or all its keys when none of its sampled keys is valid
      // (sj_masked_k_mean_step); the mean divides by the valid keys of those steps. Without a mask every
      // key is valid, so every chunk samples and the count is sj_k_mean_samples(Nk): one rule for both.
      std::vector<int> steps;
      int summed_keys = 0;
      for (std::int64_t chunk = 0; chunk < p.seq_kv; chunk += SJ_K_MEAN_CHUNK) {
        const std::int64_t end = std::min<std::int64_t>(chunk + SJ_K_MEAN_CHUNK, p.seq_kv);
        int sampled_valid = 0;
        for (std::int64_t n = chunk; n < end; n += SJ_K_MEAN_STRIDE) sampled_valid += key_valid(b, n) ? 1 : 0;
        steps.push_back(sj_masked_k_mean_step(sampled_valid));
        for (std::int64_t n = chunk; n < end; n += steps.back()) summed_keys += key_valid(b, n) ? 1 : 0;
      }
      for (std::int64_t d = 0; d < D; ++d) {
        double sum = 0.0;  // a padded channel reads no token: sum 0, mean 0
        for (std::int64_t chunk = 0; d < channels && chunk < p.seq_kv; chunk += SJ_K_MEAN_CHUNK) {
          double partial = 0.0;
          const std::int64_t end = std::min<std::int64_t>(chunk + SJ_K_MEAN_CHUNK, p.seq_kv);
          for (std::int64_t n = chunk; n < end; n += steps[size(chunk / SJ_K_MEAN_CHUNK)])
            if (key_valid(b, n)) partial = sj_add_rn_f64(partial, kv.get(b, h, n, d));
          sum = sj_add_rn_f64(sum, partial);
        }
        mean[d] = sj_masked_k_mean(sum, summed_keys);
      }
    }
    quantize_rows(
        p.seq_kv, p.seq_kv_pad, channels, D, [&](std::int64_t n, std::int64_t d) { return sj_k_smooth(kv.get(b, h, n, d), mean[d]); },
        [&](std::int64_t n) { return key_valid(b, n); }, &p.k8[size(item * p.seq_kv_pad * D)],
        &p.k_scale[size(item * p.seq_kv_pad / SJ_QUANT_BLOCK)]);
    for (std::int64_t d = 0; d < D; ++d) {
      const std::size_t base = size((item * D + d) * p.seq_kv_pad);
      const std::int64_t tokens = d < channels ? p.seq_kv : 0;  // a padded channel: amax 0, scale 0, codes 0
      // A masked key is stored as a key past the end: code 0, outside the channel's amax.
      if (p.pv_fp16) {
        for (std::int64_t n = 0; n < tokens; ++n)
          if (key_valid(b, n)) p.v16[base + size(n)] = sj_v_to_fp16(vv.get(b, h, n, d));
        continue;
      }
      float amax = 0.0f;
      for (std::int64_t n = 0; n < tokens; ++n)
        if (key_valid(b, n)) amax = sj_amax_update(amax, vv.get(b, h, n, d));
      const float scale = sj_v_scale(amax);
      p.v_scale[size(item * D + d)] = scale;
      for (std::int64_t n = 0; n < tokens; ++n)
        if (key_valid(b, n)) p.v8[base + size(n)] = sj_quantize_e4m3(vv.get(b, h, n, d), scale);
    }
  });

  // Q and the LSE correction per (b, hq).
  const std::int64_t ratio = p.gqa_ratio();
  parallel_for(p.batch * p.heads_q, [&](std::int64_t item) {
    const std::int64_t b = item / p.heads_q, h = item % p.heads_q;
    quantize_rows(
        p.seq_q, p.seq_q_pad, channels, D, [&](std::int64_t n, std::int64_t d) { return sj_q_prescale(qv.get(b, h, n, d), p.q_mul); },
        [](std::int64_t) { return true; }, &p.q8[size(item * p.seq_q_pad * D)], &p.q_scale[size(item * p.seq_q_pad / SJ_QUANT_BLOCK)]);
    if (!want_delta) return;
    const float* mean = &p.k_mean[size((b * p.heads_kv + h / ratio) * D)];
    for (std::int64_t n = 0; n < p.seq_q; ++n) {
      float delta = 0.0f;
      for (std::int64_t d = 0; d < channels; ++d) delta += sj_q_prescale(qv.get(b, h, n, d), p.q_mul) * mean[d];
      p.lse_delta[size(item * p.seq_q + n)] = delta;
    }
  });
  return p;
}

}  // namespace sagejit::numerics
