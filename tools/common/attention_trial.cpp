#include "common/attention_trial.hpp"

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

template <typename T>
std::vector<T> slice(const std::vector<std::byte>& bytes, std::size_t offset, std::size_t count) {
  if (offset + count * sizeof(T) > bytes.size())
    fail(ErrorCode::internal, "workspace section at {} with {} elements runs past the workspace ({} bytes)", offset,
         count, bytes.size());
  std::vector<T> out(count);
  std::memcpy(out.data(), bytes.data() + offset, count * sizeof(T));
  return out;
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
  const auto strides = [](const numerics::HostTensor& tensor) {
    const auto& s = tensor.host_view().strides;  // logical (b, h, n, d) order whatever the layout
    return RowStrides{s[0], s[1], s[2]};
  };
  AttentionCall call;
  call.batch = shape_.batch;
  call.heads_q = shape_.heads_q;
  call.heads_kv = shape_.heads_kv();
  call.seq_q = shape_.seq_q;
  call.seq_kv = shape_.seq_kv;
  call.head_dim = shape_.head_dim;
  call.dtype = shape_.dtype;
  call.q = q_[index].get();
  call.k = k_[index].get();
  call.v = v_[index].get();
  call.out = out_->get();
  call.q_strides = strides(*host_q_);
  call.k_strides = strides(*host_k_);
  call.v_strides = strides(*host_v_);
  call.out_strides = strides(*out_template_);
  call.causal = shape_.causal;
  call.sm_scale = numerics::default_sm_scale(shape_.head_dim);  // the emulator's default, bit for bit
  call.smooth_k = settings_.smooth_k;
  call.lse = settings_.lse ? static_cast<float*>(lse_->get()) : nullptr;
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
  const WorkspaceLayout& layout = plan.workspace;
  std::vector<std::byte> bytes(layout.total_bytes);
  workspace_->download(bytes.data(), bytes.size());

  numerics::PreparedTensors prepared;
  prepared.batch = shape_.batch;
  prepared.heads_q = shape_.heads_q;
  prepared.heads_kv = shape_.heads_kv();
  prepared.seq_q = shape_.seq_q;
  prepared.seq_kv = shape_.seq_kv;
  prepared.seq_q_pad = layout.seq_q_pad;
  prepared.seq_kv_pad = layout.seq_kv_pad;
  prepared.head_dim = shape_.head_dim;
  prepared.dtype = shape_.dtype;
  prepared.smooth_k = settings_.smooth_k;
  prepared.pv_fp16 = plan.spec.v.pv_fp16;
  const std::size_t bq = static_cast<std::size_t>(shape_.batch) * shape_.heads_q;
  const std::size_t bk = static_cast<std::size_t>(shape_.batch) * shape_.heads_kv();
  const std::size_t d = shape_.head_dim;
  const std::size_t nq = layout.seq_q_pad, nk = layout.seq_kv_pad;
  prepared.q8 = slice<std::int8_t>(bytes, layout.q8, bq * nq * d);
  prepared.q_scale = slice<float>(bytes, layout.q_scale, bq * (nq / 32));
  prepared.k8 = slice<std::int8_t>(bytes, layout.k8, bk * nk * d);
  prepared.k_scale = slice<float>(bytes, layout.k_scale, bk * (nk / 32));
  prepared.k_mean = slice<float>(bytes, layout.k_mean, bk * d);
  if (plan.spec.v.pv_fp16)
    prepared.v16 = slice<std::uint16_t>(bytes, layout.v_quant, bk * d * nk);
  else
    prepared.v8 = slice<std::uint8_t>(bytes, layout.v_quant, bk * d * nk);
  prepared.v_scale = slice<float>(bytes, layout.v_scale, bk * d);
  return prepared;
}

numerics::EmulatorOptions AttentionTrial::emulator_options(const AttentionPlan& plan) const {
  numerics::EmulatorOptions options;
  options.causal = shape_.causal;
  options.smooth_k = settings_.smooth_k;
  options.return_lse = settings_.lse;
  const auto block_n = plan.attention_config.find("block_n");
  if (block_n != plan.attention_config.end()) options.block_n = block_n->second;
  options.pv_fp16 = plan.spec.v.pv_fp16;
  return options;
}

}  // namespace sagejit::tools
