#pragma once
// Tile parameters of one kernel config, e.g. {"block_n": 64, "warps": 4}: the value type the tuning
// tables produce, the descriptors check and the JIT keys on. Ordered, so the id is stable.
#include <map>
#include <string>

namespace sagejit {

using TileConfig = std::map<std::string, int>;

// "block_n=64,pv=1,warps=4" (keys sorted). Used in cache-entry names, logs and the autotuner.
inline std::string config_id(const TileConfig& config) {
  std::string id;
  for (const auto& [name, value] : config) {  // std::map: keys already sorted, so the id is stable
    if (!id.empty()) id += ',';
    id += name + '=' + std::to_string(value);
  }
  return id;
}

// The config's value of `name`, or `fallback` when the config does not set it.
inline int config_param(const TileConfig& config, const std::string& name, int fallback) {
  const auto it = config.find(name);
  return it == config.end() ? fallback : it->second;
}

}  // namespace sagejit
