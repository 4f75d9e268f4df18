#include "support/cli.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>

#include <fmt/format.h>

#include "core/build_report.hpp"
#include "core/env.hpp"
#include "core/error.hpp"
#include "core/log.hpp"

namespace sagejit::tools {
namespace {

// A tool started with 0, 1 or 2 closed would hand that number to the next file it opens (a cache
// entry, a lock file) and then log into it. Opens /dev/null on each closed one; true when stdout
// was closed (its output then went nowhere, which the exit code must say).
bool reopen_closed_standard_streams() {
  bool stdout_closed = false;
  for (int fd = 0; fd <= 2; ++fd) {
    if (::fcntl(fd, F_GETFD) >= 0 || errno != EBADF) continue;
    if (fd == STDOUT_FILENO) stdout_closed = true;
    const int opened = ::open("/dev/null", fd == STDIN_FILENO ? O_RDONLY : O_WRONLY);
    if (opened >= 0 && opened != fd) ::close(opened);  // cannot happen: open takes the lowest free number
  }
  return stdout_closed;
}

int parse_and_run(CLI::App& app, int argc, char** argv, const std::function<int()>& body) {
  const std::string name = app.get_name();
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    fmt::print("{}", app.help());
    return exit_ok;
  } catch (const CLI::CallForAllHelp&) {
    fmt::print("{}", app.help("", CLI::AppFormatMode::All));
    return exit_ok;
  } catch (const CLI::CallForVersion&) {
    fmt::print("{}\n", tool_version_string(name));
    return exit_ok;
  } catch (const CLI::ParseError& error) {
    print_usage_error(name, error.what());
    return exit_usage;
  }
  try {
    return body();
  } catch (const CLI::ParseError& error) {  // a check done by the tool after parsing
    print_usage_error(name, error.what());
    return exit_usage;
  } catch (const NoGpu& error) {
    print_stderr(fmt::format("{}: error (no GPU): {}\n", name, error.what()));
    return exit_no_gpu;
  } catch (const Error& error) {
    print_stderr(fmt::format("{}: error ({}): {}\n", name, to_string(error.code()), error.what()));
    switch (error.code()) {
      case ErrorCode::invalid_argument: return exit_usage;
      case ErrorCode::runtime_not_found: return exit_environment;
      default: return exit_failed;
    }
  } catch (const std::exception& error) {
    print_stderr(fmt::format("{}: error ({}): {}\n", name, to_string(ErrorCode::internal), error.what()));
    return exit_failed;
  }
}

}  // namespace

void print_stderr(std::string_view text) noexcept {
  // fwrite, not fmt::print: fmt throws when the write fails, and an error handler or a worker thread
  // that throws ends the process in std::terminate. A message that cannot be written is dropped.
  std::fwrite(text.data(), 1, text.size(), stderr);
  std::fflush(stderr);
  std::clearerr(stderr);
}

void print_usage_error(const std::string& tool, std::string_view message) noexcept {
  try {
    print_stderr(fmt::format("{}: error ({}): {}; run '{} --help' for the accepted arguments\n", tool,
                             to_string(ErrorCode::invalid_argument), message, tool));
  } catch (...) {
  }
}

CallDevice require_gpu(int ordinal) {
  try {
    return resolve_device(ordinal);
  } catch (const Error& error) {
    if (error.code() == ErrorCode::runtime_not_found)
      throw NoGpu(fmt::format("no GPU: no GPU runtime could be loaded ({})", error.what()));
    throw;
  }
}

void add_verbose_flag(CLI::App& app, const std::string& shows) {
  app.add_flag_callback("--verbose,-v", [] { log::set_level(log::Level::info); },
                        fmt::format("Log {} (SAGEJIT_LOG=info)", shows));
}

int run_tool(CLI::App& app, int argc, char** argv, const std::function<int()>& body) {
  const bool stdout_closed = reopen_closed_standard_streams();
  int code = exit_failed;
  try {
    code = parse_and_run(app, argc, argv, body);
  } catch (...) {  // only a failure to format an error message (out of memory) gets here
    print_stderr("error: out of memory while reporting an error\n");
  }
  // Output that did not reach stdout (a full disk, /dev/full, a closed stdout) is a failure too.
  const bool flush_failed = std::fflush(stdout) != 0;
  const int flush_error = errno;
  if (flush_failed || std::ferror(stdout) != 0 || stdout_closed) {
    const std::string reason = stdout_closed  ? std::string("it is closed")
                               : flush_failed ? std::string(std::strerror(flush_error))
                                              : std::string("a write failed");
    try {
      print_stderr(fmt::format("{}: error (output): cannot write the standard output: {}\n", app.get_name(), reason));
    } catch (...) {
    }
    return code == exit_ok ? exit_failed : code;
  }
  return code;
}

std::string tool_version_string(const std::string& tool_name) {
  return fmt::format("{} {}", tool_name, build_report().version);
}

bool stderr_is_terminal() {
  if (isatty(STDERR_FILENO) == 0) return false;
  const auto term = env::get("TERM");
  return !term || *term != "dumb";
}

}  // namespace sagejit::tools
