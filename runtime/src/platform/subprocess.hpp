#pragma once
// Running an external program (the offline clang compiler) without a shell: no quoting problems,
// no injection through kernel names or paths, and the exit status is the program's own.
#include <string>
#include <vector>

namespace sagejit {

// Finds `program` like execvp would: used as is when it contains '/', else searched in $PATH.
// Returns an empty string when nothing executable is found.
std::string find_executable(const std::string& program);

// Runs argv[0] (a path) with argv, stdin from /dev/null, stdout and stderr both into `output_file`,
// in `working_directory` (empty: inherit). Returns the exit status (128 + signal when killed).
// Throws Error(runtime_not_found) when the program cannot be started.
int run_process(const std::vector<std::string>& argv, const std::string& output_file,
                const std::string& working_directory = {});

}  // namespace sagejit
