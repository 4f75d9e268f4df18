#include "api/workspace_pool.hpp"

#include <vector>

#include "core/error.hpp"
#include "core/log.hpp"

namespace sagejit {

WorkspacePool::Lease WorkspacePool::acquire(Device& backend, int ordinal, Stream stream, std::size_t bytes) {
  Slot* slot = nullptr;
  {
    std::lock_guard map_lock(slots_mutex_);
    const std::thread::id thread = stream == per_thread_default_stream ? std::this_thread::get_id() : std::thread::id();
    auto& entry = slots_[SlotKey{&backend, ordinal, stream, thread}];
    if (!entry) entry = std::make_unique<Slot>();
    slot = entry.get();  // slots are never erased, so the pointer stays valid
  }
  std::unique_lock slot_lock(slot->mutex);
  if (slot->bytes < bytes) {
    // Growing: earlier calls on this stream may still be reading the old buffer.
    if (slot->data != nullptr) {
      backend.synchronize(ordinal, stream);
      backend.free(ordinal, slot->data);
      slot->data = nullptr;
      slot->bytes = 0;
    }
    // Grow by at least 1/8 so a slowly rising sequence length does not reallocate every call.
    const std::size_t target = std::max(bytes, bytes + bytes / 8);
    try {
      slot->data = backend.allocate(ordinal, target);
    } catch (const Error& error) {
      fail(error.code(), "workspace of {} bytes on device {} could not be allocated: {}", target, ordinal,
           error.what());
    }
    slot->bytes = target;
    log::info("workspace for device {} stream {} grown to {} bytes", ordinal, static_cast<void*>(stream),
              target);
  }
  return Lease(std::move(slot_lock), slot->data);
}

void WorkspacePool::release_all() {
  std::lock_guard map_lock(slots_mutex_);
  for (auto& [key, slot] : slots_) {
    std::lock_guard slot_lock(slot->mutex);
    if (slot->data == nullptr) continue;
    Device* backend = std::get<0>(key);
    const int ordinal = std::get<1>(key);
    const Stream stream = std::get<2>(key);
    // Another thread's per-thread default stream cannot be named from here; the legacy default
    // stream synchronizes with it (both are blocking streams), so wait on that one instead.
    const bool foreign = stream == per_thread_default_stream && std::get<3>(key) != std::this_thread::get_id();
    backend->synchronize(ordinal, foreign ? nullptr : stream);
    backend->free(ordinal, slot->data);
    slot->data = nullptr;
    slot->bytes = 0;
  }
}

std::size_t WorkspacePool::bytes_held() const {
  std::lock_guard map_lock(slots_mutex_);
  std::size_t total = 0;
  for (const auto& [key, slot] : slots_) {
    std::lock_guard slot_lock(slot->mutex);
    total += slot->bytes;
  }
  return total;
}

WorkspacePool& workspace_pool() {
  static WorkspacePool* pool = new WorkspacePool();
  return *pool;
}

}  // namespace sagejit
