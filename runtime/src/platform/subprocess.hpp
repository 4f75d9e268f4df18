#pragma once
// Running an external program (the offline clang compiler) without a shell: no quoting problems,
// no injection through kernel names or paths, and the exit status is the program's own.
#include <chrono>
#include <stdexcept>
#include <string>
#include <vector>

namespace sagejit {

// Finds `program` like execvp would: used as is when it contains '/', else searched in $PATH.
// Returns an empty string when nothing executable is found.
std::string find_executable(const std::string& program);

// Thrown by run_process when the program outlived its timeout (it and its process group were killed).
class ProcessTimeout : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Runs argv[0] (a path) with argv, stdin from /dev/null, stdout and stderr both into `output_file`,
// in `working_directory` (empty: inherit), in a process group of its own. Returns the exit status
// (128 + signal when killed). Throws Error(runtime_not_found) when the program cannot be started,
// ProcessTimeout after killing the group when it runs longer than `timeout`.
int run_process(const std::vector<std::string>& argv, const std::string& output_file,
                const std::string& working_directory = {},
                std::chrono::milliseconds timeout = std::chrono::hours(24 * 7));

}  // namespace sagejit
