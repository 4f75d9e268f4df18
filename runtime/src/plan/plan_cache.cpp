#include "plan/plan_cache.hpp"

#include <bit>
#include <cstdint>
#include <functional>
#include <list>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

namespace sagejit {
namespace {

// What a plan depends on, by value where it is a number and by reference where it is owned
// elsewhere: the probe of a lookup refers to the caller's call and target (nothing copied, nothing
// allocated), a kept entry to its own copies.
struct SignatureRef {
  std::int64_t batch, heads_q, heads_kv, seq_q, seq_kv, head_dim;
  DType dtype;
  std::uint32_t sm_scale_bits;  // bits: a plan for one scale is not another's (NaN never plans)
  bool causal, smooth_k, writes_lse, key_mask;  // key_mask: whether there is one (its pointer and strides do not plan)
  int key_mask_heads;                           // 1, or Hq for a mask per head (its workspace rows)
  bool config_from_table;                       // AttentionCall::attention_config_from_table
  const TileConfig* attention_config;
  const TileConfig* prepare_config;
  std::string_view target;

  bool operator==(const SignatureRef& other) const {
    return batch == other.batch && heads_q == other.heads_q && heads_kv == other.heads_kv && seq_q == other.seq_q &&
           seq_kv == other.seq_kv && head_dim == other.head_dim && dtype == other.dtype &&
           sm_scale_bits == other.sm_scale_bits && causal == other.causal && smooth_k == other.smooth_k &&
           writes_lse == other.writes_lse && key_mask == other.key_mask && key_mask_heads == other.key_mask_heads &&
           config_from_table == other.config_from_table && *attention_config == *other.attention_config &&
           *prepare_config == *other.prepare_config && target == other.target;
  }
};

SignatureRef signature_of(const AttentionCall& call, const TileConfig& attention_config,
                          const TileConfig& prepare_config, std::string_view target) {
  return {call.batch,       call.heads_q,   call.heads_kv,
          call.seq_q,       call.seq_kv,    call.head_dim,
          call.dtype,       std::bit_cast<std::uint32_t>(call.sm_scale),
          call.causal,      call.smooth_k,  call.writes_lse(), call.masked_kernels(),
          call.key_mask.heads, call.attention_config_from_table, &attention_config, &prepare_config, target};
}

struct SignatureHash {
  std::size_t operator()(const SignatureRef& s) const noexcept {
    std::size_t hash = std::hash<std::string_view>{}(s.target);
    const auto mix = [&hash](std::size_t value) { hash ^= value + 0x9e3779b97f4a7c15ULL + (hash << 6) + (hash >> 2); };
    for (const std::int64_t value : {s.batch, s.heads_q, s.heads_kv, s.seq_q, s.seq_kv, s.head_dim})
      mix(std::hash<std::int64_t>{}(value));
    mix(static_cast<std::size_t>(s.dtype));
    mix(s.sm_scale_bits);
    mix((s.causal ? 1u : 0u) | (s.smooth_k ? 2u : 0u) | (s.writes_lse ? 4u : 0u) | (s.key_mask ? 8u : 0u) |
        (s.config_from_table ? 16u : 0u));
    mix(std::hash<int>{}(s.key_mask_heads));
    for (const TileConfig* config : {s.attention_config, s.prepare_config})
      for (const auto& [name, value] : *config) {
        mix(std::hash<std::string>{}(name));
        mix(std::hash<int>{}(value));
      }
    return hash;
  }
};

// A kept plan with the copies its signature refers to (list nodes do not move, so the map's keys
// stay valid for as long as the node lives).
struct Entry {
  TileConfig attention_config, prepare_config;
  std::string target;
  std::shared_ptr<const AttentionPlan> plan;
  SignatureRef signature{};
};

class PlanCache {
 public:
  std::shared_ptr<const AttentionPlan> get(const AttentionCall& call, const Target& target) {
    const SignatureRef probe = signature_of(call, call.attention_config, call.prepare_config, target.full);
    {
      const std::lock_guard lock(mutex_);
      if (const auto found = index_.find(probe); found != index_.end()) {
        entries_.splice(entries_.begin(), entries_, found->second);  // most recently used first
        return found->second->plan;
      }
    }
    // Planned outside the lock (it reads the tuning tables, which may load them); a thread that
    // planned the same signature meanwhile keeps its plan, and this one is dropped.
    auto plan = std::make_shared<const AttentionPlan>(plan_attention(call, target));
    const std::lock_guard lock(mutex_);
    if (const auto found = index_.find(probe); found != index_.end()) return found->second->plan;
    entries_.push_front(Entry{call.attention_config, call.prepare_config, target.full, std::move(plan), {}});
    Entry& entry = entries_.front();
    entry.signature = signature_of(call, entry.attention_config, entry.prepare_config, entry.target);
    index_.emplace(entry.signature, entries_.begin());
    if (entries_.size() > plan_cache_capacity) {
      index_.erase(entries_.back().signature);
      entries_.pop_back();
    }
    return entry.plan;
  }

  std::size_t size() const {
    const std::lock_guard lock(mutex_);
    return entries_.size();
  }

  void clear() {
    const std::lock_guard lock(mutex_);
    index_.clear();
    entries_.clear();
  }

 private:
  mutable std::mutex mutex_;
  std::list<Entry> entries_;
  std::unordered_map<SignatureRef, std::list<Entry>::iterator, SignatureHash> index_;
};

PlanCache& plan_cache() {
  static PlanCache cache;
  return cache;
}

}  // namespace

std::shared_ptr<const AttentionPlan> cached_plan(const AttentionCall& call, const Target& target) {
  return plan_cache().get(call, target);
}

std::size_t cached_plan_count() { return plan_cache().size(); }

void clear_plan_cache() { plan_cache().clear(); }

}  // namespace sagejit
