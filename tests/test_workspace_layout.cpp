// plan/workspace_layout: every section 256-byte aligned, large enough for docs/NUMERICS.md's
// layout (rows of the kernel head dim's channels: zero-padded head dims included), in order without
// overlap, optional sections empty when unused, bad shapes rejected.
#include <doctest/doctest.h>

#include <cstddef>
#include <random>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "plan/workspace_layout.hpp"

using namespace sagejit;

TEST_CASE("workspace sections are aligned, ordered and sized per docs/NUMERICS.md") {
  std::mt19937 rng(7);  // fixed: the sizes only need to cover the section arithmetic
  for (int trial = 0; trial < 200; ++trial) {
    AttentionCall s;
    s.sm_scale = 1.0f;
    s.batch = 1 + static_cast<int>(rng() % 3);
    s.heads_kv = 1 + static_cast<int>(rng() % 4);
    s.heads_q = s.heads_kv * (1 + static_cast<int>(rng() % 4));
    s.seq_q = 1 + static_cast<int>(rng() % 5000);
    s.seq_kv = 1 + static_cast<int>(rng() % 5000);
    s.head_dim = 8 * (1 + static_cast<int>(rng() % 16));  // every accepted head dim
    const VInput v{rng() % 2 == 1, VOrder::natural};
    s.smooth_k = rng() % 2;
    s.want_lse = rng() % 2;
    CAPTURE(trial);
    const WorkspaceLayout w = workspace_layout(s, v);
    const std::int64_t qp = (s.seq_q + 127) / 128 * 128, kp = (s.seq_kv + 127) / 128 * 128;
    CHECK(w.seq_q_pad == qp);
    CHECK(w.seq_kv_pad == kp);
    CHECK(w.chunks == (s.seq_kv + 63) / 64);
    const WorkspaceSection sections[] = {w.q8,     w.q_scale, w.k8,    w.k_scale, w.k_mean,
                                         w.k_mean_partial, w.v_amax_partial, w.v_quant, w.v_scale, w.lse_delta};
    const std::size_t offsets[] = {w.q8.offset,      w.q_scale.offset, w.k8.offset,      w.k_scale.offset,
                                   w.k_mean.offset,  w.k_mean_partial.offset, w.v_amax_partial.offset,
                                   w.v_quant.offset, w.v_scale.offset, w.lse_delta.offset, w.total_bytes};
    const std::int64_t element_bytes[] = {1, 4, 1, 4, 4, 8, 4, v.pv_fp16 ? 2 : 1, 4, 4};
    CHECK(w.v_fp16 == v.pv_fp16);
    for (std::size_t o : offsets) CHECK(o % WorkspaceLayout::alignment == 0);
    const std::int64_t bq = s.batch * s.heads_q, bk = s.batch * s.heads_kv;
    const std::int64_t d = s.head_dim <= 64 ? 64 : 128;  // channels of a workspace row: the padded head dim
    const std::int64_t needed[] = {bq * qp * d,
                                   bq * qp / 32 * 4,
                                   bk * kp * d,
                                   bk * kp / 32 * 4,
                                   bk * d * 4,
                                   s.smooth_k ? bk * w.chunks * d * 8 : 0,
                                   v.pv_fp16 ? 0 : bk * w.chunks * d * 4,
                                   bk * d * kp * (v.pv_fp16 ? 2 : 1),
                                   bk * d * 4,
                                   s.want_lse && s.smooth_k ? bq * s.seq_q * 4 : 0};
    for (int i = 0; i < 10; ++i) {
      CHECK(offsets[i + 1] >= offsets[i]);
      CHECK(static_cast<std::int64_t>(offsets[i + 1] - offsets[i]) >= needed[i]);
      CHECK(static_cast<std::int64_t>(offsets[i + 1] - offsets[i]) < needed[i] + 256);
      CHECK(static_cast<std::int64_t>(sections[i].count) * element_bytes[i] == needed[i]);  // exact element counts
    }
  }
}

TEST_CASE("workspace_layout rejects shapes the kernels cannot run") {
  AttentionCall s;
  s.sm_scale = 1.0f;
  s.head_dim = 100;
  const VInput v;
  try {
    workspace_layout(s, v);
    FAIL("no error for head_dim 100");
  } catch (const Error& error) {  // the code the API and the runner give for it
    CHECK(error.code() == ErrorCode::unsupported);
    CHECK(std::string(error.what()).find("head_dim 100") != std::string::npos);
  }
  s.head_dim = 128;
  s.seq_kv = 0;
  CHECK_THROWS_AS(workspace_layout(s, v), Error);
  s.seq_kv = 1;
  s.heads_q = 3;
  s.heads_kv = 2;
  CHECK_THROWS_AS(workspace_layout(s, v), Error);
}

TEST_CASE("workspace_spans points at every section of the layout, and at nothing for an unused one") {
  AttentionCall s;
  s.sm_scale = 1.0f;
  s.seq_q = 300;
  s.seq_kv = 200;
  s.head_dim = 64;
  for (const bool pv_fp16 : {false, true})
    for (const bool smooth_k : {false, true})
      for (const bool want_lse : {false, true}) {
        CAPTURE(pv_fp16);
        CAPTURE(smooth_k);
        CAPTURE(want_lse);
        s.smooth_k = smooth_k;
        s.want_lse = want_lse;
        const WorkspaceLayout w = workspace_layout(s, VInput{pv_fp16, VOrder::natural});
        std::vector<std::byte> workspace(w.total_bytes);
        std::byte* base = workspace.data();
        const WorkspaceSpans spans = workspace_spans(w, base);
        const auto at = [&](const auto& span, const WorkspaceSection& section) {
          return reinterpret_cast<const std::byte*>(span.data()) == base + section.offset &&
                 span.size() == section.count;
        };
        CHECK(at(spans.q8, w.q8));
        CHECK(at(spans.q_scale, w.q_scale));
        CHECK(at(spans.k8, w.k8));
        CHECK(at(spans.k_scale, w.k_scale));
        CHECK(at(spans.k_mean, w.k_mean));
        CHECK(at(spans.v_scale, w.v_scale));
        CHECK((spans.k_mean_partial.data() == nullptr) == !smooth_k);
        if (smooth_k) CHECK(at(spans.k_mean_partial, w.k_mean_partial));
        CHECK((spans.v_amax_partial.data() == nullptr) == pv_fp16);
        if (!pv_fp16) CHECK(at(spans.v_amax_partial, w.v_amax_partial));
        CHECK((spans.v16.data() == nullptr) == !pv_fp16);
        CHECK((spans.v8.data() == nullptr) == pv_fp16);
        if (pv_fp16) CHECK(at(spans.v16, w.v_quant));
        else CHECK(at(spans.v8, w.v_quant));
        CHECK((spans.lse_delta.data() == nullptr) == !(smooth_k && want_lse));
        if (smooth_k && want_lse) CHECK(at(spans.lse_delta, w.lse_delta));
      }
}
