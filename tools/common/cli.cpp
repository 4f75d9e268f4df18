#include "common/cli.hpp"

#include <unistd.h>

#include <exception>

#include <fmt/format.h>

#include "core/build_report.hpp"
#include "core/env.hpp"
#include "common/gpu_session.hpp"
#include "core/error.hpp"

namespace sagejit::tools {

int run_tool(CLI::App& app, int argc, char** argv, const std::function<int()>& body) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    fmt::print("{}", app.help());
    return exit_ok;
  } catch (const CLI::CallForAllHelp&) {
    fmt::print("{}", app.help("", CLI::AppFormatMode::All));
    return exit_ok;
  } catch (const CLI::CallForVersion&) {
    fmt::print("{}\n", tool_version_string(app.get_name()));
    return exit_ok;
  } catch (const CLI::ParseError& error) {
    fmt::print(stderr, "{}: usage error: {}\nRun '{} --help' for the accepted arguments.\n", app.get_name(),
               error.what(), app.get_name());
    return exit_usage;
  }
  try {
    return body();
  } catch (const CLI::ParseError& error) {  // a check done by the tool after parsing
    fmt::print(stderr, "{}: usage error: {}\n", app.get_name(), error.what());
    return exit_usage;
  } catch (const NoGpu& error) {
    fmt::print(stderr, "{}: {}\n", app.get_name(), error.what());
    return exit_no_gpu;
  } catch (const Error& error) {
    fmt::print(stderr, "{}: error ({}): {}\n", app.get_name(), to_string(error.code()), error.what());
    switch (error.code()) {
      case ErrorCode::invalid_argument: return exit_usage;
      case ErrorCode::runtime_not_found: return exit_environment;
      default: return exit_failed;
    }
  } catch (const std::exception& error) {
    fmt::print(stderr, "{}: error: {}\n", app.get_name(), error.what());
    return exit_failed;
  }
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
