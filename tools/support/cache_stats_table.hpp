#pragma once
// The table of the user and system code-object caches (directory, state, entries, size, cap), as
// `sagejit-cache stat` and sagejit-info both print it.
#include "dev/cache_admin.hpp"
#include "support/summary_table.hpp"

namespace sagejit::tools {

SummaryTable cache_stats_table(const CacheStats& stats);

}  // namespace sagejit::tools
