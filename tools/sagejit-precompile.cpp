// sagejit-precompile: compiles the kernels of one or more archs ahead of time, without a GPU, into the
// user code-object cache or into a directory laid out as a read-only system cache (shipped with an
// install), so that first calls in an application are cache hits. docs/TOOLS.md describes the set of
// code objects it builds and why.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <map>
#include <set>
#include <thread>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cache/code_cache.hpp"
#include "common/key_mask.h"
#include "support/cli.hpp"
#include "support/code_object_stats.hpp"
#include "support/compile_job.hpp"
#include "support/progress.hpp"
#include "support/summary_table.hpp"
#include "support/tuning_table_files.hpp"
#include "core/target.hpp"
#include "core/error.hpp"
#include "core/worker_threads.hpp"
#include "dev/cache_admin.hpp"
#include "platform/safe_file.hpp"
#include "jit/compiler_choice.hpp"
#include "jit/kernel_config.hpp"
#include "kernels/registry.hpp"
#include "plan/attention_plan.hpp"
#include "tuning/tuning_table.hpp"

namespace fs = std::filesystem;
using namespace sagejit;
using namespace sagejit::tools;

namespace {

struct Options {
  std::vector<std::string> archs;
  std::optional<std::string> compiler;
  std::optional<std::string> cache_dir;
  std::optional<std::string> system_cache;
  std::optional<std::string> emit_dir;
  unsigned jobs = std::max(1u, std::thread::hardware_concurrency());
  std::vector<std::string> kernels;
  std::vector<std::string> dtypes = kernel_dtype_names();
  std::vector<int> head_dims{std::begin(kernel_head_dims), std::end(kernel_head_dims)};
  bool dry_run = false;
  bool all_candidates = false;
  bool all_specializations = false;
};

// One planned build: a job that the descriptor accepted, or the reason it was skipped.
struct Planned {
  KeyedJob keyed;
  std::string arch;
};

struct Outcome {
  std::string status;  // "compiled", "cached (user)", "cached (system)", "FAILED"
  double ms = 0;
  std::size_t bytes = 0;
  CodeObjectStats stats;
  unsigned extra_shared = 0;  // dynamic shared memory of the launch (descriptor geometry)
  std::string error;
};

bool kernel_selected(const KernelDesc& desc, const std::vector<std::string>& wanted) {
  if (wanted.empty()) return true;
  return std::find(wanted.begin(), wanted.end(), desc.name) != wanted.end() ||
         std::find(wanted.begin(), wanted.end(), desc.family) != wanted.end();
}

// The attention problems a first call can ask for, narrowed by --dtype/--head-dim: dtype x head_dim x
// causal, plus LSE output and a key mask with --all-specializations. Sizes are nominal: the plan of a
// problem does not depend on them once its configs are given (nor on a mask's pointer, strides or
// type: only on whether there is one).
std::vector<AttentionCall> problems(const Options& options) {
  static const unsigned char nominal_mask = 1;  // never read: planning takes only the mask's presence
  std::vector<AttentionCall> calls;
  const std::vector<bool> variants = options.all_specializations ? std::vector<bool>{false, true} : std::vector<bool>{false};
  for (const std::string& dtype : options.dtypes)
    for (int head_dim : options.head_dims)
      for (bool causal : {false, true})
        for (bool lse : variants)
          for (bool masked : variants) {
          AttentionCall call;
          call.dtype = *kernel_dtype_named(dtype);  // --dtype accepts only kernel_dtype_names()
          call.head_dim = head_dim;
          call.seq_q = call.seq_kv = 128;
          call.causal = causal;
          call.want_lse = lse;
          call.sm_scale = 1.0f;
          if (masked) call.key_mask = {&nominal_mask, SJ_KEY_MASK_BOOL, 0, 1};
          calls.push_back(call);
        }
  return calls;
}

// Does a table entry's problem concern this call? (The runtime only considers entries of the call's
// dtype, head_dim and causal flag.)
bool entry_applies(const TableEntry& entry, const AttentionCall& call) {
  return entry.problem.dtype == call.dtype && entry.problem.head_dim == call.head_dim && entry.problem.causal == call.causal;
}

// The configs of `family` worth building for `call`: every candidate, or the default and the entries
// that apply.
std::vector<TileConfig> family_configs(const Options& options, const TuningTables& tables,
                                       const std::vector<LoadedTableFile>& files, const std::string& family,
                                       const std::string& arch, const AttentionCall& call) {
  const KernelSpace& space = tables.space(family, arch);
  if (options.all_candidates) return all_configs(space);
  std::vector<TileConfig> configs;
  bool default_reachable = true;
  for (const TableEntry& entry : table_entries(files, family, arch))
    if (family != "attention" || entry_applies(entry, call)) {
      configs.push_back(entry.config);
      if (family == "attention" && matches_every_call(entry.problem)) default_reachable = false;
    }
  if (default_reachable) configs.insert(configs.begin(), space.default_config);
  return configs;
}

struct Plan {
  std::vector<Planned> jobs;
  std::size_t rejected = 0;  // combinations the descriptors rejected (--all-candidates mostly)
  std::size_t duplicates = 0;
  std::vector<std::string> rejected_reasons;
};

// Adds one kernel build unless an identical one (same key) is planned already.
void add_job(Plan& plan, std::set<CacheKey>& seen, const CompileJob& job, const std::string& arch) {
  KeyedJob keyed = key_job(job);
  if (!seen.insert(keyed.key).second) {
    ++plan.duplicates;
    return;
  }
  plan.jobs.push_back({std::move(keyed), arch});
}

void reject(Plan& plan, const Error& error) {
  if (error.code() != ErrorCode::unsupported) throw error;
  ++plan.rejected;
  if (plan.rejected_reasons.size() < 3) plan.rejected_reasons.push_back(error.what());
}

Plan make_plan(const Options& options, const std::optional<CompilerKind>& requested) {
  const std::vector<LoadedTableFile> files = loaded_table_files();
  const TuningTables& tables = tuning_tables();
  const std::vector<std::string> table_archs = tables.archs();
  Plan plan;
  std::set<CacheKey> seen;
  for (const std::string& target_text : options.archs) {
    const Target target = parse_target(target_text);
    const std::string& arch = target.arch;
    if (std::find(table_archs.begin(), table_archs.end(), arch) == table_archs.end())
      fail(ErrorCode::invalid_argument, "--arch {}: no tuning table for this arch (archs with tables: {})", target_text,
           fmt::join(table_archs, ", "));
    // --compiler names the AMD compiler; in a mixed list the NVIDIA targets keep NVRTC.
    const bool mixed = std::any_of(options.archs.begin(), options.archs.end(),
                                   [](const std::string& a) { return !is_nvidia_target(a); });
    const Compiler& compiler = *choose_compiler(target, target.is_nvidia() && mixed ? std::nullopt : requested).compiler;
    bool any_kernel = false;
    // The attention pipeline: each problem x attention config x prepare config, as plan_attention
    // pairs them (the prepare kernel is built for the V format of each attention config).
    const bool pipeline_selected = std::any_of(all_kernels().begin(), all_kernels().end(), [&](const KernelDesc* d) {
      return (d->family == "attention" || d->family == "prepare") && kernel_selected(*d, options.kernels) &&
             kernel_supports(*d, target);
    });
    if (pipeline_selected) {
      for (const AttentionCall& problem : problems(options)) {
        for (const TileConfig& attention : family_configs(options, tables, files, "attention", arch, problem))
          for (const TileConfig& prepare : family_configs(options, tables, files, "prepare", arch, problem)) {
            AttentionCall call = problem;
            call.attention_config = attention;
            call.attention_config_from_table = !options.all_candidates;  // as the plan fits its own choice
            call.prepare_config = prepare;
            try {
              const AttentionPlan planned = plan_attention(call, target);
              for (const auto& [desc, config] : {std::pair{planned.attention, &planned.attention_config},
                                                 std::pair{planned.prepare, &planned.prepare_config}}) {
                if (!kernel_selected(*desc, options.kernels)) continue;
                any_kernel = true;
                add_job(plan, seen, CompileJob{desc, *config, planned.spec, target_text, &compiler}, arch);
              }
            } catch (const Error& error) {
              reject(plan, error);
            }
          }
      }
    }
    // Kernels outside the pipeline (layout probes, the JIT probe) when --kernels names them: their
    // descriptor's defaults.
    for (const KernelDesc* desc : all_kernels()) {
      if (desc->family == "attention" || desc->family == "prepare" || options.kernels.empty() ||
          !kernel_selected(*desc, options.kernels) || !kernel_supports(*desc, target))
        continue;
      any_kernel = true;
      try {
        add_job(plan, seen, CompileJob{desc, TileConfig{}, Specialization{}, target_text, &compiler}, arch);
      } catch (const Error& error) {
        reject(plan, error);
      }
    }
    if (!any_kernel)
      fail(ErrorCode::invalid_argument, "--kernels {}: no selected kernel supports {} (kernels: {})",
           fmt::join(options.kernels, ","), target_text, [] {
             std::vector<std::string> names;
             for (const KernelDesc* desc : all_kernels()) names.push_back(desc->name + " (" + desc->family + ")");
             return fmt::format("{}", fmt::join(names, ", "));
           }());
  }
  return plan;
}

unsigned dynamic_shared_bytes(const KeyedJob& keyed) {
  const KernelDesc& desc = *keyed.job.kernel;
  unsigned bytes = 0;
  const ProblemShape nominal{1, 1, 1, 1024, 1024};
  for (int entry = 0; entry < static_cast<int>(desc.entries.size()); ++entry)
    bytes = std::max(bytes, kernel_geometry(desc, entry, keyed.job.config, keyed.job.spec, nominal).dynamic_shared_bytes);
  return bytes;
}

constexpr const char* emit_manifest_name = "emitted.json";

// tools/support/compile_job.hpp's name for the raw code object.
std::string emit_file_name(const Planned& planned) {
  return tools::emit_file_name(planned.keyed.job.kernel->name, planned.keyed.job.config, planned.keyed.job.spec,
                               planned.keyed.rendered.target);
}

// The emitted names are predictable: an unpredictable temp name (O_EXCL, O_NOFOLLOW) renamed into
// place, so a symlink planted under the final name is replaced, never written through.
void write_file(const fs::path& path, std::span<const std::byte> bytes) {
  write_file_atomically(path, bytes, 0644, ErrorCode::cache_error);
}

// The index of an --emit-dir (emit_manifest_name): which kernel, config, specialization, target and
// compiler each file is, and how long it took, so that a checker (tests/test_hiprtc_objects.cpp) or
// the ISA report (--objects) can take objects built elsewhere, e.g. by hipRTC inside a ROCm root.
void write_emit_manifest(const fs::path& dir, const Plan& plan, const std::vector<Outcome>& outcomes) {
  nlohmann::json entries = nlohmann::json::array();
  for (std::size_t i = 0; i < plan.jobs.size(); ++i) {
    if (outcomes[i].status == "FAILED") continue;
    const CompileJob& job = plan.jobs[i].keyed.job;
    entries.push_back({{"file", emit_file_name(plan.jobs[i])},
                       {"kernel", job.kernel->name},
                       {"config", job.config},
                       {"spec", {{"dtype", job.spec.dtype}, {"head_dim", job.spec.head_dim}, {"causal", job.spec.causal},
                                 {"write_lse", job.spec.write_lse}, {"key_mask", job.spec.key_mask}}},
                       {"target", plan.jobs[i].keyed.rendered.target},
                       {"compiler", job.compiler->identity()},
                       {"status", outcomes[i].status},
                       {"ms", outcomes[i].ms}});
  }
  const std::string text = nlohmann::json{{"tool", tool_version_string("sagejit-precompile")}, {"objects", entries}}.dump(1) + "\n";
  write_file(dir / emit_manifest_name, std::as_bytes(std::span(text.data(), text.size())));
}

// A system cache is read by every user: directory 0755, entries 0644, no lock files left behind.
// It also records which compilers built the entries (cache/prebuilt_manifest.hpp), so that a run
// whose own compiler differs (hipRTC on a ROCm machine) still finds them. Every change goes through
// descriptors opened with O_NOFOLLOW inside the directory the cache checked (ours, and above it only
// ours or root's): no symlink is followed to change a mode or to delete.
void finish_system_cache(const fs::path& dir, const Plan& plan) {
  std::set<std::pair<std::string, std::string>> compilers;
  for (const Planned& planned : plan.jobs)
    compilers.emplace(to_string(planned.keyed.job.compiler->kind()), planned.keyed.job.compiler->identity());
  for (const auto& [kind, identity] : compilers) record_prebuilt_compiler(dir, {kind, identity});
  const FileDescriptor dir_fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!dir_fd) fail(ErrorCode::cache_error, "--system-cache {}: cannot open it: {}", dir.string(), std::strerror(errno));
  std::string problem;
  if (!remove_tree_at(dir_fd.get(), "locks", problem))
    fail(ErrorCode::cache_error, "--system-cache {}: cannot remove the lock files: {}", dir.string(), problem);
  std::vector<std::string> names{std::string(prebuilt_manifest_name)};
  DIR* stream = ::fdopendir(::dup(dir_fd.get()));
  if (stream == nullptr) fail(ErrorCode::cache_error, "--system-cache {}: cannot list it: {}", dir.string(), std::strerror(errno));
  while (const dirent* item = ::readdir(stream))
    if (std::string_view(item->d_name).ends_with(entry_suffix)) names.emplace_back(item->d_name);
  ::closedir(stream);
  for (const std::string& name : names)
    if (!set_file_mode_at(dir_fd.get(), name, 0644, problem))
      fail(ErrorCode::cache_error, "--system-cache {}: cannot make {} readable by every user: {}", dir.string(), name,
           problem);
  if (::fchmod(dir_fd.get(), 0755) != 0)
    fail(ErrorCode::cache_error, "--system-cache {}: chmod 0755 failed: {}", dir.string(), std::strerror(errno));
}

// The planned entries that are not (or no longer) files in `dir`: refused, a full disk, a size cap
// smaller than the entries.
std::size_t entries_missing_from(const fs::path& dir, const Plan& plan, const std::vector<Outcome>& outcomes) {
  std::size_t missing = 0;
  for (std::size_t i = 0; i < plan.jobs.size(); ++i) {
    if (outcomes[i].status == "FAILED") continue;
    struct stat info {};
    const fs::path entry = dir / entry_file_name(plan.jobs[i].keyed.key, plan.jobs[i].keyed.label);
    if (::lstat(entry.c_str(), &info) != 0 || !S_ISREG(info.st_mode)) ++missing;
  }
  return missing;
}

std::string config_cell(const KeyedJob& keyed) {
  const std::string id = config_id(keyed.job.config);
  return id.empty() ? "(descriptor default)" : id;
}

int run(const Options& options) {
  if (options.archs.empty()) fail(ErrorCode::invalid_argument, "--arch: give at least one arch (e.g. gfx1201,sm_90)");
  if (options.cache_dir && options.system_cache)
    fail(ErrorCode::invalid_argument, "--cache-dir and --system-cache name two destinations; give one");
  std::optional<CompilerKind> requested;
  if (options.compiler) requested = parse_compiler_kind(*options.compiler);

  const Plan plan = make_plan(options, requested);

  CodeCacheSettings settings = CodeCacheSettings::from_environment();
  settings.system_dir.reset();  // precompile fills a cache; it never counts a system entry as done
  if (options.cache_dir) settings.user_dir = fs::path(*options.cache_dir);
  if (options.system_cache) {
    // Missing parents 0755 whatever the umask, so every user can reach the entries; the cache dir
    // itself 0700 while it is filled, opened up to 0755 when done. The cache refuses a dir or parent
    // that another user owns or could write.
    settings.user_dir = fs::path(*options.system_cache);
    settings.user_dir_modes = DirModes{0755, 0700};
    settings.max_bytes = 0;  // a shipped cache is never pruned
  }
  settings.create_user_dir = !options.dry_run;  // a dry run creates nothing
  if (!settings.user_dir && !options.dry_run && !options.emit_dir)
    fail(ErrorCode::cache_error,
         "no cache directory: SAGEJIT_DISABLE_CACHE is set or no absolute HOME/XDG_CACHE_HOME; give --cache-dir, "
         "--system-cache or --emit-dir");
  CodeCache cache(settings);
  const std::string destination_option = options.system_cache ? "--system-cache" : options.cache_dir ? "--cache-dir" : "cache dir";
  if (settings.user_dir && !options.dry_run) {
    // Compiling into a cache that will not keep the results would be work reported but not done.
    if (!cache.active_user_dir())
      fail(ErrorCode::cache_error, "{} {}: cannot store code objects there: {}", destination_option,
           settings.user_dir->string(), cache.user_dir_problem());
    if (!cache.user_dir_writable())
      fail(ErrorCode::cache_error, "{} {}: cannot store code objects there: the directory is read-only",
           destination_option, settings.user_dir->string());
  }

  const std::string destination = settings.user_dir ? settings.user_dir->string() : std::string("(memory only)");
  fmt::print("sagejit-precompile: {} code objects for {} into {}{}\n", plan.jobs.size(), fmt::join(options.archs, ","),
             destination, options.system_cache ? " (system cache layout)" : "");
  if (plan.rejected)
    fmt::print("  {} combination(s) rejected by the kernel descriptors, e.g. {}\n", plan.rejected,
               plan.rejected_reasons.front());

  if (options.dry_run) {
    SummaryTable table({{"kernel"}, {"config"}, {"specialization"}, {"target"}, {"compiler"}, {"state"}});
    const auto dir = cache.active_user_dir();
    std::size_t cached = 0;
    std::size_t bad = 0;
    for (const Planned& planned : plan.jobs) {
      // An entry counts as cached only when it is one: read and checked as `sagejit-cache verify` does
      // (a truncated or foreign file under the entry's name is compiled again, and said so).
      std::string state = "to compile";
      if (dir) {
        CacheEntryInfo entry;
        entry.path = *dir / entry_file_name(planned.keyed.key, planned.keyed.label);
        if (fs::exists(entry.path)) {
          check_cache_entry(entry);
          if (entry.valid) {
            state = "cached";
            ++cached;
          } else {
            state = "to compile (bad entry: " + entry.problem + ")";
            ++bad;
          }
        }
      }
      table.add_row({planned.keyed.job.kernel->name, config_cell(planned.keyed), specialization_text(planned.keyed.job.spec),
                     planned.keyed.rendered.target, planned.keyed.job.compiler->identity(), state});
    }
    table.print();
    fmt::print("dry run: {} to compile{}, {} already cached; nothing was compiled\n", plan.jobs.size() - cached,
               bad ? fmt::format(" ({} over a bad entry)", bad) : std::string(), cached);
    return exit_ok;
  }

  std::optional<fs::path> emit_dir;
  if (options.emit_dir) {
    emit_dir = fs::path(*options.emit_dir);
    const DirCheck check = check_trusted_dir(*emit_dir, TrustedOwners::self, "--emit-dir " + emit_dir->string(),
                                             DirModes{0755, 0755});
    if (!check.problem.empty()) fail(ErrorCode::cache_error, "{}", check.problem);
  }

  std::vector<Outcome> outcomes(plan.jobs.size());
  Progress progress("precompile", plan.jobs.size(), stderr_is_terminal());
  std::atomic<std::size_t> next{0};
  const auto worker = [&] {
    for (std::size_t i = next++; i < plan.jobs.size(); i = next++) {
      const Planned& planned = plan.jobs[i];
      Outcome& outcome = outcomes[i];
      try {
        const CacheLookup lookup = build_job(cache, planned.keyed);
        outcome.status = lookup.hit == CacheHit::compiled ? "compiled" : fmt::format("cached ({})", to_string(lookup.hit));
        outcome.ms = lookup.ms;
        outcome.bytes = lookup.code->size();
        outcome.stats = read_code_object_stats(*lookup.code);
        outcome.extra_shared = dynamic_shared_bytes(planned.keyed);
        if (emit_dir) write_file(*emit_dir / emit_file_name(planned), *lookup.code);
        progress.item_done(fmt::format("{} {} [{}] {}: {} ({:.0f} ms)", planned.keyed.job.kernel->name,
                                       config_cell(planned.keyed), specialization_text(planned.keyed.job.spec),
                                       planned.keyed.rendered.target, outcome.status, outcome.ms));
      } catch (const std::exception& error) {
        outcome.status = "FAILED";
        outcome.error = error.what();
        try {
          progress.message(fmt::format("FAILED: {} {} [{}] {}: {}", planned.keyed.job.kernel->name,
                                       config_cell(planned.keyed), specialization_text(planned.keyed.job.spec),
                                       planned.keyed.rendered.target, error.what()));
        } catch (...) {  // out of memory formatting the message; the summary still says FAILED
        }
        progress.item_done(planned.keyed.rendered.name + ": FAILED", true);
      } catch (...) {  // never let an exception end a worker thread (std::terminate)
        outcome.status = "FAILED";
        outcome.error = "unknown exception";
        progress.item_done(planned.keyed.rendered.name + ": FAILED", true);
      }
    }
  };
  const unsigned thread_count = std::min<unsigned>(options.jobs, std::max<std::size_t>(1, plan.jobs.size()));
  run_worker_threads(thread_count, worker, [&] { next = plan.jobs.size(); },
                     fmt::format("sagejit-precompile's compile workers (-j {})", options.jobs));
  progress.finish();
  if (options.system_cache) finish_system_cache(*settings.user_dir, plan);
  const std::size_t not_stored = settings.user_dir ? entries_missing_from(*settings.user_dir, plan, outcomes) : 0;

  SummaryTable table({{"kernel"},
                      {"config"},
                      {"specialization"},
                      {"target"},
                      {"result"},
                      {"ms", SummaryTable::Align::right},
                      {"bytes", SummaryTable::Align::right},
                      {"regs", SummaryTable::Align::right},
                      {"lds/smem", SummaryTable::Align::right},
                      {"scratch", SummaryTable::Align::right},
                      {"spills", SummaryTable::Align::right}});
  std::size_t compiled = 0, cached = 0, failed = 0;
  double compile_ms = 0;
  for (std::size_t i = 0; i < plan.jobs.size(); ++i) {
    const Planned& planned = plan.jobs[i];
    const Outcome& outcome = outcomes[i];
    if (outcome.status == "FAILED") {
      ++failed;
      table.add_row({planned.keyed.job.kernel->name, config_cell(planned.keyed), specialization_text(planned.keyed.job.spec),
                     planned.keyed.rendered.target, "FAILED", "-", "-", "-", "-", "-", "-"});
      continue;
    }
    if (outcome.status == "compiled") {
      ++compiled;
      compile_ms += outcome.ms;
    } else {
      ++cached;
    }
    std::optional<std::uint64_t> shared = outcome.stats.static_shared;
    if (shared) *shared += outcome.extra_shared;
    table.add_row({planned.keyed.job.kernel->name, config_cell(planned.keyed), specialization_text(planned.keyed.job.spec),
                   planned.keyed.rendered.target, outcome.status, fmt::format("{:.0f}", outcome.ms),
                   std::to_string(outcome.bytes), figure(outcome.stats.registers), figure(shared),
                   figure(outcome.stats.scratch), figure(outcome.stats.spills)});
  }
  table.print();
  if (failed == 0 && compiled == 0 && !plan.jobs.empty())
    fmt::print("all {} code objects were already cached: nothing compiled\n", cached);
  else
    fmt::print("{} compiled ({:.1f} s of compile time), {} already cached, {} failed\n", compiled, compile_ms / 1000.0,
               cached, failed);
  if (emit_dir) {
    write_emit_manifest(*emit_dir, plan, outcomes);
    fmt::print("raw code objects written to {} (index: {})\n", emit_dir->string(), emit_manifest_name);
  }
  if (not_stored > 0) {
    const std::string problem = cache.user_dir_problem();
    std::uint64_t planned_bytes = 0;  // the payloads alone: each entry is a little larger
    for (const Outcome& outcome : outcomes) planned_bytes += outcome.bytes;
    fail(ErrorCode::cache_error, "{} of {} code objects are not stored in {}: {}", not_stored, compiled + cached,
         settings.user_dir->string(),
         !problem.empty() ? problem
         : settings.max_bytes && planned_bytes > settings.max_bytes
             ? fmt::format("the cache cap SAGEJIT_CACHE_MAX_SIZE ({} bytes) is smaller than the entries ({} bytes "
                           "of code objects); raise it (0 = no cap)",
                           settings.max_bytes, planned_bytes)
             : fmt::format("they were stored and then removed by something else ({} KiB of code objects{}): another "
                           "process cleared or pruned this cache while it was filled (sagejit-cache clear/prune, a "
                           "concurrent run's LRU cap), or see the warnings above; run sagejit-precompile again",
                           planned_bytes / 1024,
                           settings.max_bytes ? fmt::format(" under a cap of {} MiB", settings.max_bytes >> 20)
                                              : std::string()));
  }
  if (options.system_cache && failed == 0)
    fmt::print("system cache ready: point SAGEJIT_SYSTEM_CACHE_DIR at {} (or install it as <prefix>/share/sagejit/cache)\n",
               settings.user_dir->string());
  return failed == 0 ? exit_ok : exit_failed;
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  CLI::App app{"Compile sagejit kernels ahead of time (no GPU needed) into the code-object cache, so first calls are "
               "cache hits. See docs/TOOLS.md.",
               "sagejit-precompile"};
  app.set_version_flag("--version", tool_version_string("sagejit-precompile"));
  app.add_option("--arch", options.archs, "Target archs, comma-separated (gfx1201, gfx1200, sm_90, sm_89)")
      ->required()
      ->delimiter(',');
  app.add_option("--compiler", options.compiler, "Compiler for AMD targets (NVIDIA targets always use nvrtc)")
      ->check(CLI::IsMember({"hiprtc", "nvrtc", "clang"}));
  app.add_option("--cache-dir", options.cache_dir, "User cache to fill (default: SAGEJIT_CACHE_DIR, ~/.cache/sagejit)");
  app.add_option("--system-cache", options.system_cache,
                 "Fill DIR laid out as a read-only system cache (e.g. <prefix>/share/sagejit/cache)");
  app.add_option("--emit-dir", options.emit_dir, "Also write each raw code object as <kernel>.<config>.<spec>.<arch>.co|.cubin, indexed in emitted.json");
  app.add_option("--jobs,-j", options.jobs, "Parallel compiles (default: the number of cores)")->check(CLI::Range(1u, 4096u));
  app.add_option("--kernels", options.kernels, "Kernel names or families to build (default: every dispatched kernel)")
      ->delimiter(',');
  app.add_option("--dtype", options.dtypes,
                 fmt::format("Input dtypes to specialize for (default: {})", fmt::join(kernel_dtype_names(), ",")))
      ->delimiter(',')
      ->check(CLI::IsMember(kernel_dtype_names()));
  app.add_option("--head-dim", options.head_dims,
                 "Kernel head dims to specialize for (default: " + kernel_head_dims_text() +
                     "); calls of a smaller head dim run zero-padded on the next of them")
      ->delimiter(',')
      ->check(CLI::IsMember(std::vector<int>(std::begin(kernel_head_dims), std::end(kernel_head_dims))));
  app.add_flag("--all-candidates", options.all_candidates, "Build every config of the tuning space, not just table + default");
  app.add_flag("--all-specializations", options.all_specializations,
               "Also build the LSE-output and key-mask variants (and both together)");
  app.add_flag("--dry-run", options.dry_run, "List what would be built (and what is cached) without compiling");
  add_verbose_flag(app, "cache hits/misses");
  return run_tool(app, argc, argv, [&] { return run(options); });
}
