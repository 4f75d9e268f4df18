// Times sagejit end to end (prepare + attention, after the first-call compile) on the anchor shapes
// of docs/ANCHORS.md and their causal and D=64 variants, and prints one JSON document: per shape
// and PV family the median time from device events over rotating input sets, TOPS
// (4*B*H*Nq*Nk*D / t, half for causal) and the accuracy of sampled output rows against fp64.
// bench/sdpa_compare.py times PyTorch SDPA (flash, cuDNN) on the same shapes and merges the two.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <iostream>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "common/prelude.h"
#include "device/device.hpp"
#include "dev/attention_harness.hpp"
#include "plan/attention_runner.hpp"
#include "jit/jit.hpp"

using namespace sagejit;

namespace {

struct Shape {
  std::string name;
  int batch, heads, seq, head_dim;
  bool causal;
};

std::vector<Shape> default_shapes() {
  std::vector<Shape> shapes;
  const Shape base[] = {{"flux-4608", 1, 24, 4608, 128, false},
                        {"video-16k", 1, 28, 16384, 128, false},
                        {"wan-32k", 1, 40, 32760, 128, false}};
  for (const Shape& s : base) {
    shapes.push_back({s.name + "-d128", s.batch, s.heads, s.seq, 128, false});
    shapes.push_back({s.name + "-d128-causal", s.batch, s.heads, s.seq, 128, true});
    shapes.push_back({s.name + "-d64", s.batch, s.heads, s.seq, 64, false});
  }
  shapes.push_back({"vae-8k-d64", 1, 16, 8192, 64, false});
  shapes.push_back({"llm-4k-d128-causal", 4, 32, 4096, 128, true});
  shapes.push_back({"small-1k-d128", 2, 24, 1024, 128, false});  // prepare and launches dominate
  return shapes;
}

double tops(const Shape& s, double ms) {
  const double flops = 4.0 * s.batch * s.heads * double(s.seq) * double(s.seq) * s.head_dim * (s.causal ? 0.5 : 1.0);
  return flops / (ms * 1e-3) / 1e12;
}

std::uint16_t to_bf16(float x) { return sj_f32_to_bf16(x); }
float from_bf16(std::uint16_t x) { return sj_bf16_to_f32(x); }

// One input set: q, k, v dense HND bf16, kept on the host too for the reference rows.
struct InputSet {
  numerics::HostTensor q, k, v;
  void* dq = nullptr;
  void* dk = nullptr;
  void* dv = nullptr;
};

// fp64 attention for one (b=0, head, query row): the oracle for sampled rows.
std::vector<double> reference_row(const InputSet& in, const Shape& s, int head, int row, float sm_scale) {
  const std::size_t d = s.head_dim, n = s.seq;
  const std::size_t base = std::size_t(head) * n * d;
  const int keys = s.causal ? row + 1 : s.seq;
  std::vector<double> scores(keys);
  double max_score = -INFINITY;
  for (int j = 0; j < keys; ++j) {
    double dot = 0;
    for (std::size_t c = 0; c < d; ++c)
      dot += double(from_bf16(in.q.storage()[base + row * d + c])) * double(from_bf16(in.k.storage()[base + j * d + c]));
    scores[j] = dot * double(sm_scale);
    max_score = std::max(max_score, scores[j]);
  }
  std::vector<double> out(d, 0.0);
  double sum = 0;
  for (int j = 0; j < keys; ++j) {
    const double w = std::exp(scores[j] - max_score);
    sum += w;
    for (std::size_t c = 0; c < d; ++c) out[c] += w * double(from_bf16(in.v.storage()[base + j * d + c]));
  }
  for (auto& x : out) x /= sum;
  return out;
}

// Config families reported side by side: mma.sync fp8 PV, mma.sync fp16 PV, wgmma (fp8 PV).
constexpr int kFamilies = 3;
constexpr const char* kFamilyNames[kFamilies] = {"sagejit_fp8pv", "sagejit_fp16pv", "sagejit_wgmma_fp8pv"};
// The family of what a plan runs: its attention kernel and the V format that kernel reads.
int family_of(const AttentionPlan& plan) {
  if (plan.attention->name == "attention_sm90") return 2;
  return plan.spec.v.pv_fp16 ? 1 : 0;
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const std::size_t m = values.size() / 2;
  return values.size() % 2 ? values[m] : 0.5 * (values[m - 1] + values[m]);
}

// "warps=4,rows_per_warp=16,block_n=64,stages=2,pv_fp16=1", or "table": no config of its own, so the plan
// takes the tuning table's choice for each shape (what the library's users get).
TileConfig parse_config(const std::string& text) {
  TileConfig config;
  if (text == "table") return config;
  std::size_t start = 0;
  while (start < text.size()) {
    const std::size_t end = std::min(text.find(',', start), text.size());
    const std::string item = text.substr(start, end - start);
    const std::size_t eq = item.find('=');
    if (eq == std::string::npos) throw std::runtime_error("config item without '=': " + item);
    config[item.substr(0, eq)] = std::stoi(item.substr(eq + 1));
    start = end + 1;
  }
  return config;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"sagejit attention benchmark (prepare + attention, device-event medians)"};
  std::vector<std::string> only;
  std::vector<std::string> config_texts{"table"};
  int iterations = 10, warmup = 2, sample_rows = 16;
  bool tune = false;
  std::vector<std::string> tune_configs;
  std::string tune_shape = "video-16k-d128";
  app.add_option("--shape", only, "only these shape names (default: all)");
  app.add_option("--config", config_texts, "attention configs to time (default 'table': the tuning table's per shape)");
  app.add_option("--iterations", iterations, "timed runs per shape and config");
  app.add_option("--warmup", warmup, "untimed runs after the first (compiling) call");
  app.add_option("--sample-rows", sample_rows, "query rows per sampled head checked against fp64");
  app.add_flag("--tune", tune, "first time --tune-config candidates on --tune-shape; keep the best of each PV family");
  app.add_option("--tune-config", tune_configs, "candidate configs for --tune");
  app.add_option("--tune-shape", tune_shape, "shape for --tune");
  CLI11_PARSE(app, argc, argv);

  Device& device = cuda_device();
  const int ordinal = 0;
  const DeviceInfo info = device.info(ordinal);
  nlohmann::json doc;
  doc["device"] = info.name;
  doc["target"] = info.target;
  doc["iterations"] = iterations;
  doc["results"] = nlohmann::json::array();

  std::vector<Shape> shapes;
  for (const Shape& s : default_shapes())
    if (only.empty() || std::find(only.begin(), only.end(), s.name) != only.end()) shapes.push_back(s);
  std::vector<TileConfig> configs;
  for (const auto& text : config_texts) configs.push_back(parse_config(text));

  std::mt19937_64 rng(1234);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<std::uint16_t> pool((std::size_t(1) << 24) + 4099);  // odd size: offsets drift across rows
  for (auto& x : pool) x = to_bf16(normal(rng));
  void* start = device.create_event(ordinal);
  void* stop = device.create_event(ordinal);

  // Times one (shape, config); returns median ms and fills accuracy when asked.
  auto run_shape = [&](const Shape& s, const TileConfig& config, bool measure_accuracy, nlohmann::json& record) {
    const std::size_t elements = std::size_t(s.batch) * s.heads * s.seq * s.head_dim;
    // Rotate input sets so that consecutive runs do not find their inputs in the 60 MB L2.
    const int sets = elements * 2 * 3 >= (std::size_t(256) << 20) ? 2 : 4;
    const numerics::Dims dims{s.batch, s.heads, s.seq, s.head_dim};
    const numerics::HostTensor dense(dims, DType::bf16, Layout::HND);  // dims and strides of q, k, v, out
    std::vector<InputSet> inputs;
    for (int set = 0; set < sets; ++set) inputs.push_back({dense, dense, dense});
    for (auto& in : inputs) {
      // Copies of a pool of normal values from random offsets: fresh-looking data without sampling
      // billions of normals on the host.
      for (auto* tensor : {&in.q, &in.k, &in.v}) {
        auto* host = &tensor->storage();
        std::size_t offset = std::uniform_int_distribution<std::size_t>(0, pool.size() - 1)(rng);
        for (std::size_t done = 0; done < elements;) {
          const std::size_t n = std::min(elements - done, pool.size() - offset);
          std::copy_n(pool.begin() + std::ptrdiff_t(offset), n, host->begin() + std::ptrdiff_t(done));
          done += n;
          offset = 0;
        }
      }
      in.dq = device.allocate(ordinal, elements * 2);
      in.dk = device.allocate(ordinal, elements * 2);
      in.dv = device.allocate(ordinal, elements * 2);
      device.copy_to_device(ordinal, in.dq, in.q.storage().data(), elements * 2);
      device.copy_to_device(ordinal, in.dk, in.k.storage().data(), elements * 2);
      device.copy_to_device(ordinal, in.dv, in.v.storage().data(), elements * 2);
    }
    void* out = device.allocate(ordinal, elements * 2);
    AttentionCall call = attention_call_for(dense, dense, dense, dense, {nullptr, nullptr, nullptr, out, nullptr},
                                            s.causal, /*smooth_k=*/true);
    call.attention_config = config;
    call.prepare_config = {{"threads", 256}};
    const AttentionPlan plan = plan_attention(call, device_target(device, ordinal));
    record["family"] = family_of(plan);
    record["config"] = config_id(plan.attention_config);  // the table's choice, when the call named none
    record["impl"] = kFamilyNames[family_of(plan)];
    const std::size_t workspace_bytes = plan.workspace.total_bytes;
    void* workspace = device.allocate(ordinal, workspace_bytes);

    auto set_inputs = [&](const InputSet& in) {
      call.q = in.dq;
      call.k = in.dk;
      call.v = in.dv;
    };
    set_inputs(inputs[0]);
    const auto compile_start = std::chrono::steady_clock::now();
    run_attention(device, ordinal, plan, call, workspace, nullptr);
    device.synchronize(ordinal, nullptr);
    const double first_call_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - compile_start).count();
    for (int i = 0; i < warmup; ++i) {
      set_inputs(inputs[i % sets]);
      run_attention(device, ordinal, plan, call, workspace, nullptr);
    }
    std::vector<double> times;
    for (int i = 0; i < iterations; ++i) {
      set_inputs(inputs[(i + 1) % sets]);
      device.record_event(ordinal, start, nullptr);
      run_attention(device, ordinal, plan, call, workspace, nullptr);
      device.record_event(ordinal, stop, nullptr);
      device.synchronize(ordinal, nullptr);
      times.push_back(device.elapsed_ms(ordinal, start, stop));
    }
    const double ms = median(times);
    record["ms"] = ms;
    record["tops"] = tops(s, ms);
    record["first_call_ms"] = first_call_ms;
    record["min_ms"] = *std::min_element(times.begin(), times.end());

    if (measure_accuracy) {
      // Sampled rows of two heads (first and last) of the last-used input set, against fp64.
      const InputSet& in = inputs[iterations % sets];
      set_inputs(in);
      run_attention(device, ordinal, plan, call, workspace, nullptr);
      std::vector<std::uint16_t> host_out(elements);
      device.copy_to_host(ordinal, host_out.data(), out, elements * 2);
      double dot = 0, norm_a = 0, norm_r = 0, l1 = 0, l1_ref = 0;
      for (int head : {0, s.heads - 1})
        for (int i = 0; i < sample_rows; ++i) {
          const int row = int((std::int64_t(i) * 7919 + 13) % s.seq);
          const auto ref = reference_row(in, s, head, row, call.sm_scale);
          for (int c = 0; c < s.head_dim; ++c) {
            const double a = from_bf16(host_out[(std::size_t(head) * s.seq + row) * s.head_dim + c]);
            dot += a * ref[c];
            norm_a += a * a;
            norm_r += ref[c] * ref[c];
            l1 += std::abs(a - ref[c]);
            l1_ref += std::abs(ref[c]);
          }
        }
      record["cos"] = dot / std::sqrt(norm_a * norm_r);
      record["rel_l1"] = l1 / l1_ref;
      record["accuracy_rows"] = 2 * sample_rows;
    }
    device.free(ordinal, workspace);
    device.free(ordinal, out);
    for (auto& in : inputs) {
      device.free(ordinal, in.dq);
      device.free(ordinal, in.dk);
      device.free(ordinal, in.dv);
    }
    return ms;
  };

  if (tune) {
    Shape shape{};
    for (const Shape& s : default_shapes())
      if (s.name == tune_shape) shape = s;
    if (shape.name.empty()) throw std::runtime_error("unknown --tune-shape " + tune_shape);
    double best[kFamilies] = {1e30, 1e30, 1e30};
    TileConfig best_config[kFamilies];
    nlohmann::json tuning = nlohmann::json::array();
    for (const auto& text : tune_configs) {
      const TileConfig config = parse_config(text);
      nlohmann::json record;
      record["config"] = config_id(config);
      try {
        const double ms = run_shape(shape, config, false, record);
        const int family = record.at("family").get<int>();
        if (ms < best[family]) {
          best[family] = ms;
          best_config[family] = config;
        }
      } catch (const std::exception& error) {
        record["error"] = error.what();
      }
      std::cerr << record.dump() << "\n";
      tuning.push_back(record);
    }
    doc["tuning"] = {{"shape", tune_shape}, {"candidates", tuning}};
    configs.clear();
    for (int family = 0; family < kFamilies; ++family)
      if (best[family] < 1e29) configs.push_back(best_config[family]);
  }

  for (const Shape& s : shapes)
    for (const TileConfig& config : configs) {
      nlohmann::json record;
      record["shape"] = s.name;
      record["batch"] = s.batch;
      record["heads"] = s.heads;
      record["seq"] = s.seq;
      record["head_dim"] = s.head_dim;
      record["causal"] = s.causal;
      record["config"] = config_id(config);
      record["requested"] = config.empty() ? "table" : config_id(config);  // as asked (config: as run)
      record["impl"] = "sagejit";  // run_shape names the family once the plan is made
      try {
        run_shape(s, config, true, record);
      } catch (const std::exception& error) {
        record["error"] = error.what();
      }
      std::cerr << record.dump() << "\n";
      doc["results"].push_back(record);
    }
  device.destroy_event(ordinal, start);
  device.destroy_event(ordinal, stop);
  std::cout << doc.dump(1) << "\n";
  return 0;
}
