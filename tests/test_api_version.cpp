// The compile-time version macros (<sagejit/version.h>, generated from the CMake project version)
// agree with what the library reports at run time, through both the C++ API and the C ABI.
#include <doctest/doctest.h>

#include <string>
#include <string_view>

#include "sagejit/sagejit.h"
#include "sagejit/sagejit.hpp"

static_assert(SAGEJIT_VERSION == SAGEJIT_VERSION_MAJOR * 10000 + SAGEJIT_VERSION_MINOR * 100 + SAGEJIT_VERSION_PATCH);

TEST_CASE("SAGEJIT_VERSION_* macros equal sagejit::version() and sagejit_version()") {
  const std::string from_parts = std::to_string(SAGEJIT_VERSION_MAJOR) + "." + std::to_string(SAGEJIT_VERSION_MINOR) +
                                 "." + std::to_string(SAGEJIT_VERSION_PATCH);
  CHECK(std::string_view(SAGEJIT_VERSION_STRING) == from_parts);
  CHECK(sagejit::version() == SAGEJIT_VERSION_STRING);
  CHECK(std::string_view(sagejit_version()) == SAGEJIT_VERSION_STRING);
}
