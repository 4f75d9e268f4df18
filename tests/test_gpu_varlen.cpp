// Packed varlen calls (docs/NUMERICS.md "Varlen") on a GPU through the public API: every sequence's
// rows within noise of the CPU emulation of the same GPU's kernels and of the fp64 attention of that
// sequence alone, the LSE in [Hq, total_q], rows after the last sequence untouched; random lengths
// (empty sequences, one token, past one key tile), GQA, causal, head dims 40/64/128/256 (logged seed);
// a malformed cu_seqlens (past the tensors, decreasing) is clamped: the other sequences stay right and
// nothing outside the tensors is touched (compute-sanitizer memcheck: -tc="*sanitizer*"). Skips
// without a GPU.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "dev/numerics/metrics.hpp"
#include "gpu_attention_support.hpp"
#include "sagejit/sagejit.hpp"
#include "varlen_support.hpp"

using namespace sagejit;
using namespace sagejit::test;

namespace {

// The case on the GPU, then the CPU emulation of that GPU's kernels on the same inputs; both outputs
// against each other (all sequences at once) and each sequence against fp64. malformed_last: the
// device's cu_seqlens end past the packed q (by 1000 rows) and below the last key start (decreasing):
// the last sequence is clamped (its result is not checked), every other one must be right.
void check_varlen_on_gpu(const Gpu& gpu, const VarlenCase& c, std::uint64_t seed, bool malformed_last = false) {
  std::mt19937_64 rng(seed);
  VarlenTensors t(c, rng);
  CAPTURE(seed);
  CAPTURE(c.head_dim);
  CAPTURE(c.causal);
  CAPTURE(c.lse);
  const auto bytes = [](const numerics::HostTensor& host) { return host.storage().size() * 2; };
  DeviceBuffer dq = device_buffer(gpu, bytes(t.q)), dk = device_buffer(gpu, bytes(t.k)),
               dv = device_buffer(gpu, bytes(t.v)), dout = device_buffer(gpu, bytes(t.out));
  DeviceBuffer dcu_q = device_buffer(gpu, t.cu_q.size() * 4), dcu_k = device_buffer(gpu, t.cu_k.size() * 4);
  std::vector<float> lse(static_cast<std::size_t>(c.heads_q * t.total_q), std::nanf(""));
  DeviceBuffer dlse = device_buffer(gpu, lse.size() * 4);
  dq.upload(t.q.storage());
  dk.upload(t.k.storage());
  dv.upload(t.v.storage());
  dout.upload(t.out.storage());  // poisoned
  std::vector<std::int32_t> cu_q = t.cu_q, cu_k = t.cu_k;
  if (malformed_last) {
    cu_q.back() = static_cast<std::int32_t>(t.total_q + 1000);
    cu_k.back() = 0;
  }
  dcu_q.upload(cu_q);
  dcu_k.upload(cu_k);
  dlse.upload(lse);
  const auto on_device = [&](const numerics::HostTensor& host, const DeviceBuffer& device) {
    TensorView view = host.view();
    view.data = device.get();
    view.device = gpu.ordinal;
    return view;
  };
  AttentionOptions options;
  options.layout = Layout::NHD;
  options.causal = c.causal;
  options.lse = c.lse ? static_cast<float*>(dlse.get()) : nullptr;
  options.varlen = t.varlen(static_cast<const std::int32_t*>(dcu_q.get()), static_cast<const std::int32_t*>(dcu_k.get()));
  attention(on_device(t.q, dq), on_device(t.k, dk), on_device(t.v, dv), on_device(t.out, dout), options, nullptr);
  gpu.device->synchronize(gpu.ordinal, nullptr);
  dout.download(t.out.storage().data(), bytes(t.out));
  dlse.download(lse.data(), lse.size() * 4);
  const std::int64_t checked = malformed_last ? t.batch() - 1 : t.batch();
  check_varlen_against_fp64(c, t, lse, 0.999, gpu.target.c_str(), checked);

  // The CPU emulation of this GPU's kernels on the same inputs (host cu_seqlens).
  numerics::HostTensor emulated({1, c.heads_q, t.total_q, c.head_dim}, c.dtype, Layout::NHD);
  std::vector<float> emulated_lse(lse.size(), std::nanf(""));
  AttentionOptions host_options = options;
  host_options.lse = c.lse ? emulated_lse.data() : nullptr;
  host_options.varlen = t.varlen(t.cu_q.data(), t.cu_k.data());
  emulate_attention(t.q.view(), t.k.view(), t.v.view(), emulated.view(), host_options, gpu.target);
  std::vector<double> got, want;
  for (std::int64_t n = 0; n < t.cu_q[static_cast<std::size_t>(checked)]; ++n)
    for (std::int64_t h = 0; h < c.heads_q; ++h)
      for (std::int64_t d = 0; d < c.head_dim; ++d) {
        got.push_back(t.out.get(0, h, n, d));
        want.push_back(emulated.get(0, h, n, d));
      }
  if (got.empty()) return;
  const numerics::AccuracyMetrics vs_emulator = numerics::measure_accuracy(std::span<const double>(got), want);
  MESSAGE("varlen " << t.batch() << " sequences, vs emulator: " << vs_emulator.summary());
  CHECK(vs_emulator.non_finite == 0);
  CHECK(vs_emulator.cosine >= 0.99995);
  CHECK(vs_emulator.relative_l1 <= 4e-3);
  if (c.lse) {
    double worst = 0.0;
    for (std::int64_t b = 0; b < checked; ++b)
      for (std::int64_t h = 0; h < c.heads_q; ++h)
        for (std::int64_t n = t.cu_q[b]; n < t.cu_q[b + 1]; ++n) {
          if (c.lengths_k[b] == 0) continue;
          const std::size_t i = static_cast<std::size_t>(h * t.total_q + n);
          worst = std::isfinite(lse[i]) ? std::max(worst, static_cast<double>(std::abs(lse[i] - emulated_lse[i]))) : 1e30;
        }
    CHECK_MESSAGE(worst <= 2e-3, "LSE vs emulator " << worst);
  }
}

}  // namespace

TEST_CASE("GPU varlen: random packed sequences match the emulator and fp64 per sequence") {
  const auto gpu = gpu_or_skip();
  if (!gpu) return;
  for (int trial = 0; trial < 8; ++trial) {
    const VarlenCase c = random_varlen_case(random_in(1, 6), trial < 4 ? 300 : 1500);
    check_varlen_on_gpu(*gpu, c, static_cast<std::uint64_t>(random_in(0, 1 << 30)));
  }
}

// Small enough for compute-sanitizer (memcheck, racecheck): run with -tc="*sanitizer*".
TEST_CASE("GPU varlen: small calls and a malformed cu_seqlens (sanitizer-sized)") {
  const auto gpu = gpu_or_skip();
  if (!gpu) return;
  VarlenCase c;
  c.lengths_q = {77, 1, 0, 130};
  c.lengths_k = {50, 200, 3, 1};
  c.trailing_rows = 9;
  c.causal = true;
  c.lse = true;
  check_varlen_on_gpu(*gpu, c, 2700);
  c.head_dim = 256;
  c.causal = false;
  check_varlen_on_gpu(*gpu, c, 2701);
  c.head_dim = 64;
  check_varlen_on_gpu(*gpu, c, 2702, /*malformed_last=*/true);
}
