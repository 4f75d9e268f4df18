// The emulator against the fp64 reference (docs/NUMERICS.md, "Oracles": SageAttention's sm90 kernel
// measures cos 0.9992-0.9994, rel-L1 0.037-0.040 on random normal inputs), plus layouts, strides,
// GQA, tails, smoothing and LSE.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include <fmt/format.h>

#include "numerics/emulator.hpp"
#include "dev/numerics/metrics.hpp"
#include "dev/numerics/random_fill.hpp"
#include "dev/numerics/reference.hpp"

using namespace sagejit::numerics;
using sagejit::DType;
using sagejit::Layout;

namespace {

struct Problem {
  std::int64_t batch = 1, heads_q = 1, heads_kv = 1, seq_q = 1, seq_kv = 1, head_dim = 64;
  DType dtype = DType::bf16;
  Layout layout = Layout::HND;
  double k_offset = 0.0;  // > 0: K with per-channel offsets of this standard deviation
};

struct Inputs {
  HostTensor q, k, v;
};

Inputs make_inputs(const Problem& s, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  Inputs in{HostTensor({s.batch, s.heads_q, s.seq_q, s.head_dim}, s.dtype, s.layout),
            HostTensor({s.batch, s.heads_kv, s.seq_kv, s.head_dim}, s.dtype, s.layout),
            HostTensor({s.batch, s.heads_kv, s.seq_kv, s.head_dim}, s.dtype, s.layout)};
  fill_normal(in.q, rng);
  if (s.k_offset > 0)
    fill_channel_offsets(in.k, rng, s.k_offset);
  else
    fill_normal(in.k, rng);
  fill_normal(in.v, rng);
  return in;
}

struct Measured {
  AccuracyMetrics out, lse;
};

Measured measure(const Inputs& in, const Problem& s, const EmulatorOptions& options) {
  const EmulatorResult r = emulate(in.q.view(), in.k.view(), in.v.view(), s.layout, options);
  const ReferenceResult ref = reference_attention(in.q.view(), in.k.view(), in.v.view(), s.layout, options.causal);
  Measured m{measure_accuracy(r.out.host_view(), ref.out), {}};
  if (options.return_lse) m.lse = measure_accuracy(std::span<const float>(r.lse), ref.lse);
  return m;
}

std::string describe(const Problem& s, const EmulatorOptions& o) {
  return fmt::format("B={} Hq={} Hk={} Nq={} Nk={} D={} {} {} causal={} smooth={} block_n={} pv={}", s.batch,
                     s.heads_q, s.heads_kv, s.seq_q, s.seq_kv, s.head_dim, sagejit::to_string(s.dtype),
                     sagejit::to_string(s.layout), o.causal, o.smooth_k, o.block_n, o.pv_fp16 ? "fp16" : "fp8");
}

// Logs the accuracy of one run, then holds it to the anchors' bar: finite, cos >= 0.999, rel-L1 <= 0.05
// and the LSE within 0.05 of fp64.
void check_anchor_accuracy(const std::string& what, const Measured& m) {
  MESSAGE(what << ": out " << m.out.summary() << " | lse max-abs " << m.lse.max_abs_error);
  CHECK(m.out.non_finite == 0);
  CHECK(m.out.cosine >= 0.999);
  CHECK(m.out.relative_l1 <= 0.05);
  CHECK(m.lse.max_abs_error <= 0.05);
}

}  // namespace

TEST_CASE("emulator matches fp64 attention on random normal inputs (D 64/128, causal, GQA, tails)") {
  std::uint64_t seed = 1;
  for (std::int64_t D : {64, 128})
    for (std::int64_t N : {1, 31, 33, 1000})
      for (bool causal : {false, true}) {
        // GQA 2:1 on the long shape.
        const Problem s{.heads_q = 2, .heads_kv = N == 1000 ? 1 : 2, .seq_q = N, .seq_kv = N, .head_dim = D};
        EmulatorOptions options;
        options.causal = causal;
        options.return_lse = true;
        const Measured m = measure(make_inputs(s, seed++), s, options);
        check_anchor_accuracy(describe(s, options), m);
      }
}

TEST_CASE("emulator: Nq != Nk, batch > 1, fp16 inputs, block_n 32 and fp16 PV") {
  // MQA: one kv head for four query heads.
  const Problem s{
      .batch = 2, .heads_q = 4, .heads_kv = 1, .seq_q = 77, .seq_kv = 300, .head_dim = 128, .dtype = DType::fp16};
  const Inputs in = make_inputs(s, 42);
  for (bool causal : {false, true})
    for (int block_n : {32, 64}) {
      EmulatorOptions options;
      options.causal = causal;
      options.block_n = block_n;
      options.return_lse = true;
      check_anchor_accuracy(describe(s, options), measure(in, s, options));
    }
  // fp16 PV keeps V in fp16 and rounds P to fp16: much closer to exact than fp8 PV.
  EmulatorOptions fp8, fp16;
  fp16.pv_fp16 = true;
  const Measured m8 = measure(in, s, fp8), m16 = measure(in, s, fp16);
  MESSAGE(describe(s, fp16) << ": out " << m16.out.summary());
  CHECK(m16.out.cosine >= 0.9998);
  CHECK(m16.out.relative_l1 < 0.5 * m8.out.relative_l1);
}

TEST_CASE("K with large per-channel offsets: smoothing keeps accuracy, without it accuracy drops") {
  const Problem s{.heads_q = 2, .heads_kv = 2, .seq_q = 256, .seq_kv = 512, .head_dim = 128, .k_offset = 20.0};
  const Inputs in = make_inputs(s, 2024);
  EmulatorOptions smooth, raw;
  smooth.return_lse = raw.return_lse = true;
  raw.smooth_k = false;
  const Measured on = measure(in, s, smooth), off = measure(in, s, raw);
  MESSAGE("K offsets (stddev 20), smoothing on:  " << on.out.summary() << " | lse max-abs " << on.lse.max_abs_error);
  MESSAGE("K offsets (stddev 20), smoothing off: " << off.out.summary() << " | lse max-abs " << off.lse.max_abs_error);
  CHECK(on.out.cosine >= 0.999);
  CHECK(on.out.relative_l1 <= 0.05);
  // "Measurably worse": below the quality bar, several times the cosine gap, a larger relative L1.
  CHECK(off.out.cosine < 0.999);
  CHECK((1.0 - off.out.cosine) > 4.0 * (1.0 - on.out.cosine));
  CHECK(off.out.relative_l1 > 1.5 * on.out.relative_l1);
  // With smoothing the scores are shifted by q.mean(k) per row; the LSE correction undoes it.
  const PreparedTensors p = prepare(in.q.view(), in.k.view(), in.v.view(), s.layout, smooth);
  double largest_shift = 0.0;
  for (float delta : p.lse_delta) largest_shift = std::max(largest_shift, std::abs(double(delta)));
  MESSAGE("largest |lse_delta| (log2 units): " << largest_shift);
  CHECK(largest_shift > 1.0);  // the correction matters on this input...
  CHECK(on.lse.max_abs_error <= 0.05);  // ...and with it the LSE matches fp64
}

TEST_CASE("rows of equal values stay finite and accurate") {
  const Problem s{.heads_q = 1, .seq_q = 100, .seq_kv = 130, .head_dim = 64};
  Inputs in = make_inputs(s, 8);
  std::mt19937_64 rng(9);
  fill_equal_rows(in.k, rng);
  fill_equal_rows(in.v, rng);
  EmulatorOptions options;
  options.causal = true;
  options.return_lse = true;
  const Measured m = measure(in, s, options);
  MESSAGE("equal K/V rows: out " << m.out.summary() << " | lse max-abs " << m.lse.max_abs_error);
  CHECK(m.out.non_finite == 0);
  CHECK(m.out.cosine >= 0.999);
  CHECK(m.lse.max_abs_error <= 0.05);
}

TEST_CASE("HND, NHD and strided views give bit-identical workspaces and outputs") {
  const Problem s{.batch = 2, .heads_q = 4, .heads_kv = 2, .seq_q = 70, .seq_kv = 90, .head_dim = 64};
  const Inputs hnd = make_inputs(s, 31337);
  const StridePadding padding{5, 3, 7};
  const Inputs nhd{hnd.q.relayout(Layout::NHD), hnd.k.relayout(Layout::NHD), hnd.v.relayout(Layout::NHD)};
  const Inputs strided{hnd.q.relayout(Layout::NHD, padding), hnd.k.relayout(Layout::NHD, padding),
                       hnd.v.relayout(Layout::NHD, padding)};
  EmulatorOptions options;
  options.causal = true;
  options.return_lse = true;
  const PreparedTensors a = prepare(hnd.q.view(), hnd.k.view(), hnd.v.view(), Layout::HND, options);
  for (const Inputs* other : {&nhd, &strided}) {
    const PreparedTensors b = prepare(other->q.view(), other->k.view(), other->v.view(), Layout::NHD, options);
    CHECK(a.q8 == b.q8);
    CHECK(a.k8 == b.k8);
    CHECK(a.v8 == b.v8);
    CHECK(a.q_scale == b.q_scale);
    CHECK(a.k_scale == b.k_scale);
    CHECK(a.k_mean == b.k_mean);
    CHECK(a.v_scale == b.v_scale);
    CHECK(a.lse_delta == b.lse_delta);
  }
  const Inputs strided_hnd{hnd.q.relayout(Layout::HND, padding), hnd.k.relayout(Layout::HND, padding),
                           hnd.v.relayout(Layout::HND, padding)};
  const PreparedTensors from_strided =
      prepare(strided_hnd.q.view(), strided_hnd.k.view(), strided_hnd.v.view(), Layout::HND, options);
  CHECK(from_strided.q8 == a.q8);
  CHECK(from_strided.k8 == a.k8);
  CHECK(from_strided.v8 == a.v8);

  const EmulatorResult ra = attention(a, options, Layout::HND);
  const EmulatorResult rb = emulate(nhd.q.view(), nhd.k.view(), nhd.v.view(), Layout::NHD, options, Layout::NHD);
  HostTensor padded_out({s.batch, s.heads_q, s.seq_q, s.head_dim}, s.dtype, Layout::NHD, padding);
  std::vector<float> lse(ra.lse.size());
  attention_into(a, options, padded_out.view(), Layout::NHD, lse.data());
  CHECK(lse == ra.lse);
  CHECK(rb.lse == ra.lse);
  bool identical = true;
  for (std::int64_t bb = 0; bb < s.batch; ++bb)
    for (std::int64_t h = 0; h < s.heads_q; ++h)
      for (std::int64_t n = 0; n < s.seq_q; ++n)
        for (std::int64_t d = 0; d < s.head_dim; ++d)
          identical = identical && ra.out.bits(bb, h, n, d) == rb.out.bits(bb, h, n, d) &&
                      ra.out.bits(bb, h, n, d) == padded_out.bits(bb, h, n, d);
  CHECK(identical);
  // Nothing outside the view was written: the stride padding still holds the poison.
  std::size_t poisoned = 0, padding_elements = 0;
  for (std::size_t i = 0; i < padded_out.storage().size(); ++i)
    if (padded_out.is_padding(i)) {
      ++padding_elements;
      poisoned += padded_out.storage()[i] == HostTensor::poison_bits(s.dtype);
    }
  CHECK(padding_elements > 0);
  CHECK(poisoned == padding_elements);
}

TEST_CASE("long sequence: N = 4096, D = 128, one head") {
  const Problem s{.seq_q = 4096, .seq_kv = 4096, .head_dim = 128};
  EmulatorOptions options;
  options.return_lse = true;
  const Measured m = measure(make_inputs(s, 4096), s, options);
  check_anchor_accuracy(describe(s, options), m);
}
