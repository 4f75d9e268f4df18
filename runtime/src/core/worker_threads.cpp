#include "core/worker_threads.hpp"

#include <system_error>
#include <thread>
#include <vector>

#include "core/error.hpp"

namespace sagejit {

void run_worker_threads(unsigned threads, const std::function<void()>& work, const std::function<void()>& stop,
                        std::string_view what) {
  std::vector<std::thread> started;
  std::string failure;
  try {
    started.reserve(threads > 0 ? threads - 1 : 0);
    for (unsigned t = 1; t < threads; ++t) started.emplace_back(work);
  } catch (const std::system_error& error) {  // std::thread's constructor: EAGAIN (limits), ENOMEM
    failure = error.what();
  } catch (const std::bad_alloc&) {
    failure = "out of host memory";
  }
  if (failure.empty()) {
    work();
  } else {
    stop();  // never run work on a partial crew: the caller asked for a number of threads and gets an error
  }
  for (std::thread& thread : started) thread.join();  // a joinable std::thread must never be destroyed
  if (!failure.empty())
    fail(ErrorCode::internal,
         "{}: could not start thread {} of {} ({}); the process or user limit of threads (ulimit -u, RLIMIT_NPROC) "
         "or memory is exhausted. Raise the limit or ask for fewer threads",
         what, started.size() + 2, threads, failure);
}

}  // namespace sagejit
