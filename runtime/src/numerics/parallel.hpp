#pragma once
// A minimal fork-join loop for the CPU oracles: runs body(i) for i in [0, count) on
// std::thread::hardware_concurrency() threads (items claimed dynamically, so uneven items such as
// causal query blocks balance). The first exception thrown by a body is rethrown to the caller; a
// thread that cannot be started is Error(internal) (core/worker_threads.hpp).
#include <cstdint>
#include <functional>

namespace sagejit::numerics {

void parallel_for(std::int64_t count, const std::function<void(std::int64_t)>& body);

}  // namespace sagejit::numerics
