// The public API's part in choosing the GPU runtime libraries: the host's search directories
// (sagejit::set_library_search_dirs); the rule itself is platform/runtime_discovery.
#include "platform/runtime_discovery.hpp"
#include "sagejit/sagejit.hpp"

namespace sagejit {

void set_library_search_dirs(const std::vector<std::string>& directories) { hand_over_library_dirs(directories); }

}  // namespace sagejit
