#include "support/attention_trial.hpp"

#include "dev/attention_harness.hpp"
#include "jit/jit.hpp"
#include "plan/attention_runner.hpp"

#include <cmath>
#include <cstring>

#include "core/error.hpp"
#include "dev/numerics/random_fill.hpp"

namespace sagejit::tools {

namespace {

numerics::Dims dims_of(const AttentionShape& shape, int heads, int tokens) {
  return numerics::Dims{shape.batch, heads, tokens, shape.head_dim};
}

TensorView device_view(const numerics::HostTensor& host, const DeviceBuffer& buffer, int ordinal) {
  TensorView view = host.view();
  view.data = buffer.get();
  view.device = ordinal;
  return view;
}

}  // namespace

AttentionTrial::AttentionTrial(const CallDevice& device, const AttentionShape& shape, const TrialSettings& settings)
    : device_(device), shape_(shape), settings_(settings) {
  std::mt19937_64 rng(settings.seed);
  const int ordinal = device_.info.ordinal;
  for (int set = 0; set < std::max(1, settings.input_sets); ++set) {
    numerics::HostTensor q(dims_of(shape, shape.heads_q, shape.seq_q), shape.dtype, settings.layout);
    numerics::HostTensor k(dims_of(shape, shape.heads_kv(), shape.seq_kv), shape.dtype, settings.layout);
    numerics::HostTensor v(dims_of(shape, shape.heads_kv(), shape.seq_kv), shape.dtype, settings.layout);
    numerics::fill_normal(q, rng);
    if (settings.inputs == InputKind::channel_offsets)
      numerics::fill_channel_offsets(k, rng, 5.0);
    else
      numerics::fill_normal(k, rng);
    numerics::fill_normal(v, rng);
    for (const int token : settings.nan_query_tokens) {
      if (token < 0 || token >= shape.seq_q)
        fail(ErrorCode::invalid_argument, "nan_query_tokens: token {} is outside [0, {})", token, shape.seq_q);
      for (int b = 0; b < shape.batch; ++b)
        for (int h = 0; h < shape.heads_q; ++h) q.set(b, h, token, 0, std::nanf(""));
    }
    for (auto [host, buffers] : {std::pair{&q, &q_}, std::pair{&k, &k_}, std::pair{&v, &v_}}) {
      buffers->emplace_back(*device.backend, ordinal, host->storage().size() * sizeof(std::uint16_t));
      buffers->back().upload(host->storage());
    }
    if (set == 0) {
      host_q_ = std::make_unique<numerics::HostTensor>(std::move(q));
      host_k_ = std::make_unique<numerics::HostTensor>(std::move(k));
      host_v_ = std::make_unique<numerics::HostTensor>(std::move(v));
    }
  }
  out_template_ = std::make_unique<numerics::HostTensor>(dims_of(shape, shape.heads_q, shape.seq_q), shape.dtype,
                                                         settings.layout);
  out_ = std::make_unique<DeviceBuffer>(*device.backend, ordinal, out_template_->storage().size() * sizeof(std::uint16_t));
  const std::size_t lse_count = static_cast<std::size_t>(shape.batch) * shape.heads_q * shape.seq_q;
  if (settings.lse) lse_ = std::make_unique<DeviceBuffer>(*device.backend, ordinal, lse_count * sizeof(float));
  poison_output();
}

AttentionCall AttentionTrial::call(int set, const TileConfig& attention, const TileConfig& prepare) const {
  const std::size_t index = static_cast<std::size_t>(set) % q_.size();
  AttentionCall call = attention_call_for(
      *host_q_, *host_k_, *host_v_, *out_template_,
      {q_[index].get(), k_[index].get(), v_[index].get(), out_->get(),
       settings_.lse ? static_cast<float*>(lse_->get()) : nullptr},
      shape_.causal, settings_.smooth_k);
  call.attention_config = attention;
  call.prepare_config = prepare;
  return call;
}

AttentionPlan AttentionTrial::choice(const std::optional<TileConfig>& attention) const {
  return plan_attention(call(0, attention.value_or(TileConfig{}), TileConfig{}),
                        device_target(*device_.backend, device_.info.ordinal));
}

void AttentionTrial::ensure_workspace(std::size_t bytes) {
  if (workspace_ && workspace_->bytes() >= bytes) return;
  workspace_.reset();
  workspace_ = std::make_unique<DeviceBuffer>(*device_.backend, device_.info.ordinal, std::max<std::size_t>(bytes, 256));
}

void AttentionTrial::enqueue(const AttentionPlan& plan, int set, Stream stream) {
  ensure_workspace(plan.workspace.total_bytes);
  run_attention(*device_.backend, device_.info.ordinal, plan, call(set, plan.attention_config, plan.prepare_config),
                workspace_->get(), stream);
}

void AttentionTrial::poison_output() {
  const int ordinal = device_.info.ordinal;
  device_.backend->memset(ordinal, out_->get(), 0xff, out_->bytes(), nullptr);  // 0xffff: NaN in bf16 and fp16
  if (lse_) device_.backend->memset(ordinal, lse_->get(), 0xff, lse_->bytes(), nullptr);
  device_.backend->synchronize(ordinal, nullptr);
}

numerics::HostTensor AttentionTrial::download_output() const {
  device_.backend->synchronize(device_.info.ordinal, nullptr);
  numerics::HostTensor out(out_template_->dims(), shape_.dtype, settings_.layout);
  out_->download(out.storage().data(), out.storage().size() * sizeof(std::uint16_t));
  return out;
}

std::vector<float> AttentionTrial::download_lse() const {
  if (!lse_) return {};
  device_.backend->synchronize(device_.info.ordinal, nullptr);
  return lse_->download_as<float>(lse_->bytes() / sizeof(float));
}

numerics::PreparedTensors AttentionTrial::download_prepared(const AttentionPlan& plan) const {
  if (!workspace_) fail(ErrorCode::internal, "download_prepared before any call");
  device_.backend->synchronize(device_.info.ordinal, nullptr);
  std::vector<std::byte> bytes(plan.workspace.total_bytes);
  workspace_->download(bytes.data(), bytes.size());
  return prepared_from_workspace(bytes, plan, call(0, plan.attention_config, plan.prepare_config));
}

numerics::EmulatorOptions AttentionTrial::emulator_options(const AttentionPlan& plan) const {
  return emulator_options_for(plan, call(0, plan.attention_config, plan.prepare_config));
}

}  // namespace sagejit::tools
