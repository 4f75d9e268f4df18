// The public API end to end on a GPU: attention() with the runtime's workspace and with a caller's,
// HND/NHD, strided tensors, causal, GQA, LSE, against the fp64 reference; the steady state allocates
// nothing; threads; errors that need the device (ordinal, workspace size). Skips without a GPU.
#include <doctest/doctest.h>

#include <cmath>
#include <thread>
#include <vector>

#include "gpu_attention_support.hpp"
#include "random_support.hpp"
#include "dev/numerics/metrics.hpp"
#include "dev/numerics/reference.hpp"
#include "sagejit/sagejit.hpp"

using namespace sagejit;
using namespace sagejit::test;
using numerics::Dims;
using numerics::HostTensor;

namespace {

struct ApiCase {
  DType dtype = DType::bf16;
  Layout layout = Layout::HND;
  std::int64_t batch = 1, heads_q = 2, heads_kv = 2, seq_q = 200, seq_kv = 300, head_dim = 128;
  bool causal = false, lse = false;
  numerics::StridePadding padding{};
};

// One call's host tensors and device copies.
struct Problem {
  Problem(const Gpu& gpu, const ApiCase& c, std::mt19937_64& rng)
      : q({c.batch, c.heads_q, c.seq_q, c.head_dim}, c.dtype, c.layout, c.padding),
        k({c.batch, c.heads_kv, c.seq_kv, c.head_dim}, c.dtype, c.layout, c.padding),
        v({c.batch, c.heads_kv, c.seq_kv, c.head_dim}, c.dtype, c.layout, c.padding),
        out({c.batch, c.heads_q, c.seq_q, c.head_dim}, c.dtype, c.layout, c.padding),
        dq(device_buffer(gpu, bytes(q))), dk(device_buffer(gpu, bytes(k))), dv(device_buffer(gpu, bytes(v))),
        dout(device_buffer(gpu, bytes(out))),
        dlse(device_buffer(gpu, static_cast<std::size_t>(c.batch * c.heads_q * c.seq_q) * 4)),
        lse_host(static_cast<std::size_t>(c.batch * c.heads_q * c.seq_q), std::nanf("")) {
    fill_and_upload_inputs(q, k, v, dq, dk, dv, rng);
    dout.upload(out.storage().data(), bytes(out));  // poisoned
    dlse.upload(lse_host.data(), lse_host.size() * 4);
  }
  static std::size_t bytes(const HostTensor& t) { return t.storage().size() * 2; }
  TensorView view(const HostTensor& host, const DeviceBuffer& device) const {
    TensorView view = host.view();
    view.data = device.get();
    view.device = 0;
    return view;
  }
  TensorView qv() const { return view(q, dq); }
  TensorView kv() const { return view(k, dk); }
  TensorView vv() const { return view(v, dv); }
  TensorView ov() const { return view(out, dout); }
  AttentionOptions options(const ApiCase& c) const {
    AttentionOptions options;
    options.layout = c.layout;
    options.causal = c.causal;
    options.lse = c.lse ? static_cast<float*>(dlse.get()) : nullptr;
    return options;
  }
  // attention() on these tensors, with the runtime's workspace or a caller's.
  void attend(const ApiCase& c) const { attention(qv(), kv(), vv(), ov(), options(c), nullptr); }
  void attend(const ApiCase& c, Workspace workspace) const {
    attention(qv(), kv(), vv(), ov(), options(c), nullptr, workspace);
  }
  // Waits for the device, then check(c).
  void synchronize_and_check(const Gpu& gpu, const ApiCase& c) {
    gpu.device->synchronize(0, nullptr);
    check(c);
  }
  // Downloads the output and checks it against the fp64 reference; padding must stay poisoned.
  void check(const ApiCase& c) {
    dout.download(out.storage().data(), bytes(out));
    const numerics::ReferenceResult ref = numerics::reference_attention(q.view(), k.view(), v.view(), c.layout, c.causal);
    const numerics::AccuracyMetrics metrics = numerics::measure_accuracy(out.host_view(), ref.out);
    MESSAGE(metrics.summary());
    CHECK(metrics.non_finite == 0);
    CHECK(metrics.cosine >= 0.9992);
    std::size_t padding_written = 0;
    for (std::size_t i = 0; i < out.storage().size(); ++i)
      if (out.is_padding(i) && out.storage()[i] != HostTensor::poison_bits(c.dtype)) ++padding_written;
    CHECK(padding_written == 0);
    if (c.lse) {
      dlse.download(lse_host.data(), lse_host.size() * 4);
      double worst = 0.0;
      for (std::size_t i = 0; i < lse_host.size(); ++i) worst = std::max(worst, std::abs(lse_host[i] - ref.lse[i]));
      MESSAGE("lse max abs error " << worst);
      CHECK(worst < 0.05);  // also fails on NaN (unwritten)
    }
  }
  HostTensor q, k, v, out;
  DeviceBuffer dq, dk, dv, dout, dlse;
  std::vector<float> lse_host;
};

// Each test case's generator, from the run's logged (replayable) seed.
std::mt19937_64 seeded_rng() { return std::mt19937_64(test::logged_rng()()); }

}  // namespace

TEST_CASE("attention() matches the fp64 reference through the public API") {
  const std::optional<Gpu> gpu = gpu_or_skip();
  if (!gpu) return;
  std::mt19937_64 rng = seeded_rng();
  const std::vector<ApiCase> cases{
      {},
      {.dtype = DType::fp16, .layout = Layout::NHD, .seq_q = 333, .seq_kv = 129, .head_dim = 64},
      {.layout = Layout::NHD, .batch = 2, .heads_q = 6, .heads_kv = 2, .seq_q = 257, .seq_kv = 257, .causal = true,
       .lse = true},
      {.dtype = DType::fp16, .heads_q = 4, .heads_kv = 1, .seq_q = 100, .seq_kv = 700, .head_dim = 64, .causal = true,
       .padding = {.batch = 64, .head = 8, .token = 128}},
      {.layout = Layout::NHD, .seq_q = 1, .seq_kv = 1, .lse = true, .padding = {.token = 64}},
  };
  for (const ApiCase& c : cases) {
    CAPTURE(to_string(c.layout));
    CAPTURE(c.seq_q);
    Problem problem(*gpu, c, rng);
    const Support support = supports(problem.qv(), problem.kv(), problem.vv(), problem.ov(), problem.options(c));
    CHECK_MESSAGE(support.ok, support.reason);
    problem.attend(c);
    problem.synchronize_and_check(*gpu, c);
  }
}

TEST_CASE("a caller's workspace: exact size works, a smaller one names the size needed") {
  const std::optional<Gpu> gpu = gpu_or_skip();
  if (!gpu) return;
  std::mt19937_64 rng = seeded_rng();
  const ApiCase c{.layout = Layout::NHD, .heads_q = 4, .heads_kv = 2, .seq_q = 190, .seq_kv = 310, .lse = true};
  Problem problem(*gpu, c, rng);
  const std::size_t needed = workspace_size(problem.qv(), problem.kv(), problem.vv(), problem.options(c));
  MESSAGE("workspace " << needed << " bytes");
  CHECK(needed > 0);
  DeviceBuffer workspace = device_buffer(*gpu, needed);
  try {
    problem.attend(c, Workspace{workspace.get(), needed - 1});
    FAIL("a too small workspace was accepted");
  } catch (const Error& error) {
    CHECK(error.code() == ErrorCode::invalid_argument);
    CHECK_MESSAGE(std::string(error.what()).find(std::to_string(needed)) != std::string::npos, error.what());
  }
  problem.attend(c, Workspace{workspace.get(), needed});
  problem.synchronize_and_check(*gpu, c);
}

TEST_CASE("the steady state allocates nothing; threads share the runtime safely") {
  const std::optional<Gpu> gpu = gpu_or_skip();
  if (!gpu) return;
  std::mt19937_64 rng = seeded_rng();
  const ApiCase c{.heads_q = 4, .heads_kv = 4, .seq_q = 512, .seq_kv = 512};
  Problem problem(*gpu, c, rng);
  problem.attend(c);
  const std::size_t held = workspace_bytes_held();
  CHECK(held > 0);
  for (int call = 0; call < 5; ++call)
    problem.attend(c);
  CHECK(workspace_bytes_held() == held);
  problem.synchronize_and_check(*gpu, c);

  // Four threads with their own tensors and shapes (the default stream; the Device interface has no
  // stream creation, the Python tests cover other streams).
  std::vector<ApiCase> cases;
  std::vector<std::unique_ptr<Problem>> problems;
  for (int t = 0; t < 4; ++t) {
    cases.push_back({.dtype = t % 2 ? DType::fp16 : DType::bf16, .layout = t % 2 ? Layout::NHD : Layout::HND,
                     .seq_q = 64 + 97 * t, .seq_kv = 300 - 50 * t, .head_dim = t < 2 ? 128 : 64, .causal = t == 3});
    problems.push_back(std::make_unique<Problem>(*gpu, cases.back(), rng));
  }
  std::vector<std::string> errors(4);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      try {
        for (int call = 0; call < 3; ++call)
          problems[t]->attend(cases[t]);
      } catch (const std::exception& error) {
        errors[t] = error.what();
      }
    });
  for (std::thread& thread : threads) thread.join();
  gpu->device->synchronize(0, nullptr);
  for (int t = 0; t < 4; ++t) {
    CHECK_MESSAGE(errors[t].empty(), errors[t]);
    problems[t]->check(cases[t]);
  }
  release_workspaces();
  CHECK(workspace_bytes_held() == 0);
}

TEST_CASE("errors that need the device: an ordinal out of range") {
  const std::optional<Gpu> gpu = gpu_or_skip();
  if (!gpu) return;
  std::mt19937_64 rng = seeded_rng();
  const ApiCase c{};
  Problem problem(*gpu, c, rng);
  AttentionOptions options = problem.options(c);
  options.device = 99;
  TensorView q = problem.qv(), k = problem.kv(), v = problem.vv(), out = problem.ov();
  q.device = k.device = v.device = out.device = 99;
  try {
    attention(q, k, v, out, options, nullptr);
    FAIL("device 99 was accepted");
  } catch (const Error& error) {
    CHECK(error.code() == ErrorCode::invalid_argument);
    CHECK_MESSAGE(std::string(error.what()).find("device 99 is out of range") != std::string::npos, error.what());
  }
  CHECK_FALSE(supports(q, k, v, out, options).ok);
}
