#pragma once
// Plan once, launch many: repeated attention calls of one signature share one plan. A plan is a pure
// function of the call's signature (the fields plan_attention reads: sizes, dtype, causal, sm_scale,
// smooth_k, whether an LSE is written, the explicit configs) and of the full target; pointers and
// strides are not in it. The tuning tables it consults (shipped + SAGEJIT_CONFIG_PATH overlays) are
// loaded at their first successful use and never change after (tuning_tables()); a call that fails
// (a bad overlay included) is not kept, so an overlay fixed after a failed load is the one its plans
// follow (tests/test_plan_cache_overlay.cpp). The full target is part of the key (a new device of
// another target plans anew; the kernels are loaded per device and ordinal by the JIT), so a kept
// plan never goes stale.
#include <cstddef>
#include <memory>

#include "core/target.hpp"
#include "plan/attention_plan.hpp"

namespace sagejit {

// The signatures kept (least recently used dropped first). A diffusion pipeline has a few dozen.
inline constexpr std::size_t plan_cache_capacity = 256;

// plan_attention(call, target), computed once per signature and kept in a process-wide, thread-safe
// LRU of plan_cache_capacity signatures. A repeated signature is one hash lookup with no allocation.
// Throws like plan_attention; a call that fails is not kept (it fails the same way every time).
std::shared_ptr<const AttentionPlan> cached_plan(const AttentionCall& call, const Target& target);

// The signatures kept now, and dropping them all (tests).
std::size_t cached_plan_count();
void clear_plan_cache();

}  // namespace sagejit
