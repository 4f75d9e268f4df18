// The runtime's own workspace (api/workspace_pool): grows on demand, is reused without allocating,
// is separate per (device, stream), waits for the stream before freeing, and is safe under threads.
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
    ::operator delete(pointer);
  }
  void copy_to_device(int, void*, const void*, std::size_t) override {}
  void copy_to_host(int, void*, const void*, std::size_t) override {}
  void memset(int, void*, int, std::size_t, Stream) override {}
  void synchronize(int, Stream) override { ++synchronizations; }
  void* create_event(int) override { return nullptr; }
  void destroy_event(int, void*) noexcept override {}
  void record_event(int, void*, Stream) override {}
  float elapsed_ms(int, void*, void*) override { return 0.0f; }

  std::mutex mutex;
  std::set<void*> live;
  std::atomic<int> allocations{0}, frees{0}, synchronizations{0};
  std::size_t limit = std::size_t{1} << 30;
};

Stream stream(std::uintptr_t id) { return reinterpret_cast<Stream>(id); }

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
