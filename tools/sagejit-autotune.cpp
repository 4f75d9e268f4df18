// sagejit-autotune: measures the attention kernel's tile configs on the GPU for given shapes and writes
// the winners into a tuning table (configs/README.md schema, merged deterministically).
//
// For each shape: every candidate config of the arch's space (or N of them) is compiled in parallel;
// candidates the descriptor rejects, that fail to compile, or whose output fails the numerics oracle
// (GPU vs the CPU emulator and the fp64 reference on a sub-sampled problem: tools/support/oracle_check.hpp)
// are recorded with the reason; the rest are timed with device events (warm-up, then the median of
// --reps calls, rotating over input sets larger than the GPU's L2). The fastest becomes the table
// entry (with every candidate's time) for the shape's power-of-two length bucket.
#include <algorithm>
#include <atomic>
#include <charconv>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cache/code_cache.hpp"
#include "support/attention_trial.hpp"
#include "support/cli.hpp"
#include "support/compile_job.hpp"
#include "support/oracle_check.hpp"
#include "support/progress.hpp"
#include "support/shape.hpp"
#include "support/summary_table.hpp"
#include "support/tuning_table_files.hpp"
#include "core/error.hpp"
#include "core/worker_threads.hpp"
#include "dev/table_merge.hpp"
#include "core/embedded_file.hpp"
#include "jit/jit.hpp"
#include "kernels/registry.hpp"
#include "platform/safe_file.hpp"
#include "plan/attention_plan.hpp"
#include "tuning/tuning_table.hpp"

namespace fs = std::filesystem;
using namespace sagejit;
using namespace sagejit::tools;

namespace {

struct Options {
  std::vector<std::string> shapes;
  std::optional<std::string> shapes_file;
  std::optional<std::string> misses_file;
  std::string out;
  std::string candidates = "all";
  int reps = 20;
  int warmup = 3;
  int device = 0;
  unsigned jobs = std::max(1u, std::thread::hardware_concurrency());
  std::uint64_t seed = 7;
};

struct Candidate {
  TileConfig config;
  std::string rejected;  // non-empty: why it was not timed
  std::vector<double> times_us;
  double median_us = 0;
};

// "all" -> 0 (every candidate); "N" -> N >= 1.
std::size_t parse_candidate_count(const std::string& text) {
  if (text == "all") return 0;
  std::size_t count = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), count);
  if (error != std::errc() || end != text.data() + text.size() || count == 0)
    fail(ErrorCode::invalid_argument, "--candidates \"{}\" is neither \"all\" nor a positive number", text);
  return count;
}

// The default config first, then the rest in a fixed pseudo-random order, cut to `count` (0: all).
std::vector<TileConfig> candidate_configs(const KernelSpace& space, std::size_t count) {
  std::vector<TileConfig> all = all_configs(space);
  std::vector<TileConfig> ordered{space.default_config};
  std::vector<TileConfig> rest;
  for (TileConfig& config : all)
    if (config != space.default_config) rest.push_back(std::move(config));
  std::mt19937 shuffle_rng(12345);
  std::shuffle(rest.begin(), rest.end(), shuffle_rng);
  ordered.insert(ordered.end(), rest.begin(), rest.end());
  if (count != 0 && ordered.size() > count) ordered.resize(count);
  return ordered;
}

// The power-of-two bucket of a length (configs/README.md, "Lookup"): [2^(k-1)+1, 2^k], [1, 1] for 1.
std::pair<int, int> length_bucket(int n) {
  if (n <= 1) return {1, 1};
  long long high = 1;
  while (high < n) high <<= 1;
  return {static_cast<int>(high / 2 + 1), static_cast<int>(std::min<long long>(high, 1 << 30))};
}

// A smaller problem with the same features for the oracle check (the CPU oracles are O(N^2 D)).
AttentionShape oracle_shape(const AttentionShape& shape) {
  AttentionShape small = shape;
  small.batch = 1;
  small.heads_q = shape.gqa_ratio * (shape.heads_q / shape.gqa_ratio >= 2 ? 2 : 1);
  small.seq_q = std::min(shape.seq_q, 509);   // odd: exercises the tails
  small.seq_kv = std::min(shape.seq_kv, 509);
  return small;
}

std::string today_utc() {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[16];
  std::strftime(text, sizeof text, "%Y-%m-%d", &utc);
  return text;
}

nlohmann::json config_json(const TileConfig& config) {
  nlohmann::json json = nlohmann::json::object();
  for (const auto& [name, value] : config) json[name] = value;
  return json;
}

// The table the winners are merged into: --out when it exists, else the shipped table of the arch.
nlohmann::json base_table(const std::string& out, const std::string& arch) {
  if (fs::exists(out)) {
    // A regular file of bounded size, like every tuning table (a FIFO would hang the run).
    const std::string text = read_regular_text_file(out, max_table_file_bytes, ErrorCode::config_error,
                                                    "the size limit of a tuning table");
    const nlohmann::json document = parse_table_json(text, out);
    const TableFile table = validate_table(document, out);
    if (table.arch != arch)
      fail(ErrorCode::config_error, "--out {}: the table is for {}, the GPU is {}", out, table.arch, arch);
    return document;
  }
  for (std::size_t i = 0; i < embedded_config_files_count; ++i)
    if (std::string(embedded_config_files[i].path) == arch + ".json") {
      const nlohmann::json document = parse_table_json(embedded_config_files[i].contents, "configs/" + arch + ".json");
      if (document.contains("alias_of"))
        fail(ErrorCode::config_error, "configs/{}.json is an alias of {}: tune that arch's table", arch,
             document["alias_of"].get<std::string>());
      return document;
    }
  fail(ErrorCode::unsupported, "no shipped tuning table for {} to start --out {} from", arch, out);
}

std::vector<AttentionShape> gather_shapes(const Options& options) {
  std::vector<AttentionShape> shapes;
  for (const std::string& text : options.shapes) shapes.push_back(parse_shape(text, "--shape"));
  if (options.shapes_file)
    for (const AttentionShape& shape : read_shapes_file(*options.shapes_file)) shapes.push_back(shape);
  return shapes;
}

// Median time of one call for each candidate that passed so far.
void time_candidates(const CallDevice& device, const AttentionShape& shape, std::vector<Candidate>& candidates,
                     const Options& options, Progress& progress) {
  TrialSettings settings;
  // Rotate over input sets that together exceed the L2 (50 MiB on an H200) so no config is timed on
  // cache-resident inputs; large problems need only two sets.
  const double set_bytes = 2.0 * shape.batch * (shape.heads_q * double(shape.seq_q) + 2.0 * shape.heads_kv() * shape.seq_kv) * shape.head_dim;
  settings.input_sets = static_cast<int>(std::clamp(std::ceil(256.0 * 1024 * 1024 / std::max(set_bytes, 1.0)), 2.0, 8.0));
  settings.seed = options.seed + 1;
  AttentionTrial trial(device, shape, settings);
  Device& backend = *device.backend;
  const int ordinal = device.info.ordinal;
  void* start = backend.create_event(ordinal);
  void* stop = backend.create_event(ordinal);
  for (Candidate& candidate : candidates) {
    if (!candidate.rejected.empty()) continue;
    try {
      const AttentionPlan choice = trial.choice(candidate.config);
      for (int i = 0; i < options.warmup; ++i) trial.enqueue(choice, i, nullptr);
      backend.synchronize(ordinal, nullptr);
      for (int i = 0; i < options.reps; ++i) {
        backend.record_event(ordinal, start, nullptr);
        trial.enqueue(choice, i + 1, nullptr);
        backend.record_event(ordinal, stop, nullptr);
        backend.synchronize(ordinal, nullptr);
        candidate.times_us.push_back(backend.elapsed_ms(ordinal, start, stop) * 1000.0);
      }
      std::vector<double> sorted = candidate.times_us;
      std::sort(sorted.begin(), sorted.end());
      candidate.median_us = sorted[sorted.size() / 2];
      progress.item_done(fmt::format("{} {}: {:.1f} us", shape.text(), config_id(candidate.config), candidate.median_us));
    } catch (const std::exception& error) {
      candidate.rejected = fmt::format("failed to run: {}", error.what());
      progress.item_done(fmt::format("{} {}: {}", shape.text(), config_id(candidate.config), candidate.rejected), true);
    }
  }
  backend.destroy_event(ordinal, start);
  backend.destroy_event(ordinal, stop);
}

void check_candidates(const CallDevice& device, const AttentionShape& shape, std::vector<Candidate>& candidates,
                      const Options& options, Progress& progress) {
  TrialSettings settings;
  settings.seed = options.seed;
  AttentionTrial trial(device, oracle_shape(shape), settings);
  for (Candidate& candidate : candidates) {
    if (!candidate.rejected.empty()) {
      progress.item_done(fmt::format("{} {}: {}", shape.text(), config_id(candidate.config), candidate.rejected));
      continue;
    }
    try {
      const AttentionPlan choice = trial.choice(candidate.config);
      trial.poison_output();
      trial.enqueue(choice, 0, nullptr);
      const OracleVerdict verdict = judge_output({&trial.q(), &trial.k(), &trial.v(), settings.layout,
                                                  trial.emulator_options(choice)},
                                                 trial.download_output(), trial.download_lse());
      if (!verdict.passed) candidate.rejected = "output failed the oracle: " + verdict.failure;
    } catch (const std::exception& error) {
      candidate.rejected = fmt::format("failed to run: {}", error.what());
    }
    progress.item_done(fmt::format("{} {}: oracle {}", shape.text(), config_id(candidate.config),
                                   candidate.rejected.empty() ? "ok" : candidate.rejected),
                       !candidate.rejected.empty());
  }
}

int run(const Options& options) {
  const std::size_t candidate_count = parse_candidate_count(options.candidates);
  if (options.reps < 1) fail(ErrorCode::invalid_argument, "--reps must be at least 1 (got {})", options.reps);
  std::vector<AttentionShape> shapes = gather_shapes(options);
  std::vector<ProblemKey> misses;
  if (options.misses_file) misses = read_recorded_misses(*options.misses_file);
  if (shapes.empty() && !options.misses_file)
    fail(ErrorCode::invalid_argument, "give shapes to tune: --shape B,H,Nq,Nk,D[,causal][,bf16|fp16][,gqa=R], "
                                      "--shapes FILE or --misses FILE");

  const CallDevice device = require_gpu(options.device);
  const std::string arch = arch_of_target(device.info.target);
  for (const ProblemKey& miss : misses)
    if (miss.kernel == "attention" && arch_of_target(miss.arch) == arch) shapes.push_back(shape_of_problem(miss));
  if (shapes.empty())
    fail(ErrorCode::invalid_argument, "--misses {}: no attention miss recorded for {}", *options.misses_file, arch);

  const KernelSpace& space = tuning_tables().space("attention", arch);
  const std::vector<TileConfig> configs = candidate_configs(space, candidate_count);
  const Compiler& jit_compiler = *device_compiler_choice(*device.backend, device.info.ordinal).compiler;
  fmt::print("sagejit-autotune: {} on device {} \"{}\" ({}), {} shape(s) x {} candidate(s), compiler {}\n", arch,
             device.info.ordinal, device.info.name, device.info.full_target, shapes.size(), configs.size(),
             jit_compiler.identity());

  // Candidates per shape, with the descriptor's verdict.
  std::vector<std::vector<Candidate>> per_shape(shapes.size());
  std::vector<std::pair<std::size_t, std::size_t>> builds;  // (shape, candidate) to compile
  std::vector<KeyedJob> keyed;
  for (std::size_t s = 0; s < shapes.size(); ++s)
    for (const TileConfig& config : configs) {
      Candidate candidate{config, {}, {}, 0};
      try {
        AttentionCall call = shapes[s].call();
        call.attention_config = config;
        const AttentionPlan plan = plan_attention(call, device.info.full_target);
        keyed.push_back(key_job(CompileJob{plan.attention, plan.attention_config, plan.spec, device.info.full_target,
                                           &jit_compiler}));
        builds.emplace_back(s, per_shape[s].size());
      } catch (const Error& error) {
        if (error.code() != ErrorCode::unsupported) throw;
        candidate.rejected = fmt::format("rejected by the kernel descriptor: {}", error.what());
      }
      per_shape[s].push_back(std::move(candidate));
    }

  // Compile every valid candidate in parallel into the process-wide cache the runtime loads from.
  {
    Progress progress("compile", keyed.size(), stderr_is_terminal());
    std::atomic<std::size_t> next{0};
    const auto worker = [&] {
      for (std::size_t i = next++; i < keyed.size(); i = next++) {
        Candidate& candidate = per_shape[builds[i].first][builds[i].second];
        try {
          const CacheLookup lookup = build_job(code_cache(), keyed[i]);
          progress.item_done(fmt::format("{}: {} ({:.0f} ms)", keyed[i].rendered.name, to_string(lookup.hit), lookup.ms));
        } catch (const std::exception& error) {
          const std::string message = error.what();
          candidate.rejected = "failed to compile: " + message.substr(0, message.find('\n'));
          progress.item_done(fmt::format("{}: FAILED to compile", keyed[i].rendered.name), true);
        }
      }
    };
    run_worker_threads(static_cast<unsigned>(std::min<std::size_t>(options.jobs, std::max<std::size_t>(keyed.size(), 1))),
                       worker, [&] { next = keyed.size(); },
                       fmt::format("sagejit-autotune's compile workers (-j {})", options.jobs));
    progress.finish();
  }

  nlohmann::json new_entries = nlohmann::json::array();
  SummaryTable table({{"shape"}, {"config"}, {"result"}, {"median us", SummaryTable::Align::right},
                      {"TOPS", SummaryTable::Align::right}, {"vs best", SummaryTable::Align::right}});
  bool any_winner = false;
  for (std::size_t s = 0; s < shapes.size(); ++s) {
    const AttentionShape& shape = shapes[s];
    std::vector<Candidate>& candidates = per_shape[s];
    {
      Progress progress(fmt::format("oracle {}", shape.text()), candidates.size(), stderr_is_terminal());
      check_candidates(device, shape, candidates, options, progress);
      progress.finish();
    }
    {
      const auto passing = std::count_if(candidates.begin(), candidates.end(), [](const Candidate& c) { return c.rejected.empty(); });
      Progress progress(fmt::format("time {}", shape.text()), static_cast<std::size_t>(passing), stderr_is_terminal());
      time_candidates(device, shape, candidates, options, progress);
      progress.finish();
    }
    const Candidate* best = nullptr;
    for (const Candidate& candidate : candidates)
      if (candidate.rejected.empty() && (best == nullptr || candidate.median_us < best->median_us ||
                                         (candidate.median_us == best->median_us && config_id(candidate.config) < config_id(best->config))))
        best = &candidate;

    nlohmann::json tried = nlohmann::json::array();
    for (const Candidate& candidate : candidates) {
      if (candidate.rejected.empty()) {
        tried.push_back({{"config", config_json(candidate.config)}, {"time_us", candidate.median_us}});
        table.add_row({shape.text(), config_id(candidate.config), &candidate == best ? "WINNER" : "timed",
                       fmt::format("{:.1f}", candidate.median_us),
                       fmt::format("{:.1f}", shape.operations() / (candidate.median_us * 1e-6) / 1e12),
                       fmt::format("{:.2f}x", candidate.median_us / best->median_us)});
      } else {
        tried.push_back({{"config", config_json(candidate.config)}, {"time_us", nullptr}, {"reason", candidate.rejected}});
        table.add_row({shape.text(), config_id(candidate.config), "rejected: " + candidate.rejected.substr(0, 90), "-", "-", "-"});
      }
    }
    if (best == nullptr) {
      print_stderr(fmt::format("sagejit-autotune: no candidate passed for {}: nothing written for it\n", shape.text()));
      continue;
    }
    any_winner = true;
    const auto [q_lo, q_hi] = length_bucket(shape.seq_q);
    const auto [kv_lo, kv_hi] = length_bucket(shape.seq_kv);
    new_entries.push_back({{"problem",
                            {{"dtype", to_string(shape.dtype)},
                             {"head_dim", kernel_head_dim_for(shape.head_dim)},  // tables key the kernel's (padded) dim
                             {"causal", shape.causal},
                             {"gqa_ratio", shape.gqa_ratio},
                             {"seq_q", {q_lo, q_hi}},
                             {"seq_kv", {kv_lo, kv_hi}}}},
                           {"config", config_json(best->config)},
                           {"measured",
                            {{"device", device.info.name},
                             {"date", today_utc()},
                             {"tool", tool_version_string("sagejit-autotune")},
                             {"time_us", best->median_us},
                             {"tops", shape.operations() / (best->median_us * 1e-6) / 1e12}}},
                           {"candidates", tried}});
  }

  table.print();
  if (!any_winner) {
    print_stderr(fmt::format("sagejit-autotune: no shape got a winner; {} left unchanged\n", options.out));
    return exit_failed;
  }
  const nlohmann::json merged = merge_entries(base_table(options.out, arch), {{"attention", new_entries}});
  write_table(options.out, merged);
  fmt::print("wrote {} measured entr{} into {}\n", new_entries.size(), new_entries.size() == 1 ? "y" : "ies", options.out);
  return new_entries.size() == shapes.size() ? exit_ok : exit_failed;
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  CLI::App app{"Time the attention kernel's tile configs on this GPU and write the winners into a tuning table. "
               "Needs a GPU (exit 3 without one). See docs/TOOLS.md.",
               "sagejit-autotune"};
  app.set_version_flag("--version", tool_version_string("sagejit-autotune"));
  app.add_option("--shape", options.shapes, "B,H,Nq,Nk,D[,causal][,bf16|fp16][,gqa=R] (repeatable)");
  app.add_option("--shapes", options.shapes_file, "File of shapes, one per line ('#' comments)");
  app.add_option("--misses", options.misses_file, "SAGEJIT_RECORD_MISSES file: tune the recorded misses of this GPU's arch");
  app.add_option("--out", options.out, "Table to merge the winners into (created from the shipped table if missing)")
      ->required();
  app.add_option("--candidates", options.candidates, "\"all\" (default) or N: the default config plus N-1 others");
  app.add_option("--reps", options.reps, "Timed calls per candidate (median; default 20)")->check(CLI::PositiveNumber);
  app.add_option("--warmup", options.warmup, "Untimed calls before timing (default 3)")->check(CLI::NonNegativeNumber);
  app.add_option("--device", options.device, "Device ordinal (default 0)")->check(CLI::NonNegativeNumber);
  app.add_option("--jobs,-j", options.jobs, "Parallel compiles (default: the number of cores)")->check(CLI::PositiveNumber);
  app.add_option("--seed", options.seed, "Seed of the random inputs");
  add_verbose_flag(app, "kernel choices and cache hits");
  return run_tool(app, argc, argv, [&] { return run(options); });
}
