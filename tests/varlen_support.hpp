#pragma once
// Packed varlen calls for the tests (docs/NUMERICS.md "Varlen"): random sequence lengths (empty ones
// included), packed NHD host tensors [1, total, H, D] filled with normal values, their cu_seqlens, and
// the check of each sequence's rows of out (and of the LSE, [Hq, total_q]) against the fp64 attention
// of that sequence alone.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "common/online_softmax.h"
#include "dev/numerics/metrics.hpp"
#include "dev/numerics/random_fill.hpp"
#include "dev/numerics/reference.hpp"
#include "lse_bounds.hpp"
#include "numerics/host_tensor.hpp"
#include "random_support.hpp"
#include "sagejit/types.hpp"

namespace sagejit::test {

struct VarlenCase {
  DType dtype = DType::bf16;
  std::int64_t heads_q = 2, heads_kv = 1, head_dim = 64;
  std::vector<std::int32_t> lengths_q, lengths_k;  // per sequence; 0 allowed
  std::int64_t trailing_rows = 0;                  // packed rows after the last sequence (left as they are)
  bool causal = false, lse = false;
};

// `sequences` sequences of 0..max_len queries and keys each (at least one key and query in all), a
// random dtype, GQA ratio, head dim, causal flag and LSE output (drawn from the logged seed).
inline VarlenCase random_varlen_case(std::int64_t sequences, std::int64_t max_len) {
  VarlenCase c;
  c.dtype = random_in(0, 1) != 0 ? DType::fp16 : DType::bf16;
  c.heads_kv = random_in(1, 2);
  c.heads_q = c.heads_kv * random_in(1, 3);
  c.head_dim = std::vector<std::int64_t>{40, 64, 128, 256}[static_cast<std::size_t>(random_in(0, 3))];
  for (std::int64_t s = 0; s < sequences; ++s) {
    const bool empty = random_in(0, 5) == 0;  // an empty sequence now and then
    c.lengths_q.push_back(empty ? 0 : static_cast<std::int32_t>(random_in(1, max_len)));
    c.lengths_k.push_back(empty && random_in(0, 1) == 0 ? 0 : static_cast<std::int32_t>(random_in(1, max_len)));
  }
  c.lengths_q[0] = std::max<std::int32_t>(c.lengths_q[0], 1);
  c.lengths_k[0] = std::max<std::int32_t>(c.lengths_k[0], 1);
  c.trailing_rows = random_in(0, 2) == 0 ? random_in(1, 40) : 0;
  c.causal = random_in(0, 1) != 0;
  c.lse = random_in(0, 1) != 0;
  return c;
}

inline std::vector<std::int32_t> cu_seqlens_of(const std::vector<std::int32_t>& lengths) {
  std::vector<std::int32_t> cu{0};
  for (std::int32_t length : lengths) cu.push_back(cu.back() + length);
  return cu;
}

// The packed tensors of a case: q, out [1, total_q, Hq, D], k, v [1, total_k, Hk, D] (NHD, dense), out
// poisoned; cu_seqlens and the longest lengths.
struct VarlenTensors {
  VarlenTensors(const VarlenCase& c, std::mt19937_64& rng)
      : cu_q(cu_seqlens_of(c.lengths_q)), cu_k(cu_seqlens_of(c.lengths_k)),
        total_q(cu_q.back() + c.trailing_rows), total_k(cu_k.back() + c.trailing_rows),
        max_q(std::max<std::int64_t>(1, *std::max_element(c.lengths_q.begin(), c.lengths_q.end()))),
        max_k(std::max<std::int64_t>(1, *std::max_element(c.lengths_k.begin(), c.lengths_k.end()))),
        q({1, c.heads_q, total_q, c.head_dim}, c.dtype, Layout::NHD),
        k({1, c.heads_kv, total_k, c.head_dim}, c.dtype, Layout::NHD),
        v({1, c.heads_kv, total_k, c.head_dim}, c.dtype, Layout::NHD),
        out({1, c.heads_q, total_q, c.head_dim}, c.dtype, Layout::NHD) {
    numerics::fill_normal(q, rng);
    numerics::fill_channel_offsets(k, rng, 3.0);  // what K smoothing exists for
    numerics::fill_normal(v, rng);
  }
  std::int64_t batch() const { return static_cast<std::int64_t>(cu_q.size()) - 1; }
  // options.varlen over cu arrays at `cu_q_data` / `cu_k_data` (host or device copies of cu_q / cu_k).
  Varlen varlen(const std::int32_t* cu_q_data, const std::int32_t* cu_k_data) const {
    return {cu_q_data, cu_k_data, batch(), max_q, max_k};
  }
  std::vector<std::int32_t> cu_q, cu_k;
  std::int64_t total_q, total_k, max_q, max_k;
  numerics::HostTensor q, k, v, out;
};

// Rows start .. start + length - 1 of a packed NHD tensor, as a tensor of batch 1.
inline TensorView rows_of(const numerics::HostTensor& packed, std::int64_t start, std::int64_t length) {
  TensorView view = packed.view();
  view.data = static_cast<std::uint16_t*>(view.data) + start * view.strides[1];
  view.shape[1] = length;
  return view;
}

// Each sequence's rows of `out` (and of `lse`, [Hq, total_q], when the case asks for it) against the
// fp64 attention of that sequence alone: cosine >= min_cos (a sequence with keys), 0 for a sequence
// without keys; rows after the last sequence still hold their poison. `label` names the run.
// checked_sequences: the first that many (all by default; a run whose last cu_seqlens entries were
// malformed on purpose checks the others only, and not the rows after them).
inline void check_varlen_against_fp64(const VarlenCase& c, const VarlenTensors& t, const std::vector<float>& lse,
                                      double min_cos, const char* label, std::int64_t checked_sequences = -1) {
  const std::int64_t checked = checked_sequences < 0 ? t.batch() : checked_sequences;
  for (std::int64_t b = 0; b < checked; ++b) {
    const std::int64_t start_q = t.cu_q[b], length_q = c.lengths_q[b], start_k = t.cu_k[b], length_k = c.lengths_k[b];
    if (length_q == 0) continue;
    CAPTURE(label);
    CAPTURE(b);
    CAPTURE(length_q);
    CAPTURE(length_k);
    std::vector<double> actual;
    for (std::int64_t h = 0; h < c.heads_q; ++h)
      for (std::int64_t n = 0; n < length_q; ++n)
        for (std::int64_t d = 0; d < c.head_dim; ++d) actual.push_back(t.out.get(0, h, start_q + n, d));
    if (length_k == 0) {  // no key: the row is 0, as torch SDPA's math gives for a row without a key
      CHECK(std::all_of(actual.begin(), actual.end(), [](double x) { return x == 0.0; }));
      continue;
    }
    const numerics::ReferenceResult ref =
        numerics::reference_attention(rows_of(t.q, start_q, length_q), rows_of(t.k, start_k, length_k),
                                      rows_of(t.v, start_k, length_k), Layout::NHD, c.causal);
    const numerics::AccuracyMetrics metrics = numerics::measure_accuracy(std::span<const double>(actual), ref.out);
    CHECK_MESSAGE(metrics.non_finite == 0, metrics.summary());
    // Short sequences are dominated by the rounding of a few values: the bar is for real lengths.
    if (length_k >= 32 && length_q * c.heads_q * c.head_dim >= 4096) CHECK_MESSAGE(metrics.cosine >= min_cos, metrics.summary());
    if (c.lse) {
      // Every row against its bound (tests/lse_bounds.hpp: rows with few keys get twice the anchors'
      // 0.05; these calls smooth K); the message names the row with the least margin.
      double worst = 0.0, worst_bound = 0.0, least_margin = 1e30;
      std::int64_t worst_keys = 0;
      for (std::int64_t h = 0; h < c.heads_q; ++h)
        for (std::int64_t n = 0; n < length_q; ++n) {
          const double got = lse[static_cast<std::size_t>(h * t.total_q + start_q + n)];
          const double want = ref.lse[static_cast<std::size_t>(h * length_q + n)];
          const std::int64_t keys = sj_keys_to_visit(static_cast<int>(n), 1, static_cast<int>(length_k), c.causal);
          const double error = std::isfinite(got) ? std::abs(got - want) : 1e30;
          const double bound = lse_error_bound(keys, /*smooth_k=*/true);
          if (bound - error < least_margin) {
            least_margin = bound - error;
            worst = error;
            worst_bound = bound;
            worst_keys = keys;
          }
        }
      CHECK_MESSAGE(least_margin >= 0.0, "LSE abs error " << worst << " > " << worst_bound << " at a row of "
                                                          << worst_keys << " visible keys");
    }
  }
  if (checked < t.batch()) return;
  std::size_t trailing_written = 0;
  for (std::int64_t n = t.cu_q.back(); n < t.total_q; ++n)
    for (std::int64_t h = 0; h < c.heads_q; ++h)
      for (std::int64_t d = 0; d < c.head_dim; ++d)
        if (t.out.bits(0, h, n, d) != numerics::HostTensor::poison_bits(c.dtype)) ++trailing_written;
  CHECK_MESSAGE(trailing_written == 0, label << ": rows after the last sequence were written");
}

}  // namespace sagejit::test
