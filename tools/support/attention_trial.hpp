#pragma once
// One attention problem on the GPU for the selftest and the autotuner: seeded host inputs (the
// oracles' copies), device copies (several input sets, to rotate through when timing so the caches
// do not flatter a config), output/LSE/workspace buffers, and the run itself through the runtime's
// own runner (plan/attention_runner.hpp: prepare + attention through the JIT), with the tables'
// configs or an explicit attention tile config.
#include <memory>
#include <optional>
#include <random>
#include <vector>

#include "api/device_support.hpp"
#include "plan/attention_plan.hpp"
#include "dev/device_buffer.hpp"
#include "support/shape.hpp"
#include "numerics/emulator.hpp"
#include "numerics/host_tensor.hpp"

namespace sagejit::tools {

// How the inputs are drawn (docs/NUMERICS.md, "Oracles").
enum class InputKind {
  normal,           // q, k, v ~ N(0, 1)
  channel_offsets,  // k gets large per-channel offsets (what K smoothing removes)
};

struct TrialSettings {
  Layout layout = Layout::HND;
  bool lse = false;
  bool smooth_k = true;
  InputKind inputs = InputKind::normal;
  int input_sets = 1;  // distinct device input sets to rotate through
  std::uint64_t seed = 1;
  std::vector<int> nan_query_tokens;  // query tokens whose channel 0 is NaN in every batch and head
};

class AttentionTrial {
 public:
  AttentionTrial(const CallDevice& device, const AttentionShape& shape, const TrialSettings& settings);

  const AttentionShape& shape() const { return shape_; }
  const TrialSettings& settings() const { return settings_; }
  // Host copies of input set 0 (the oracles' inputs).
  const numerics::HostTensor& q() const { return *host_q_; }
  const numerics::HostTensor& k() const { return *host_k_; }
  const numerics::HostTensor& v() const { return *host_v_; }

  // The plan of a call: the tables' configs, or `attention` as the attention kernel's tile config
  // (which decides the V format and the workspace).
  AttentionPlan choice(const std::optional<TileConfig>& attention = std::nullopt) const;
  // Enqueues one call of input set `set` (modulo the number of sets) on `stream` (nullptr: default).
  void enqueue(const AttentionPlan& plan, int set, Stream stream);
  // Poisons the output (and LSE) so that unwritten elements show up as NaN.
  void poison_output();

  numerics::HostTensor download_output() const;
  std::vector<float> download_lse() const;
  // The prepare stage's workspace of the last call, in the emulator's form (for bit-exact checks).
  numerics::PreparedTensors download_prepared(const AttentionPlan& plan) const;

  // Emulator options matching a choice (block_n and PV family of its attention config).
  numerics::EmulatorOptions emulator_options(const AttentionPlan& plan) const;
  Device& device() const { return *device_.backend; }
  int ordinal() const { return device_.info.ordinal; }

 private:
  AttentionCall call(int set, const TileConfig& attention, const TileConfig& prepare) const;
  void ensure_workspace(std::size_t bytes);

  CallDevice device_;
  AttentionShape shape_;
  TrialSettings settings_;
  std::unique_ptr<numerics::HostTensor> host_q_, host_k_, host_v_;
  std::vector<DeviceBuffer> q_, k_, v_;
  std::unique_ptr<DeviceBuffer> out_, lse_, workspace_;
  std::unique_ptr<numerics::HostTensor> out_template_;  // dims, layout and strides of the output
};

}  // namespace sagejit::tools
