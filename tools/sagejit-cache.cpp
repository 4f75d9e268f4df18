// sagejit-cache: inspect and maintain the code-object cache (docs/CACHE.md):
//   stat | list | verify [--fix] | prune --max-size SIZE | clear
// The user cache is the one the runtime uses (SAGEJIT_CACHE_DIR, XDG_CACHE_HOME, HOME) unless
// --cache-dir names another; the read-only system cache is listed and verified but never modified.
#include <ctime>
#include <filesystem>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cache/code_cache.hpp"
#include "support/cache_stats_table.hpp"
#include "support/cli.hpp"
#include "support/summary_table.hpp"
#include "core/error.hpp"
#include "dev/cache_admin.hpp"

namespace fs = std::filesystem;
using namespace sagejit;
using namespace sagejit::tools;

namespace {

struct Options {
  std::optional<std::string> cache_dir;
  std::optional<std::string> system_cache;
  bool fix = false;
  std::string max_size;
};

std::string date_text(std::int64_t unix_seconds) {
  const std::time_t time = static_cast<std::time_t>(unix_seconds);
  std::tm utc{};
  gmtime_r(&time, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%d %H:%M", &utc);
  return text;
}

CodeCache open_cache(const Options& options) {
  CodeCacheSettings settings = CodeCacheSettings::from_environment();
  if (options.cache_dir) settings.user_dir = fs::path(*options.cache_dir);
  if (options.system_cache) settings.system_dir = fs::path(*options.system_cache);
  settings.create_user_dir = false;  // inspecting or cleaning a cache never creates one
  if (!settings.user_dir && !settings.system_dir)
    fail(ErrorCode::cache_error,
         "no cache directory: SAGEJIT_DISABLE_CACHE is set or neither SAGEJIT_CACHE_DIR, XDG_CACHE_HOME nor HOME is; "
         "give --cache-dir DIR");
  return CodeCache(settings);
}

// The user dir must be usable for commands that change it; say why not, naming the dir. A dir that
// does not exist has nothing to change: nullopt after saying so.
std::optional<fs::path> require_user_dir(const CodeCache& cache) {
  if (const auto dir = cache.active_user_dir()) return *dir;
  const CacheStats stats = cache_stat(cache);
  const std::string dir = stats.user_dir ? stats.user_dir->string() : std::string("(none)");
  if (stats.user_dir && !fs::exists(fs::symlink_status(*stats.user_dir))) {
    fmt::print("nothing to do: user cache {} does not exist\n", dir);
    return std::nullopt;
  }
  fail(ErrorCode::cache_error, "user cache {} is not usable: {}", dir, stats.user_dir_problem);
}

int stat_command(const Options& options) {
  CodeCache cache = open_cache(options);
  const CacheStats stats = cache_stat(cache);
  cache_stats_table(stats).print();
  if (stats.temp_files) fmt::print("{} temp file(s) left by interrupted writers (removed by verify --fix or prune)\n", stats.temp_files);
  return exit_ok;
}

int list_command(const Options& options) {
  CodeCache cache = open_cache(options);
  const auto entries = cache_list(cache);
  SummaryTable table({{"where"}, {"kernel"}, {"config"}, {"target"}, {"compiler"},
                      {"size", SummaryTable::Align::right}, {"compile ms", SummaryTable::Align::right}, {"used (UTC)"},
                      {"state"}});
  std::uint64_t bytes = 0;
  for (const CacheEntryInfo& entry : entries) {
    bytes += entry.size;
    if (entry.valid)
      table.add_row({entry.system ? "system" : "user", entry.label.kernel, entry.label.config, entry.label.target,
                     entry.label.compiler, human_bytes(entry.size), fmt::format("{:.0f}", entry.label.compile_ms),
                     date_text(entry.mtime_unix), "ok"});
    else
      table.add_row({entry.system ? "system" : "user", "?", entry.path.filename().string(), "?", "?",
                     human_bytes(entry.size), "-", date_text(entry.mtime_unix), "BAD: " + entry.problem});
  }
  table.print();
  fmt::print("{} entries, {}\n", entries.size(), human_bytes(bytes));
  return exit_ok;
}

int verify_command(const Options& options) {
  CodeCache cache = open_cache(options);
  if (options.fix && !cache.active_user_dir()) require_user_dir(cache);
  const VerifyReport report = cache_verify(cache, options.fix);
  for (const CacheEntryInfo& bad : report.bad)
    fmt::print("BAD {} entry {}: {}{}\n", bad.system ? "system" : "user", bad.path.string(), bad.problem,
               bad.removed ? " (removed; rebuilt on next use)" : "");
  fmt::print("verified {} entries: {} bad{}\n", report.checked, report.bad.size(),
             options.fix ? fmt::format(", {} file(s) removed", report.removed) : std::string());
  if (report.bad.empty()) return exit_ok;
  // With --fix every bad user entry is gone, so the cache is sound again; bad system entries remain
  // (read-only: reinstall or re-run sagejit-precompile --system-cache).
  if (options.fix) {
    for (const CacheEntryInfo& bad : report.bad)
      if (!bad.removed) return exit_failed;
    return exit_ok;
  }
  fmt::print("run 'sagejit-cache verify --fix' to remove the bad entries\n");
  return exit_failed;
}

int prune_command(const Options& options) {
  const std::uint64_t max_bytes = parse_byte_size(options.max_size, "--max-size", "0 removes every entry");
  CodeCache cache = open_cache(options);
  if (!require_user_dir(cache)) return exit_ok;
  const PruneReport report = cache_prune(cache, max_bytes);
  fmt::print("pruned {} entries ({}), {} temp file(s); {} remain\n", report.removed, human_bytes(report.freed_bytes),
             report.temp_removed, human_bytes(report.remaining_bytes));
  return exit_ok;
}

int clear_command(const Options& options) {
  CodeCache cache = open_cache(options);
  const auto dir = require_user_dir(cache);
  if (!dir) return exit_ok;
  const std::size_t removed = cache_clear(cache);
  fmt::print("removed {} file(s) from {}\n", removed, dir->string());
  return exit_ok;
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  CLI::App app{"Inspect and maintain the sagejit code-object cache. See docs/TOOLS.md.", "sagejit-cache"};
  app.set_version_flag("--version", tool_version_string("sagejit-cache"));
  app.require_subcommand(1);
  app.add_option("--cache-dir", options.cache_dir, "User cache directory (default: SAGEJIT_CACHE_DIR, ~/.cache/sagejit)");
  app.add_option("--system-cache", options.system_cache, "System cache directory (default: SAGEJIT_SYSTEM_CACHE_DIR)");
  CLI::App* stat = app.add_subcommand("stat", "Directories, entry counts and sizes");
  CLI::App* list = app.add_subcommand("list", "Every entry: kernel, config, target, compiler, size, last use");
  CLI::App* verify = app.add_subcommand("verify", "Check every entry; exit 1 if any is bad");
  verify->add_flag("--fix", options.fix, "Remove bad user entries and stale temp files (they are rebuilt on next use)");
  CLI::App* prune = app.add_subcommand("prune", "Remove least-recently-used user entries until the cache fits");
  prune->add_option("--max-size", options.max_size, "Size to prune to: bytes or 512K, 300M, 2G (0 removes every entry)")->required();
  CLI::App* clear = app.add_subcommand("clear", "Remove every user entry");
  // CLI11 reports an unknown word in the subcommand's place only as "a subcommand is required"; name it.
  for (int i = 1; i < argc; ++i) {
    const std::string word = argv[i];
    if (word == "--cache-dir" || word == "--system-cache") {
      ++i;
      continue;
    }
    if (word.empty() || word[0] == '-') continue;
    if (word != "stat" && word != "list" && word != "verify" && word != "prune" && word != "clear") {
      print_usage_error("sagejit-cache",
                        fmt::format("unknown command \"{}\" (commands: stat, list, verify, prune, clear)", word));
      return exit_usage;
    }
    break;
  }
  return run_tool(app, argc, argv, [&]() -> int {
    if (stat->parsed()) return stat_command(options);
    if (list->parsed()) return list_command(options);
    if (verify->parsed()) return verify_command(options);
    if (prune->parsed()) return prune_command(options);
    if (clear->parsed()) return clear_command(options);
    return exit_usage;
  });
}
