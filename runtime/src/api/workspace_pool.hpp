#pragma once
// The runtime's own workspaces: one device buffer per (backend, device, stream), grown on demand and
// reused, so the steady state allocates nothing. A buffer is leased for the time it takes to enqueue
// one call's kernels: another thread on the same stream waits, so a buffer is never freed or grown
// while a call is about to use it; work already enqueued on the stream is ordered before any later
// use, and before freeing a buffer we wait for the stream.
//
// Graph capture (docs/API.md, "Graph capture"): a call on a stream that is being captured only
// leases a buffer that is already large enough (launch-only); growth during capture is an error,
// because allocating, freeing or waiting would break the capture. A buffer that was leased during a
// capture may be used by that graph whenever it is launched, so it is never freed when the slot grows
// later: it is kept (retired) until release_all().
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <tuple>
#include <vector>

#include "device/device.hpp"

namespace sagejit {

class WorkspacePool {
 public:
  // Holds a workspace of at least the requested size until destroyed.
  class Lease {
   public:
    void* data() const noexcept { return data_; }

   private:
    friend class WorkspacePool;
    Lease(std::unique_lock<std::mutex> lock, void* data) : lock_(std::move(lock)), data_(data) {}
    std::unique_lock<std::mutex> lock_;
    void* data_;
  };

  // A workspace of >= bytes for `stream` on `ordinal`. Throws Error(device_error) when the device
  // cannot allocate it (the message names the size), Error(unsupported) when it would have to grow
  // while `stream` is being captured (the message says how to warm it up).
  Lease acquire(Device& backend, int ordinal, Stream stream, std::size_t bytes);
  // Waits for each stream's work and frees every buffer, retired ones included. Graphs that captured
  // a call using them must not be launched afterwards. Throws Error(unsupported), freeing nothing,
  // while one of the pool's streams is being captured.
  void release_all();
  // Bytes of device memory held, retired buffers included.
  std::size_t bytes_held() const;

 private:
  struct Slot {
    std::mutex mutex;  // held while a call enqueues work that uses `data`
    void* data = nullptr;
    std::size_t bytes = 0;
    bool captured = false;  // `data` was leased during a graph capture
    struct Retired {
      void* data;
      std::size_t bytes;
    };
    std::vector<Retired> retired;  // outgrown buffers a captured graph may still use
  };
  // The thread is part of the key only for the per-thread default stream (CU_STREAM_PER_THREAD /
  // hipStreamPerThread, handle 0x2): one handle, but a different stream in every thread.
  using SlotKey = std::tuple<Device*, int, Stream, std::thread::id>;

  mutable std::mutex slots_mutex_;  // guards the map itself, never held while waiting on a slot
  std::map<SlotKey, std::unique_ptr<Slot>> slots_;
};

// The per-thread default stream handle of both CUDA and HIP.
inline const Stream per_thread_default_stream = reinterpret_cast<Stream>(std::uintptr_t{2});

// The process-wide pool. Never destroyed: freeing device memory during static destruction, after
// the GPU runtime may have shut down, would crash; the OS reclaims it at exit.
WorkspacePool& workspace_pool();

}  // namespace sagejit
