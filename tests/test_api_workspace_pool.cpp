// The runtime's own workspace (api/workspace_pool): grows on demand, is reused without allocating,
// is separate per (device, stream), waits for the stream before freeing, is safe under threads, and
// under graph capture only leases, never frees a buffer a graph captured, and refuses to grow.
// A fake Device counts allocations; no GPU is needed.
#include <doctest/doctest.h>

#include <atomic>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "api/workspace_pool.hpp"
#include "api_test_support.hpp"
#include "core/error.hpp"

using namespace sagejit;
using namespace sagejit::test;

namespace {

class CountingDevice final : public Device {
 public:
  Vendor vendor() const override { return Vendor::nvidia; }
  std::string runtime_version() const override { return "fake"; }
  std::string library_path() const override { return "none"; }
  int device_count() const override { return 2; }
  DeviceInfo info(int ordinal) const override { return DeviceInfo{.ordinal = ordinal}; }
  int current_device() const override { return 0; }
  std::unique_ptr<LoadedModule> load_module(int, std::span<const std::byte>) override {
    fail(ErrorCode::internal, "not used");
  }
  void launch(int, void*, const LaunchGeometry&, Stream, void**) override { fail(ErrorCode::internal, "not used"); }
  void* allocate(int, std::size_t bytes) override {
    if (bytes > limit) fail(ErrorCode::device_error, "fake out of memory");
    std::lock_guard lock(mutex);
    ++allocations;
    void* pointer = ::operator new(bytes);
    live.insert(pointer);
    return pointer;
  }
  void free(int, void* pointer) noexcept override {
    std::lock_guard lock(mutex);
    ++frees;
    live.erase(pointer);
    freed.push_back(pointer);  // addresses: the next allocation may reuse one, so `live` cannot tell
    ::operator delete(pointer);
  }
  void copy_to_device(int, void*, const void*, std::size_t) override {}
  void copy_to_host(int, void*, const void*, std::size_t) override {}
  void memset(int, void*, int, std::size_t, Stream) override {}
  void synchronize(int, Stream stream) override {
    ++synchronizations;
    std::lock_guard lock(mutex);
    if (capturing.count(stream) != 0) ++synchronized_while_capturing;  // would break a real capture
  }
  bool stream_is_capturing(int, Stream stream) override {
    std::lock_guard lock(mutex);
    return capturing.count(stream) != 0;
  }
  void* create_event(int) override { return nullptr; }
  void destroy_event(int, void*) noexcept override {}
  void record_event(int, void*, Stream) override {}
  float elapsed_ms(int, void*, void*) override { return 0.0f; }

  std::mutex mutex;
  std::set<void*> live;
  std::vector<void*> freed;  // in order
  std::set<Stream> capturing;  // streams being captured into a graph
  std::atomic<int> allocations{0}, frees{0}, synchronizations{0}, synchronized_while_capturing{0};
  std::size_t limit = std::size_t{1} << 30;
};

Stream stream(std::uintptr_t id) { return reinterpret_cast<Stream>(id); }

// A pool whose workspace on stream 6 was warmed by one lease of a random 1000..100000 bytes, and
// that stream now being captured into a graph.
struct WarmCapture {
  WarmCapture() : buffer(pool.acquire(device, 0, captured_stream, warm).data()), held(pool.bytes_held()) {
    device.capturing.insert(captured_stream);
  }
  CountingDevice device;
  WorkspacePool pool;
  const Stream captured_stream = stream(6);
  const std::size_t warm = static_cast<std::size_t>(random_in(1000, 100000));
  void* buffer;      // the warm-up's lease
  std::size_t held;  // what the pool holds after it
};

}  // namespace

TEST_CASE("the workspace grows on demand and the steady state allocates nothing") {
  CountingDevice device;
  WorkspacePool pool;
  const std::size_t first = static_cast<std::size_t>(random_in(1000, 100000));
  { const auto lease = pool.acquire(device, 0, stream(1), first); CHECK(lease.data() != nullptr); }
  CHECK(device.allocations == 1);
  const std::size_t held = pool.bytes_held();
  CHECK(held >= first);
  for (int call = 0; call < 20; ++call) {
    const auto lease = pool.acquire(device, 0, stream(1), static_cast<std::size_t>(random_in(1, static_cast<std::int64_t>(first))));
    CHECK(device.live.count(lease.data()) == 1);
  }
  CHECK(device.allocations == 1);
  CHECK(device.synchronizations == 0);
  // Growing waits for the stream, frees the old buffer and allocates a bigger one.
  { const auto lease = pool.acquire(device, 0, stream(1), held * 3); CHECK(device.live.count(lease.data()) == 1); }
  CHECK(device.allocations == 2);
  CHECK(device.frees == 1);
  CHECK(device.synchronizations == 1);
  CHECK(pool.bytes_held() >= held * 3);
  pool.release_all();
  CHECK(device.live.empty());
  CHECK(pool.bytes_held() == 0);
}

TEST_CASE("each (device, stream) has its own workspace") {
  CountingDevice device;
  WorkspacePool pool;
  std::set<void*> buffers;
  for (int ordinal : {0, 1})
    for (std::uintptr_t s : {0u, 1u, 2u}) buffers.insert(pool.acquire(device, ordinal, stream(s), 4096).data());
  CHECK(buffers.size() == 6);
  CHECK(device.allocations == 6);
  pool.release_all();
  CHECK(device.frees == 6);
}

TEST_CASE("an allocation failure names the size and leaves the pool usable") {
  CountingDevice device;
  device.limit = 1 << 20;
  WorkspacePool pool;
  const std::string message =
      error_of([&] { (void)pool.acquire(device, 0, stream(3), std::size_t{8} << 20); }, ErrorCode::device_error);
  CHECK_MESSAGE(contains(message, "bytes"), message);
  CHECK(pool.acquire(device, 0, stream(3), 1000).data() != nullptr);
  pool.release_all();
  CHECK(device.live.empty());
}

TEST_CASE("threads on different and shared streams never see a freed buffer") {
  CountingDevice device;
  WorkspacePool pool;
  std::atomic<int> stale{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      std::mt19937 rng(static_cast<unsigned>(t) * 7919u + static_cast<unsigned>(random_in(0, 1000)));
      for (int call = 0; call < 200; ++call) {
        const std::size_t bytes = std::uniform_int_distribution<std::size_t>(1, 1 << 16)(rng);
        const auto lease = pool.acquire(device, 0, stream(static_cast<std::uintptr_t>(t % 3)), bytes);
        std::lock_guard lock(device.mutex);
        if (device.live.count(lease.data()) != 1) ++stale;
      }
    });
  for (std::thread& thread : threads) thread.join();
  CHECK(stale == 0);
  CHECK(device.allocations <= 3 * 100);  // growth is geometric, so a few per stream
  pool.release_all();
  CHECK(device.live.empty());
}

TEST_CASE_FIXTURE(WarmCapture, "during a capture a warm workspace is leased without allocating, freeing or waiting") {
  for (int call = 0; call < 5; ++call)
    CHECK(pool.acquire(device, 0, captured_stream, static_cast<std::size_t>(random_in(1, static_cast<std::int64_t>(held))))
              .data() == buffer);
  CHECK(device.allocations == 1);
  CHECK(device.frees == 0);
  CHECK(device.synchronizations == 0);
  device.capturing.clear();
  pool.release_all();
  CHECK(device.live.empty());
}

TEST_CASE("growth during a capture is a named error that touches nothing; the pool works after it") {
  CountingDevice device;
  WorkspacePool pool;
  device.capturing.insert(stream(4));
  // Cold: no warm-up at all.
  std::string message = error_of([&] { (void)pool.acquire(device, 0, stream(4), 5000); }, ErrorCode::unsupported);
  CHECK_MESSAGE(contains(message, "from 0 to 5000 bytes while the stream is being captured"), message);
  CHECK_MESSAGE(contains(message, "warm-up"), message);
  CHECK_MESSAGE(contains(message, "workspace of your own"), message);
  // Warm, but too small.
  device.capturing.clear();
  const std::size_t small = static_cast<std::size_t>(random_in(100, 1000));
  (void)pool.acquire(device, 0, stream(4), small);
  const std::size_t held = pool.bytes_held();
  device.capturing.insert(stream(4));
  message = error_of([&] { (void)pool.acquire(device, 0, stream(4), held + 1); }, ErrorCode::unsupported);
  CHECK_MESSAGE(contains(message, "device 0 stream 0x4 must grow from " + std::to_string(held) + " to " +
                                      std::to_string(held + 1) + " bytes"),
                message);
  CHECK(device.allocations == 1);
  CHECK(device.frees == 0);
  CHECK(device.synchronizations == 0);
  CHECK(pool.bytes_held() == held);
  // Another stream is not affected by the capture of this one.
  CHECK(pool.acquire(device, 0, stream(5), held * 4).data() != nullptr);
  device.capturing.clear();
  CHECK(pool.acquire(device, 0, stream(4), held * 2).data() != nullptr);
  pool.release_all();
  CHECK(device.live.empty());
}

TEST_CASE_FIXTURE(WarmCapture, "a buffer leased during a capture is kept, not freed, when the workspace grows later") {
  void* captured = pool.acquire(device, 0, stream(6), warm).data();  // a graph now refers to it
  device.capturing.clear();
  // Growth after the capture: a new buffer, the captured one stays allocated (the graph may run).
  void* grown = pool.acquire(device, 0, stream(6), held * 3).data();
  CHECK(grown != captured);
  CHECK(device.live.count(captured) == 1);
  CHECK(device.frees == 0);
  CHECK(pool.bytes_held() >= held + held * 3);
  // The new buffer was never captured: growing past it frees it (after waiting) as before.
  const std::size_t held_now = pool.bytes_held();
  void* grown_again = pool.acquire(device, 0, stream(6), held_now * 2).data();
  CHECK(device.freed == std::vector<void*>{grown});
  CHECK(device.live.count(captured) == 1);
  CHECK(device.live.count(grown_again) == 1);
  CHECK(device.synchronized_while_capturing == 0);
  // release_all() refuses while a stream of the pool is capturing, freeing nothing; then frees all.
  device.capturing.insert(stream(6));
  const std::string message = error_of([&] { pool.release_all(); }, ErrorCode::unsupported);
  CHECK_MESSAGE(contains(message, "release_workspaces() while device 0 stream 0x6 is being captured"), message);
  CHECK(device.live.count(captured) == 1);
  CHECK(device.freed == std::vector<void*>{grown});
  device.capturing.clear();
  pool.release_all();
  CHECK(device.live.empty());
  CHECK(pool.bytes_held() == 0);
}
