#pragma once
// What every sagejit command-line tool shares: exit codes, and running a CLI11 app so that a usage
// error, a missing GPU, a sagejit::Error and any other exception each end with one clear message and
// a distinct code; the GPU a tool runs on; the --verbose flag.
#include <functional>
#include <stdexcept>
#include <string>
#include <string_view>

#include <CLI/CLI.hpp>

#include "api/device_support.hpp"

namespace sagejit::tools {

// Exit codes of every tool (docs/TOOLS.md). Only `ok` means success.
enum ExitCode : int {
  exit_ok = 0,
  exit_failed = 1,       // the work ran and something failed (a compile, a check, a bad cache entry)
  exit_usage = 2,        // bad command line: the message names the argument
  exit_no_gpu = 3,       // the command needs a GPU and none (or no GPU runtime) was found
  exit_environment = 4,  // a compiler, runtime library or directory the command needs is unusable
};

// Thrown when a tool needs a GPU and there is none; run_tool turns it into exit_no_gpu and a message
// saying so.
struct NoGpu : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The GPU the selftest and the autotuner run on: the default backend's device `ordinal` (sagejit's own
// choice: CUDA, then HIP). Throws NoGpu when no runtime loads or it has no device;
// sagejit::Error(unsupported) when the device's arch has no kernels.
CallDevice require_gpu(int ordinal);

// --verbose,-v: log at info level (as SAGEJIT_LOG=info does) from the moment it is parsed; `shows`
// says what that shows for this tool, e.g. "kernel choices and cache hits".
void add_verbose_flag(CLI::App& app, const std::string& shows);

// Parses argv into `app`, then runs `body` and returns its exit code. --help prints and returns 0;
// every error is one line "<tool>: error (<kind>): <message>" on stderr (docs/TOOLS.md): a parse
// error gives CLI11's message naming the argument (kind "invalid argument", plus a pointer to --help)
// and exit_usage; a sagejit::Error is mapped to an exit code (invalid_argument -> usage,
// runtime_not_found -> environment, others -> failed). Standard streams closed at start are reopened
// on /dev/null; stdout that could not be written (closed, /dev/full) turns success into exit_failed.
int run_tool(CLI::App& app, int argc, char** argv, const std::function<int()>& body);

// Writes `text` to stderr and never throws (fmt::print throws on a failed write): a message that
// cannot be written is dropped. Every tool message on stderr goes through here.
void print_stderr(std::string_view text) noexcept;
// "<tool>: error (invalid argument): <message>; run '<tool> --help' for the accepted arguments".
void print_usage_error(const std::string& tool, std::string_view message) noexcept;

// "sagejit-precompile 0.1.0" for the current tool (used in tables the tools write).
std::string tool_version_string(const std::string& tool_name);

// True when stderr is a terminal (progress bars) and TERM is not "dumb".
bool stderr_is_terminal();

}  // namespace sagejit::tools
