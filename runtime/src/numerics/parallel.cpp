#include "numerics/parallel.hpp"

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <thread>

#include "core/worker_threads.hpp"

namespace sagejit::numerics {

void parallel_for(std::int64_t count, const std::function<void(std::int64_t)>& body) {
  if (count <= 0) return;
  const std::int64_t hardware = std::max(1u, std::thread::hardware_concurrency());
  const std::int64_t workers = std::min(hardware, count);
  std::atomic<std::int64_t> next{0};
  std::exception_ptr first_error;
  std::mutex error_mutex;
  auto work = [&] {
    for (std::int64_t i = next++; i < count; i = next++) {
      try {
        body(i);
      } catch (...) {
        std::lock_guard lock(error_mutex);
        if (!first_error) first_error = std::current_exception();
        next = count;  // stop handing out items
      }
    }
  };
  run_worker_threads(static_cast<unsigned>(workers), work, [&] { next = count; }, "the CPU emulator (parallel_for)");
  if (first_error) std::rethrow_exception(first_error);
}

}  // namespace sagejit::numerics
