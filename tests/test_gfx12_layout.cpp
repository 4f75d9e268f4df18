// Host check of the gfx12 (RDNA4) attention kernel's fragment layouts. An emulation of the
// documented wave32 16x16x16 8-bit WMMA lane layout (docs/RDNA4.md, "gfx12 WMMA") is fed with the registers
// the kernel's own index functions (kernel_src/arch/mma_gfx12.h) say it loads, and what the kernel
// reads back from the accumulators is compared with direct matrix products; then one query block's
// whole data flow over two key tiles (QK WMMA, scores, mask, online softmax, P quantized per lane
// into the PV operand, PV WMMA, rescale, epilogue) is compared with a plain per-row computation.
// Deliberately wrong layouts (A's half-wave k ranges swapped; gfx11's interleaved C rows) must fail.
#include <doctest/doctest.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "arch/mma_gfx12.h"
#include "common/online_softmax.h"
#include "random_support.hpp"

using sagejit::test::logged_rng;

namespace {

constexpr int kLanes = 32;

// One lane-layout hypothesis for the 8-bit operands and the 32-bit accumulator.
struct WmmaLayout {
  const char* name;
  int (*a_k)(int lane, int byte);            // k index of A byte `byte` (0..7) in lane `lane`; row = lane % 16
  int (*b_k)(int lane, int byte);            // k index of B byte; column = lane % 16
  int (*c_row)(int lane, int vgpr);          // row of accumulator VGPR `vgpr`; column = lane % 16
};

// docs/RDNA4.md, "gfx12 WMMA" (AMD matrix instruction calculator, RDNA4).
int documented_k(int lane, int byte) { return 8 * (lane / 16) + byte; }
int documented_c_row(int lane, int vgpr) { return 8 * (lane / 16) + vgpr; }
// Wrong on purpose: A's half-waves exchange their k ranges (B stays documented).
int swapped_k(int lane, int byte) { return 8 * (1 - lane / 16) + byte; }
// Wrong on purpose: gfx11's wave32 accumulator interleaves the half-waves' rows.
int gfx11_c_row(int lane, int vgpr) { return 2 * vgpr + lane / 16; }

const WmmaLayout documented{"documented gfx12", documented_k, documented_k, documented_c_row};
const WmmaLayout swapped_a{"A half-wave k ranges swapped", swapped_k, documented_k, documented_c_row};
const WmmaLayout gfx11_c{"gfx11 interleaved C rows", documented_k, documented_k, gfx11_c_row};

using Bytes = std::array<std::array<std::uint8_t, 8>, kLanes>;  // [lane][byte] of a 2-VGPR operand
template <typename T>
using Acc = std::array<std::array<T, 8>, kLanes>;               // [lane][vgpr] of an 8-VGPR accumulator

// D = A*B + C, signed 8-bit, exact int32.
Acc<std::int32_t> wmma_iu8(const WmmaLayout& layout, const Bytes& a, const Bytes& b, const Acc<std::int32_t>& c) {
  int am[16][16] = {}, bm[16][16] = {};
  for (int lane = 0; lane < kLanes; ++lane)
    for (int byte = 0; byte < 8; ++byte) {
      am[lane % 16][layout.a_k(lane, byte)] = static_cast<std::int8_t>(a[lane][byte]);
      bm[layout.b_k(lane, byte)][lane % 16] = static_cast<std::int8_t>(b[lane][byte]);
    }
  Acc<std::int32_t> d = c;
  for (int lane = 0; lane < kLanes; ++lane)
    for (int vgpr = 0; vgpr < 8; ++vgpr) {
      const int i = layout.c_row(lane, vgpr), j = lane % 16;
      for (int k = 0; k < 16; ++k) d[lane][vgpr] += am[i][k] * bm[k][j];
    }
  return d;
}

// D = A*B + C, E4M3 x E4M3 -> fp32 (products exact; the 16-term sum rounded once to fp32).
Acc<float> wmma_fp8(const WmmaLayout& layout, const Bytes& a, const Bytes& b, const Acc<float>& c) {
  double am[16][16] = {}, bm[16][16] = {};
  for (int lane = 0; lane < kLanes; ++lane)
    for (int byte = 0; byte < 8; ++byte) {
      am[lane % 16][layout.a_k(lane, byte)] = sj_e4m3_decode(a[lane][byte]);
      bm[layout.b_k(lane, byte)][lane % 16] = sj_e4m3_decode(b[lane][byte]);
    }
  Acc<float> d = c;
  for (int lane = 0; lane < kLanes; ++lane)
    for (int vgpr = 0; vgpr < 8; ++vgpr) {
      const int i = layout.c_row(lane, vgpr), j = lane % 16;
      double sum = c[lane][vgpr];
      for (int k = 0; k < 16; ++k) sum += am[i][k] * bm[k][j];
      d[lane][vgpr] = static_cast<float>(sum);
    }
  return d;
}

std::int8_t random_i8() { return static_cast<std::int8_t>(std::uniform_int_distribution<int>(-127, 127)(logged_rng())); }

// A random finite E4M3 code (no NaN 0x7F/0xFF), |value| <= 448.
std::uint8_t random_e4m3() {
  for (;;) {
    const auto code = static_cast<std::uint8_t>(std::uniform_int_distribution<int>(0, 255)(logged_rng()));
    if ((code & 0x7f) != 0x7f) return code;
  }
}

// ---- Products through the kernel's index functions ----------------------------------------------

// S^T tile = K * Q^T for `block_n` keys and 16 queries; returns the number of mismatching values
// (S read back with sj_g12_s_key / sj_g12_s_query) plus keys not covered exactly once.
int qk_mismatches(const WmmaLayout& layout, int head_dim, int block_n) {
  std::vector<std::int8_t> k(block_n * head_dim), q(16 * head_dim);
  for (auto& x : k) x = random_i8();
  for (auto& x : q) x = random_i8();
  int bad = 0;
  std::vector<int> seen(block_n * 16, 0);
  for (int kb = 0; kb < block_n / 16; ++kb) {
    Acc<std::int32_t> acc{};
    for (int step = 0; step < head_dim / 16; ++step) {
      Bytes a{}, b{};
      for (int lane = 0; lane < kLanes; ++lane)
        for (int byte = 0; byte < 8; ++byte) {
          const int channel = sj_g12_qk_channel(step, lane, byte);
          a[lane][byte] = static_cast<std::uint8_t>(k[sj_g12_k_frag_key(kb, lane) * head_dim + channel]);
          b[lane][byte] = static_cast<std::uint8_t>(q[sj_g12_q_frag_query(lane) * head_dim + channel]);
        }
      acc = wmma_iu8(layout, a, b, acc);
    }
    for (int lane = 0; lane < kLanes; ++lane)
      for (int vgpr = 0; vgpr < 8; ++vgpr) {
        const int key = sj_g12_s_key(kb, lane, vgpr), query = sj_g12_s_query(lane);
        if (key < 0 || key >= block_n) {
          ++bad;
          continue;
        }
        ++seen[key * 16 + query];
        std::int32_t expected = 0;
        for (int d = 0; d < head_dim; ++d) expected += k[key * head_dim + d] * q[query * head_dim + d];
        bad += acc[lane][vgpr] != expected;
      }
  }
  for (int count : seen) bad += count != 1;
  return bad;
}

// O^T block = V^T * P^T for 16 channels x `block_n` keys x 16 queries, P placed as the kernel does
// (byte sj_g12_p_byte(v) of the S lane layout). Returns the largest error in units of the allowed
// fp32 rounding (<= 1 passes).
double pv_error(const WmmaLayout& layout, int head_dim, int block_n) {
  std::vector<std::uint8_t> v(head_dim * block_n), p(block_n * 16);  // v[d][key], p[key][query]
  for (auto& x : v) x = random_e4m3();
  for (auto& x : p) x = random_e4m3();
  double worst = 0;
  for (int cb = 0; cb < head_dim / 16; ++cb) {
    Acc<float> acc{};
    for (int kb = 0; kb < block_n / 16; ++kb) {
      Bytes a{}, b{};
      for (int lane = 0; lane < kLanes; ++lane)
        for (int byte = 0; byte < 8; ++byte)
          a[lane][byte] = v[(cb * 16 + sj_g12_v_frag_channel(lane)) * block_n + sj_g12_v_frag_key(kb, lane, byte)];
      for (int lane = 0; lane < kLanes; ++lane)
        for (int vgpr = 0; vgpr < 8; ++vgpr)
          b[lane][sj_g12_p_byte(vgpr)] = p[sj_g12_s_key(kb, lane, vgpr) * 16 + sj_g12_s_query(lane)];
      acc = wmma_fp8(layout, a, b, acc);
    }
    for (int lane = 0; lane < kLanes; ++lane)
      for (int vgpr = 0; vgpr < 8; ++vgpr) {
        const int d = cb * 16 + sj_g12_o_channel(lane, vgpr), query = sj_g12_o_query(lane);
        double expected = 0, magnitude = 0;
        for (int key = 0; key < block_n; ++key) {
          const double term = double(sj_e4m3_decode(v[d * block_n + key])) * sj_e4m3_decode(p[key * 16 + query]);
          expected += term;
          magnitude += std::fabs(term);
        }
        // one fp32 rounding per WMMA plus the additions between them
        const double allowed = magnitude * 4e-7 * (block_n / 16 + 1) + 1e-30;
        worst = std::max(worst, std::fabs(acc[lane][vgpr] - expected) / allowed);
      }
  }
  return worst;
}

// ---- One query block's whole data flow --------------------------------------------------------------

struct FlowProblem {
  int head_dim, block_n, tiles, seq_kv, first_query;
  bool causal;
  std::vector<std::int8_t> q8, k8;     // [16][D], [keys][D]
  float q_scale;                       // the 16 queries lie in one 32-row scale block
  std::vector<float> k_scale;          // per 32 keys
  std::vector<std::uint8_t> v8;        // V^T [D][keys], e4m3
  std::vector<float> v_scale;          // [D]
};

FlowProblem make_flow_problem(int head_dim, int block_n, bool causal) {
  FlowProblem pr{head_dim, block_n, 2, 0, 0, causal, {}, {}, 0, {}, {}, {}};
  const int keys = pr.tiles * block_n;
  pr.seq_kv = keys - 5;  // a tail: the last 5 keys of the second tile are padding
  pr.first_query = causal ? block_n - 8 : 0;  // causal: the diagonal crosses both tiles
  pr.q8.resize(16 * head_dim);
  pr.k8.resize(keys * head_dim);
  pr.v8.resize(head_dim * keys);
  for (auto& x : pr.q8) x = random_i8();
  for (auto& x : pr.k8) x = random_i8();
  for (int i = 0; i < keys * head_dim; ++i) pr.v8[i] = random_e4m3();
  for (int key = pr.seq_kv; key < keys; ++key)  // padded keys are zero in the workspace
    for (int d = 0; d < head_dim; ++d) {
      pr.v8[d * keys + key] = 0;
      pr.k8[key * head_dim + d] = 0;
    }
  std::uniform_real_distribution<float> scale(0.5e-3f, 2e-3f);
  pr.q_scale = scale(logged_rng());
  pr.k_scale.resize(keys / 32);
  for (auto& s : pr.k_scale) s = scale(logged_rng());
  pr.v_scale.resize(head_dim);
  for (auto& s : pr.v_scale) s = scale(logged_rng());
  return pr;
}

// The kernel's per-wave data flow for one 16-query block, registers emulated lane by lane.
std::vector<float> flow_through_fragments(const WmmaLayout& layout, const FlowProblem& pr) {
  const int d_steps = pr.head_dim / 16, k_blocks = pr.block_n / 16, keys = pr.tiles * pr.block_n;
  std::array<float, kLanes> m, l;
  m.fill(sj_neg_inf());
  l.fill(0.0f);
  std::vector<Acc<float>> o(d_steps, Acc<float>{});
  for (int t = 0; t < pr.tiles; ++t) {
    const int tile_start = t * pr.block_n;
    // S^T = K * Q^T
    std::vector<Acc<std::int32_t>> acc(k_blocks, Acc<std::int32_t>{});
    for (int kb = 0; kb < k_blocks; ++kb)
      for (int step = 0; step < d_steps; ++step) {
        Bytes a{}, b{};
        for (int lane = 0; lane < kLanes; ++lane)
          for (int byte = 0; byte < 8; ++byte) {
            const int channel = sj_g12_qk_channel(step, lane, byte);
            a[lane][byte] = static_cast<std::uint8_t>(pr.k8[(tile_start + sj_g12_k_frag_key(kb, lane)) * pr.head_dim + channel]);
            b[lane][byte] = static_cast<std::uint8_t>(pr.q8[sj_g12_q_frag_query(lane) * pr.head_dim + channel]);
          }
        acc[kb] = wmma_iu8(layout, a, b, acc[kb]);
      }
    // As the kernel (fused form): float(dot) masked to -inf, the lane's shifted maximum per 32-key
    // group, rounded up, the max across half-waves; p = exp2(fma) masked again; l sums the e4m3 p.
    std::array<std::array<float, 8>, kLanes> dot[4];
    std::array<float, kLanes> lane_max, alpha;
    for (int lane = 0; lane < kLanes; ++lane) {
      const int query = pr.first_query + sj_g12_s_query(lane);
      for (int g = 0; g < k_blocks / 2; ++g) {
        float dot_max = sj_neg_inf();
        for (int kb = 2 * g; kb < 2 * g + 2; ++kb)
          for (int vgpr = 0; vgpr < 8; ++vgpr) {
            const int key = tile_start + sj_g12_s_key(kb, lane, vgpr);
            dot[kb][lane][vgpr] = sj_key_visible(query, key, pr.seq_kv, pr.causal) ? float(acc[kb][lane][vgpr]) : sj_neg_inf();
            dot_max = std::fmax(dot_max, dot[kb][lane][vgpr]);
          }
        const float group_max = sj_shifted_group_max(dot_max, pr.q_scale, pr.k_scale[(tile_start + 32 * g) / 32]);
        lane_max[lane] = g == 0 ? group_max : std::fmax(lane_max[lane], group_max);
      }
      lane_max[lane] = sj_shifted_round_up(lane_max[lane]);
    }
    std::vector<Bytes> p_operand(k_blocks, Bytes{});
    for (int lane = 0; lane < kLanes; ++lane) {
      const int query = pr.first_query + sj_g12_s_query(lane);
      const float m_new = std::fmax(m[lane], std::fmax(lane_max[lane], lane_max[lane ^ 16]));  // v_permlanex16
      alpha[lane] = sj_rescale(m[lane], m_new);
      m[lane] = m_new;
      l[lane] *= alpha[lane];
      for (int kb = 0; kb < k_blocks; ++kb) {
        float prob[8];
        for (int vgpr = 0; vgpr < 8; ++vgpr) {
          const int key = tile_start + sj_g12_s_key(kb, lane, vgpr);
          const float arg = sj_fused_arg(dot[kb][lane][vgpr], pr.q_scale, pr.k_scale[key / 32], m_new);
          prob[vgpr] = sj_exp2(sj_key_visible(query, key, pr.seq_kv, pr.causal) ? arg : sj_neg_inf());
        }
        sj_u32 words[2];
        sj_g12_pack_p_host(prob, words);
        for (int byte = 0; byte < 8; ++byte) {
          p_operand[kb][lane][byte] = static_cast<std::uint8_t>(words[byte / 4] >> (8 * (byte % 4)));
          l[lane] += sj_e4m3_decode(p_operand[kb][lane][byte]);  // v_dot4_f32_fp8_fp8 with 1.0
        }
      }
    }
    // O^T = O^T * alpha + V^T * P^T (fresh accumulator per tile)
    for (int cb = 0; cb < d_steps; ++cb) {
      // As the kernel: O rescaled in place (alpha == 1 for a settled row), then the PV WMMAs
      // accumulate straight into it through the C operand.
      for (int lane = 0; lane < kLanes; ++lane)
        for (int vgpr = 0; vgpr < 8; ++vgpr) o[cb][lane][vgpr] *= alpha[lane];
      for (int kb = 0; kb < k_blocks; ++kb) {
        Bytes a{};
        for (int lane = 0; lane < kLanes; ++lane)
          for (int byte = 0; byte < 8; ++byte)
            a[lane][byte] = pr.v8[(cb * 16 + sj_g12_v_frag_channel(lane)) * keys + tile_start + sj_g12_v_frag_key(kb, lane, byte)];
        o[cb] = wmma_fp8(layout, a, p_operand[kb], o[cb]);
      }
    }
  }
  // epilogue: l summed over the half-waves, out[query][d]
  std::vector<float> out(16 * pr.head_dim, std::nanf(""));
  for (int cb = 0; cb < d_steps; ++cb)
    for (int lane = 0; lane < kLanes; ++lane)
      for (int vgpr = 0; vgpr < 8; ++vgpr) {
        const int d = cb * 16 + sj_g12_o_channel(lane, vgpr);
        const float row_sum = l[lane] + l[lane ^ 16];
        out[sj_g12_o_query(lane) * pr.head_dim + d] = sj_output(o[cb][lane][vgpr], row_sum, pr.v_scale[d]);
      }
  return out;
}

// The same algorithm (docs/NUMERICS.md steps 1-8, the fused form with the row sum of the quantized
// p, as the gfx12 descriptor sets) as plain per-row loops over whole matrices.
std::vector<float> flow_direct(const FlowProblem& pr) {
  const int keys = pr.tiles * pr.block_n;
  std::vector<float> out(16 * pr.head_dim);
  for (int row = 0; row < 16; ++row) {
    const int query = pr.first_query + row;
    float m = sj_neg_inf(), l = 0;
    std::vector<double> o(pr.head_dim, 0.0);
    for (int t = 0; t < pr.tiles; ++t) {
      std::vector<float> dot(pr.block_n);
      std::vector<bool> visible(pr.block_n);
      float tile_max = sj_neg_inf();
      for (int j = 0; j < pr.block_n; ++j) {
        const int key = t * pr.block_n + j;
        int sum = 0;
        for (int d = 0; d < pr.head_dim; ++d) sum += pr.q8[row * pr.head_dim + d] * pr.k8[key * pr.head_dim + d];
        dot[j] = float(sum);
        visible[j] = sj_key_visible(query, key, pr.seq_kv, pr.causal);
        if (visible[j]) tile_max = std::fmax(tile_max, sj_shifted_group_max(dot[j], pr.q_scale, pr.k_scale[key / 32]));
      }
      const float m_new = std::fmax(m, sj_shifted_round_up(tile_max));
      const float alpha = sj_rescale(m, m_new);
      m = m_new;
      float sum = 0;
      std::vector<double> tile_o(pr.head_dim, 0.0);
      for (int j = 0; j < pr.block_n; ++j) {
        const int key = t * pr.block_n + j;
        const float p = visible[j] ? sj_exp2(sj_fused_arg(dot[j], pr.q_scale, pr.k_scale[key / 32], m_new)) : 0.0f;
        const double pq = sj_e4m3_decode(sj_e4m3_encode(p));
        sum += float(pq);
        for (int d = 0; d < pr.head_dim; ++d) tile_o[d] += pq * sj_e4m3_decode(pr.v8[d * keys + key]);
      }
      l = l * alpha + sum;
      for (int d = 0; d < pr.head_dim; ++d) o[d] = o[d] * alpha + tile_o[d];
    }
    for (int d = 0; d < pr.head_dim; ++d) out[row * pr.head_dim + d] = sj_output(static_cast<float>(o[d]), l, pr.v_scale[d]);
  }
  return out;
}

// Largest |a - b| / (1e-5 * max|b| + tiny) over the block (<= 1 passes): fp32 accumulation-order noise.
double flow_error(const WmmaLayout& layout, int head_dim, int block_n, bool causal) {
  const FlowProblem pr = make_flow_problem(head_dim, block_n, causal);
  const std::vector<float> got = flow_through_fragments(layout, pr);
  const std::vector<float> want = flow_direct(pr);
  double scale = 0;
  for (float x : want) scale = std::max(scale, double(std::fabs(x)));
  double worst = 0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    const double err = std::fabs(double(got[i]) - want[i]);
    worst = std::max(worst, std::isnan(err) ? 1e30 : err / (1e-5 * scale + 1e-30));
  }
  return worst;
}

}  // namespace

TEST_CASE("gfx12 index functions: every channel and key is placed exactly once") {
  for (int head_dim : {64, 128}) {
    std::vector<int> channels(head_dim, 0);
    for (int step = 0; step < head_dim / 16; ++step)
      for (int lane = 0; lane < kLanes; ++lane)
        for (int byte = 0; byte < 8; ++byte) ++channels[sj_g12_qk_channel(step, lane, byte)];
    // each channel appears in 16 lanes (one per row/column) of exactly one step
    for (int count : channels) CHECK(count == 16);
  }
  for (int block_n : {32, 64}) {
    std::vector<int> keys(block_n, 0);
    for (int kb = 0; kb < block_n / 16; ++kb)
      for (int row = 0; row < 16; ++row) ++keys[sj_g12_key_slot(kb, row)];
    for (int count : keys) CHECK(count == 1);
  }
  // The V^T operand of key blocks 2g, 2g+1 is 16 contiguous keys per half-wave (one 16-byte read).
  for (int lane = 0; lane < kLanes; ++lane)
    for (int byte = 0; byte < 16; ++byte)
      CHECK(sj_g12_v_frag_key(byte / 8, lane, byte % 8) == sj_g12_v_frag_key(0, lane, 0) + byte);
}

TEST_CASE("gfx12 int8 S^T = K*Q^T through the documented layout is exact") {
  for (int head_dim : {64, 128})
    for (int block_n : {32, 64}) {
      const int bad = qk_mismatches(documented, head_dim, block_n);
      INFO("head_dim ", head_dim, " block_n ", block_n);
      CHECK(bad == 0);
    }
}

TEST_CASE("gfx12 fp8 O^T = V^T*P^T through the documented layout matches to fp32 rounding") {
  for (int head_dim : {64, 128})
    for (int block_n : {32, 64}) {
      const double err = pv_error(documented, head_dim, block_n);
      INFO("head_dim ", head_dim, " block_n ", block_n, " error/allowed ", err);
      CHECK(err <= 1.0);
    }
}

TEST_CASE("gfx12 data flow over two key tiles (S accumulator reused as the P operand) matches a direct computation") {
  for (int head_dim : {64, 128})
    for (int block_n : {32, 64})
      for (bool causal : {false, true}) {
        const double err = flow_error(documented, head_dim, block_n, causal);
        INFO("head_dim ", head_dim, " block_n ", block_n, " causal ", causal, " error/allowed ", err);
        CHECK(err <= 1.0);
      }
}

TEST_CASE("gfx12 layout check detects a wrong layout") {
  for (const WmmaLayout* wrong : {&swapped_a, &gfx11_c}) {
    INFO("layout: ", wrong->name);
    CHECK(qk_mismatches(*wrong, 128, 32) > 0);
    CHECK(pv_error(*wrong, 128, 32) > 1.0);
    CHECK(flow_error(*wrong, 64, 32, false) > 1.0);
    CHECK(flow_error(*wrong, 128, 64, true) > 1.0);
  }
}

TEST_CASE("gfx12 P packing: the host twin of v_cvt_pk_fp8_f32 keeps a NaN p NaN, and no clamp is needed (v_med3 would lose NaN)") {
  // The instruction model (RDNA4 ISA): v_med3_num_f32 with a NaN operand is the min of the other two,
  // so the old clamp med3(p, 448, -448) turned a NaN score into the finite weight -448.
  const float nan = std::nanf("");
  CHECK(sj_g12_med3_host(nan, 448.0f, -448.0f) == -448.0f);
  CHECK(sj_g12_med3_host(500.0f, 448.0f, -448.0f) == 448.0f);
  CHECK(sj_g12_med3_host(3.0f, 448.0f, -448.0f) == 3.0f);

  // The convert without saturation: NaN and overflow (>= 464) give the NaN code.
  CHECK(sj_g12_cvt_fp8_host(nan) == 0x7f);
  CHECK(sj_g12_cvt_fp8_host(464.0f) == 0x7f);
  CHECK(sj_g12_cvt_fp8_host(std::numeric_limits<float>::infinity()) == 0x7f);
  CHECK(sj_g12_cvt_fp8_host(463.9f) == 0x7e);  // rounds to 448
  CHECK(sj_g12_cvt_fp8_host(448.0f) == 0x7e);

  // Every p the kernel can produce: exp2(x) with x <= P_OFFSET (s <= m), allowing v_exp_f32 a few
  // ulps above the exact value. The unclamped convert equals the contract's e4m3(min(p, 448)).
  auto& rng = logged_rng();
  std::uniform_real_distribution<float> exponent(-160.0f, SJ_P_OFFSET);
  for (int i = 0; i < 100000; ++i) {
    const float x = i == 0 ? SJ_P_OFFSET : exponent(rng);
    const float p = std::nextafter(std::nextafter(std::exp2(x), 1e30f), 1e30f);  // two ulps high
    REQUIRE(p < 464.0f);
    REQUIRE(sj_g12_cvt_fp8_host(p) == sj_e4m3_encode(p > 448.0f ? 448.0f : p));
  }
  // The fused form (docs/NUMERICS.md "Fused scores"): with the shifted maximum rounded up, every
  // fma argument is <= P_OFFSET exactly, whatever the magnitudes of the scores; without the
  // rounding up, large scores exceed it by up to half an ulp of the maximum (p >= 464 from ulp 0.1).
  std::uniform_int_distribution<int> dot_value(-127 * 127 * 128, 127 * 127 * 128);
  std::uniform_real_distribution<float> log_scale(-40.0f, 8.0f);
  int exceeded_without_rounding_up = 0;
  for (int i = 0; i < 20000; ++i) {
    const float q_scale = std::exp2(log_scale(rng)), k_scale[2] = {std::exp2(log_scale(rng)), std::exp2(log_scale(rng))};
    float dots[64], group_max[2] = {sj_neg_inf(), sj_neg_inf()};
    for (int j = 0; j < 64; ++j) {
      dots[j] = float(dot_value(rng));
      group_max[j / 32] = std::fmax(group_max[j / 32], dots[j]);
    }
    const float shifted = std::fmax(sj_shifted_group_max(group_max[0], q_scale, k_scale[0]),
                                    sj_shifted_group_max(group_max[1], q_scale, k_scale[1]));
    const float m = sj_shifted_round_up(shifted);
    bool exceeded = false;
    for (int j = 0; j < 64; ++j) {
      REQUIRE(sj_fused_arg(dots[j], q_scale, k_scale[j / 32], m) <= SJ_P_OFFSET);
      exceeded = exceeded || sj_fused_arg(dots[j], q_scale, k_scale[j / 32], shifted) > SJ_P_OFFSET;
    }
    exceeded_without_rounding_up += exceeded;
  }
  CHECK(exceeded_without_rounding_up > 0);  // the rounding up is needed (the sweep reaches it)
  // -inf (a group with no visible key) rounds to NaN, which the max ignores.
  CHECK(std::isnan(sj_shifted_round_up(sj_neg_inf())));
  CHECK(std::fmax(1.0f, sj_shifted_round_up(sj_neg_inf())) == 1.0f);

  // Packed: a NaN p becomes the NaN code in its byte; its neighbours are untouched.
  const float p[8] = {1.0f, nan, 448.0f, 0.0f, 2.0f, 3.0f, nan, 0.5f};
  sj_u32 words[2];
  sj_g12_pack_p_host(p, words);
  const auto byte = [&](int b) { return static_cast<std::uint8_t>(words[b / 4] >> (8 * (b % 4))); };
  CHECK(std::isnan(sj_e4m3_decode(byte(sj_g12_p_byte(1)))));
  CHECK(std::isnan(sj_e4m3_decode(byte(sj_g12_p_byte(6)))));
  CHECK(sj_e4m3_decode(byte(sj_g12_p_byte(0))) == 1.0f);
  CHECK(sj_e4m3_decode(byte(sj_g12_p_byte(2))) == 448.0f);
  CHECK(sj_e4m3_decode(byte(sj_g12_p_byte(3))) == 0.0f);
  CHECK(sj_e4m3_decode(byte(sj_g12_p_byte(7))) == 0.5f);
}
