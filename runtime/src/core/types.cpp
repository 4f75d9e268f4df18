#include "sagejit/types.hpp"

namespace sagejit {

// to_string(DType) and element_size: core/kernel_inputs.cpp, from the one dtype table.

std::string_view to_string(Layout layout) noexcept { return layout == Layout::HND ? "HND" : "NHD"; }

}  // namespace sagejit
