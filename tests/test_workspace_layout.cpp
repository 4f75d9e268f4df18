// plan/workspace_layout: every section 256-byte aligned, large enough for docs/NUMERICS.md's
// layout (rows of the kernel head dim's channels: zero-padded head dims included), in order without
// overlap, optional sections empty when unused, bad shapes rejected.
#include <doctest/doctest.h>

#include <random>
#include <string>

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
    const std::size_t offsets[] = {w.q8, w.q_scale, w.k8, w.k_scale, w.k_mean, w.k_mean_partial, w.v_amax_partial,
                                   w.v_quant, w.v_scale, w.lse_delta, w.total_bytes};
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
