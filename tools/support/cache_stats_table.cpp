#include "support/cache_stats_table.hpp"

#include <string>

namespace sagejit::tools {

SummaryTable cache_stats_table(const CacheStats& stats) {
  SummaryTable table({{"cache"}, {"directory"}, {"state"}, {"entries", SummaryTable::Align::right},
                      {"size", SummaryTable::Align::right}, {"cap", SummaryTable::Align::right}});
  table.add_row({"user", stats.user_dir ? stats.user_dir->string() : "(none)",
                 stats.user_dir_problem.empty() ? (stats.user_dir ? "in use" : "memory only") : stats.user_dir_problem,
                 std::to_string(stats.user_entries), human_bytes(stats.user_bytes),
                 stats.max_bytes ? human_bytes(stats.max_bytes) : "unlimited"});
  table.add_row({"system", stats.system_dir ? stats.system_dir->string() : "(none)",
                 stats.system_dir_problem.empty() ? (stats.system_dir ? "searched first" : "-") : stats.system_dir_problem,
                 std::to_string(stats.system_entries), human_bytes(stats.system_bytes), "read-only"});
  return table;
}

}  // namespace sagejit::tools
