// Starting worker threads under a process limit (RLIMIT_NPROC): a thread that cannot be created is
// Error(internal) after the started ones are joined, never std::terminate (which a joinable
// std::thread destroyed by a failed emplace_back used to run). Each case runs in a forked child that
// becomes uid 65534 with a small RLIMIT_NPROC (the limit does not bind root), so that some threads
// start and a later one fails; the child reports what it saw through its exit status.
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <thread>

#include <doctest/doctest.h>

#include "skip_support.hpp"

#include "core/error.hpp"
#include "core/worker_threads.hpp"
#include "numerics/parallel.hpp"

namespace {

constexpr uid_t unprivileged = 65534;  // "nobody"

enum Outcome : int { named_error = 10, returned = 11, other_error = 12, setup_failed = 13 };

// Runs `body` in a child limited to `tasks` tasks of an unprivileged user; its Outcome, or 128 + signal.
// (Other processes of that user count too: the failure may come earlier, never later.)
int outcome_under_thread_limit(rlim_t tasks, const std::function<void()>& body) {
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    const rlimit limit{tasks, tasks};
    if (::setgid(unprivileged) != 0 || ::setuid(unprivileged) != 0 || ::setrlimit(RLIMIT_NPROC, &limit) != 0)
      ::_exit(setup_failed);
    try {
      body();
      ::_exit(returned);
    } catch (const sagejit::Error& error) {
      const std::string message = error.what();
      const bool named = error.code() == sagejit::ErrorCode::internal &&
                         message.find("RLIMIT_NPROC") != std::string::npos && message.find("could not start thread") != std::string::npos;
      ::_exit(named ? named_error : other_error);
    } catch (...) {
      ::_exit(other_error);
    }
  }
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace

TEST_CASE("run_worker_threads: a thread that cannot be created is Error(internal), not an abort") {
  if (::geteuid() != 0) {
    SAGEJIT_SKIP("needs root to become an unprivileged user with a process limit");
    return;
  }
  std::atomic<int> items{0};
  // 3 tasks: the child and 2 workers start, the third worker cannot (a joinable std::thread to join).
  const int outcome = outcome_under_thread_limit(3, [&] {
    std::atomic<bool> stop{false};
    sagejit::run_worker_threads(8, [&] { while (!stop && items < 1000) ++items; }, [&] { stop = true; }, "the test's workers");
  });
  CHECK_MESSAGE(outcome == named_error, "child outcome " << outcome << " (134 = SIGABRT from std::terminate)");
}

TEST_CASE("parallel_for (the CPU emulator's loop) under a process limit: a named error") {
  if (::geteuid() != 0) {
    SAGEJIT_SKIP("needs root to become an unprivileged user with a process limit");
    return;
  }
  const int outcome = outcome_under_thread_limit(1, [] {
    sagejit::numerics::parallel_for(64, [](std::int64_t) {});
  });
  // One hardware thread: parallel_for starts no thread and simply runs (nothing to test there).
  if (std::thread::hardware_concurrency() <= 1) {
    CHECK(outcome == returned);
  } else {
    CHECK_MESSAGE(outcome == named_error, "child outcome " << outcome << " (134 = SIGABRT from std::terminate)");
  }
}

TEST_CASE("run_worker_threads without a limit runs work on every thread and never calls stop") {
  std::atomic<int> runs{0};
  bool stopped = false;
  sagejit::run_worker_threads(5, [&] { ++runs; }, [&] { stopped = true; }, "the test's workers");
  CHECK(runs == 5);
  CHECK(!stopped);
  runs = 0;
  sagejit::run_worker_threads(1, [&] { ++runs; }, [&] { stopped = true; }, "the test's workers");
  CHECK(runs == 1);
}
