#include "platform/subprocess.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <string_view>
#include <thread>

#include <fmt/format.h>

#include "core/env.hpp"
#include "core/error.hpp"

extern char** environ;

namespace sagejit {
namespace {

bool is_executable_file(const std::string& path) {
  struct stat info {};
  return ::stat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

// A posix_spawn object (file actions, attributes) with guaranteed cleanup.
template <typename Object, int (*initialise)(Object*), int (*destroy)(Object*)>
class SpawnObject {
 public:
  SpawnObject() { initialise(&object_); }
  ~SpawnObject() { destroy(&object_); }
  SpawnObject(const SpawnObject&) = delete;
  SpawnObject& operator=(const SpawnObject&) = delete;
  Object* get() { return &object_; }

 private:
  Object object_{};
};
using FileActions =
    SpawnObject<posix_spawn_file_actions_t, ::posix_spawn_file_actions_init, ::posix_spawn_file_actions_destroy>;
using SpawnAttributes = SpawnObject<posix_spawnattr_t, ::posix_spawnattr_init, ::posix_spawnattr_destroy>;

void require_ok(int result, const char* what) {
  if (result != 0) fail(ErrorCode::internal, "{} failed: {}", what, std::strerror(result));
}

}  // namespace

std::string find_executable(const std::string& program) {
  if (program.empty()) return {};
  if (program.find('/') != std::string::npos) return is_executable_file(program) ? program : std::string();
  const std::string path = env::get("PATH").value_or("/usr/local/bin:/usr/bin:/bin");
  std::string_view remaining = path;
  while (true) {
    const std::size_t colon = remaining.find(':');
    const std::string_view directory = remaining.substr(0, colon);
    const std::string candidate = fmt::format("{}/{}", directory.empty() ? std::string_view(".") : directory, program);
    if (is_executable_file(candidate)) return candidate;
    if (colon == std::string_view::npos) return {};
    remaining.remove_prefix(colon + 1);
  }
}

int run_process(const std::vector<std::string>& argv, const std::string& output_file,
                const std::string& working_directory, std::chrono::milliseconds timeout) {
  if (argv.empty()) fail(ErrorCode::internal, "run_process: empty argv");
  FileActions actions;
  require_ok(::posix_spawn_file_actions_addopen(actions.get(), STDIN_FILENO, "/dev/null", O_RDONLY, 0),
             "posix_spawn_file_actions_addopen(stdin)");
  require_ok(::posix_spawn_file_actions_addopen(actions.get(), STDOUT_FILENO, output_file.c_str(),
                                                O_WRONLY | O_CREAT | O_TRUNC, 0600),
             "posix_spawn_file_actions_addopen(stdout)");
  require_ok(::posix_spawn_file_actions_adddup2(actions.get(), STDOUT_FILENO, STDERR_FILENO),
             "posix_spawn_file_actions_adddup2(stderr)");
  if (!working_directory.empty())
    require_ok(::posix_spawn_file_actions_addchdir_np(actions.get(), working_directory.c_str()),
               "posix_spawn_file_actions_addchdir_np");

  std::vector<char*> arguments;
  for (const auto& argument : argv) arguments.push_back(const_cast<char*>(argument.c_str()));
  arguments.push_back(nullptr);

  // Its own process group, so a timeout kills the compiler and everything it started (cc1, lld).
  SpawnAttributes attributes;
  require_ok(::posix_spawnattr_setpgroup(attributes.get(), 0), "posix_spawnattr_setpgroup");
  require_ok(::posix_spawnattr_setflags(attributes.get(), POSIX_SPAWN_SETPGROUP), "posix_spawnattr_setflags");

  pid_t pid = 0;
  const int spawned = ::posix_spawn(&pid, argv[0].c_str(), actions.get(), attributes.get(), arguments.data(), environ);
  if (spawned != 0)
    fail(ErrorCode::runtime_not_found, "could not start '{}': {}", argv[0], std::strerror(spawned));

  // Poll with a growing pause (a compile takes seconds): no signal handler or thread is needed.
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  auto pause = std::chrono::milliseconds(1);
  int status = 0;
  while (true) {
    const pid_t done = ::waitpid(pid, &status, WNOHANG);
    if (done == pid) break;
    if (done < 0 && errno != EINTR) fail(ErrorCode::internal, "waitpid for '{}' failed: {}", argv[0], std::strerror(errno));
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) {
      ::kill(-pid, SIGKILL);
      while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
      throw ProcessTimeout(fmt::format("'{}' did not finish within {} s and was killed", argv[0],
                                       std::chrono::duration_cast<std::chrono::seconds>(timeout).count()));
    }
    std::this_thread::sleep_for(std::min(pause, std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now)));
    pause = std::min(pause * 2, std::chrono::milliseconds(50));
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 255;
}

}  // namespace sagejit
