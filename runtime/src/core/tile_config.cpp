#include <fmt/format.h>

#include "core/tile_config.hpp"

namespace sagejit {

std::string config_id(const TileConfig& config) {
  std::string id;
  for (const auto& [name, value] : config) {  // std::map: keys already sorted, so the id is stable
    if (!id.empty()) id += ',';
    id += fmt::format("{}={}", name, value);
  }
  return id;
}

}  // namespace sagejit
