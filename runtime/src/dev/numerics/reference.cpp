#include "dev/numerics/reference.hpp"

#include <algorithm>
#include <cstring>

#include "common/key_mask.h"
#include "core/error.hpp"
#include "numerics/emulator.hpp"
#include "numerics/parallel.hpp"

namespace sagejit::numerics {

namespace {

constexpr std::int64_t kLanes = 8;          // fixed-width inner loops the compiler vectorises
constexpr std::int64_t kRowsPerItem = 32;   // query rows per parallel work item

// Eight fp64 lanes (GCC/clang vector extension; lowered to whatever SIMD width the target has), so
// the two O(N^2 D) loops run vectorised without asking the compiler to reassociate anything.
typedef double Lanes __attribute__((vector_size(kLanes * sizeof(double))));

// target[0..8) += factor * source[0..8)
inline void axpy_lanes(double* target, double factor, const double* source) {
  Lanes t, x;
  std::memcpy(&t, target, sizeof t);
  std::memcpy(&x, source, sizeof x);
  t += factor * x;
  std::memcpy(target, &t, sizeof t);
}

std::int64_t round_lanes(std::int64_t n) { return (n + kLanes - 1) / kLanes * kLanes; }
std::size_t idx(std::int64_t i) { return static_cast<std::size_t>(i); }

}  // namespace

ReferenceResult reference_attention(const TensorView& q, const TensorView& k, const TensorView& v, Layout layout,
                                    bool causal, float sm_scale, const KeyMaskView& key_mask) {
  const HostView qv = HostView::from(q, layout, "q");
  const HostView kv = HostView::from(k, layout, "k");
  const HostView vv = HostView::from(v, layout, "v");
  if (!(kv.dims == vv.dims) || qv.dims.batch != kv.dims.batch || qv.dims.head_dim != kv.dims.head_dim ||
      qv.dims.heads % kv.dims.heads != 0)
    fail(ErrorCode::invalid_argument,
         "reference_attention: shapes q [{}, {}, {}, {}], k [{}, {}, {}, {}], v [{}, {}, {}, {}] are inconsistent "
         "(need equal batch and head_dim, k == v, q heads a multiple of k heads)",
         qv.dims.batch, qv.dims.heads, qv.dims.tokens, qv.dims.head_dim, kv.dims.batch, kv.dims.heads,
         kv.dims.tokens, kv.dims.head_dim, vv.dims.batch, vv.dims.heads, vv.dims.tokens, vv.dims.head_dim);
  const std::int64_t B = qv.dims.batch, Hq = qv.dims.heads, Hk = kv.dims.heads, Nq = qv.dims.tokens,
                     Nk = kv.dims.tokens, D = qv.dims.head_dim;
  const double scale = std::isnan(sm_scale) ? default_sm_scale(D) : static_cast<double>(sm_scale);
  const std::int64_t Nk_lanes = round_lanes(Nk), D_lanes = round_lanes(D);

  // Per kv head: K transposed [D][Nk_lanes] and V [Nk][D_lanes] in fp64, zero padded.
  std::vector<double> k_t(idx(B * Hk * D * Nk_lanes), 0.0), v_d(idx(B * Hk * Nk * D_lanes), 0.0);
  parallel_for(B * Hk, [&](std::int64_t head) {
    const std::int64_t b = head / Hk, h = head % Hk;
    for (std::int64_t n = 0; n < Nk; ++n)
      for (std::int64_t d = 0; d < D; ++d) {
        k_t[idx((head * D + d) * Nk_lanes + n)] = kv.get(b, h, n, d);
        v_d[idx((head * Nk + n) * D_lanes + d)] = vv.get(b, h, n, d);
      }
  });

  // The mask's bias per (b, key) - per (b, head, key) for a per-head mask - in natural-log units, in
  // double; -inf drops the key.
  std::vector<double> bias;
  const std::int64_t mask_heads = key_mask.per_head() ? key_mask.heads : 1;
  if (key_mask.present()) {
    bias.assign(idx(B * mask_heads * Nk), 0.0);
    for (std::int64_t b = 0; b < B; ++b)
      for (std::int64_t h = 0; h < mask_heads; ++h)
        for (std::int64_t n = 0; n < Nk; ++n) {
          const std::int64_t offset = key_mask.offset(b, h, n);
          double value = 0.0;
          if (key_mask.kind == SJ_KEY_MASK_BOOL)
            value = static_cast<const unsigned char*>(key_mask.data)[offset] != 0 ? 0.0 : -std::numeric_limits<double>::infinity();
          else if (key_mask.kind == SJ_KEY_MASK_F32)
            value = static_cast<const float*>(key_mask.data)[offset];
          else
            value = sj_from_dtype(static_cast<const std::uint16_t*>(key_mask.data)[offset], key_mask.kind == SJ_KEY_MASK_BF16 ? 0 : 1);
          bias[idx((b * mask_heads + h) * Nk + n)] = value;
        }
  }

  ReferenceResult result;
  result.dims = Dims{B, Hq, Nq, D};
  result.out.assign(idx(B * Hq * Nq * D), 0.0);
  result.lse.assign(idx(B * Hq * Nq), 0.0);
  const std::int64_t blocks = (Nq + kRowsPerItem - 1) / kRowsPerItem;
  parallel_for(B * Hq * blocks, [&](std::int64_t item) {
    const std::int64_t head = item % (B * Hq), block = blocks - 1 - item / (B * Hq);
    const std::int64_t b = head / Hq, hq = head % Hq, kv_head = b * Hk + hq / (Hq / Hk);
    const double* kt = &k_t[idx(kv_head * D * Nk_lanes)];
    const double* vh = &v_d[idx(kv_head * Nk * D_lanes)];
    std::vector<double> s(idx(Nk_lanes)), o(idx(D_lanes));
    for (std::int64_t i = block * kRowsPerItem; i < std::min(Nq, (block + 1) * kRowsPerItem); ++i) {
      const std::int64_t keys = causal ? std::min(i + 1, Nk) : Nk;
      const std::int64_t key_lanes = round_lanes(keys);
      std::fill(s.begin(), s.end(), 0.0);
      for (std::int64_t d = 0; d < D; ++d) {
        const double qd = qv.get(b, hq, i, d) * scale;
        const double* row = kt + d * Nk_lanes;
        for (std::int64_t j0 = 0; j0 < key_lanes; j0 += kLanes) axpy_lanes(&s[idx(j0)], qd, row + j0);
      }
      if (!bias.empty())
        for (std::int64_t j = 0; j < keys; ++j) s[idx(j)] += bias[idx((b * mask_heads + (mask_heads > 1 ? hq : 0)) * Nk + j)];
      double m = -std::numeric_limits<double>::infinity();
      for (std::int64_t j = 0; j < keys; ++j) m = std::max(m, s[idx(j)]);
      double sum = 0.0;
      std::fill(o.begin(), o.end(), 0.0);
      const std::int64_t row = (b * Hq + hq) * Nq + i;
      if (m == -std::numeric_limits<double>::infinity()) {  // no key left: torch's math SDPA gives 0
        result.lse[idx(row)] = m;
        continue;
      }
      for (std::int64_t j = 0; j < keys; ++j) {
        const double weight = std::exp(s[idx(j)] - m);
        sum += weight;
        const double* vrow = vh + j * D_lanes;
        for (std::int64_t d0 = 0; d0 < D_lanes; d0 += kLanes) axpy_lanes(&o[idx(d0)], weight, vrow + d0);
      }
      for (std::int64_t d = 0; d < D; ++d) result.out[idx(row * D + d)] = o[idx(d)] / sum;
      result.lse[idx(row)] = m + std::log(sum);
    }
  });
  return result;
}

}  // namespace sagejit::numerics
