#pragma once
// A test case that cannot make its check on this machine says so with SAGEJIT_SKIP(stream expression)
// and returns: the reason is printed, and the executable exits with kSkipExitCode when nothing failed,
// which ctest (SKIP_RETURN_CODE, tests/CMakeLists.txt) counts as "Skipped" in its summary instead of a
// pass. `make test` lists every skip with its reason (tools/scripts/skip_report.py); in CI only GPU
// tests may skip. A check the suite must make (NVRTC compiling sm_90) fails instead of skipping.
#include <sstream>
#include <string>

namespace sagejit::test {

inline constexpr int kSkipExitCode = 77;

// Records `reason` for the running test case (tests/doctest_main.cpp prints it and sets the exit code).
void record_skip(const std::string& reason);

}  // namespace sagejit::test

#define SAGEJIT_SKIP(...)                                        \
  do {                                                           \
    std::ostringstream sagejit_skip_reason;                      \
    sagejit_skip_reason << __VA_ARGS__;                          \
    ::sagejit::test::record_skip(sagejit_skip_reason.str());     \
  } while (0)
