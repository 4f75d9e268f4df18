#pragma once
// What every sagejit command-line tool shares: exit codes, and running a CLI11 app so that a usage
// error, a sagejit::Error and any other exception each end with one clear message and a distinct code.
#include <functional>
#include <string>

#include <CLI/CLI.hpp>

namespace sagejit::tools {

// Exit codes of every tool (docs/TOOLS.md). Only `ok` means success.
enum ExitCode : int {
  exit_ok = 0,
  exit_failed = 1,       // the work ran and something failed (a compile, a check, a bad cache entry)
  exit_usage = 2,        // bad command line: the message names the argument
  exit_no_gpu = 3,       // the command needs a GPU and none (or no GPU runtime) was found
  exit_environment = 4,  // a compiler, runtime library or directory the command needs is unusable
};

// Parses argv into `app`, then runs `body` and returns its exit code. --help prints and returns 0;
// parse errors print CLI11's message naming the argument (plus a pointer to --help) and return
// exit_usage; a sagejit::Error is printed as "<tool>: error: <message>" and mapped to an exit code
// (invalid_argument -> usage, runtime_not_found -> environment, others -> failed).
int run_tool(CLI::App& app, int argc, char** argv, const std::function<int()>& body);

// "sagejit-precompile 0.1.0" for the current tool (used in tables the tools write).
std::string tool_version_string(const std::string& tool_name);

// True when stderr is a terminal (progress bars) and TERM is not "dumb".
bool stderr_is_terminal();

}  // namespace sagejit::tools
