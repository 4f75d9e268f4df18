#pragma once
// Starting worker threads without std::terminate: the one rule for every fork-join in sagejit (the
// CPU emulator's parallel_for, the tools' compile pools). A thread that cannot be created (the
// process or user limit of threads, RLIMIT_NPROC, or memory) is not fatal to the process: the
// workers that did start are told to stop, joined, and an Error(internal) (the status of
// exhausted host resources, like "out of host memory") names how many
// threads were asked for, how many started and why the next one did not.
#include <functional>
#include <string_view>

namespace sagejit {

// Runs `work` on `threads` threads: threads - 1 new ones and the calling thread, and returns when all
// have returned. `stop` must make running `work` calls return soon (e.g. stop handing out items); it
// is called only when a thread cannot be created, before the started ones are joined, and then
// Error(internal) is thrown. `work` must not throw (catch inside it). `what` names the
// workers in that message ("the CPU emulator", "sagejit-precompile's compile workers").
void run_worker_threads(unsigned threads, const std::function<void()>& work, const std::function<void()>& stop,
                        std::string_view what);

}  // namespace sagejit
