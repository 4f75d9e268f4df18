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
  const bool capturing = backend.stream_is_capturing(ordinal, stream);
  if (slot->bytes < bytes) {
    if (capturing)
      fail(ErrorCode::unsupported,
           "the workspace of device {} stream {} must grow from {} to {} bytes while the stream is being captured into "
           "a graph, and growing allocates (which would break the capture). Before capturing, run one call of the same "
           "or a larger size on this stream (warm-up), or pass a workspace of your own "
           "(sagejit_attention_with_workspace / attention(..., Workspace))",
           ordinal, static_cast<void*>(stream), slot->bytes, bytes);
    if (slot->data != nullptr) {
      if (slot->captured) {
        // A captured graph may launch work that uses it at any time: keep it until release_all().
        slot->retired.push_back({slot->data, slot->bytes});
        log::info("workspace for device {} stream {}: {} bytes used by a captured graph kept until "
                  "release_workspaces()",
                  ordinal, static_cast<void*>(stream), slot->bytes);
      } else {
        // Earlier calls on this stream may still be reading the old buffer.
        backend.synchronize(ordinal, stream);
        backend.free(ordinal, slot->data);
      }
      slot->data = nullptr;
      slot->bytes = 0;
      slot->captured = false;
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
  if (capturing) slot->captured = true;
  return Lease(std::move(slot_lock), slot->data);
}

void WorkspacePool::release_all() {
  std::lock_guard map_lock(slots_mutex_);
  std::vector<std::unique_lock<std::mutex>> slot_locks;
  // First every check, so that a refusal frees nothing.
  for (auto& [key, slot] : slots_) {
    slot_locks.emplace_back(slot->mutex);
    if (slot->data == nullptr && slot->retired.empty()) continue;
    const auto& [backend, ordinal, stream, thread] = key;
    if (stream == per_thread_default_stream && thread != std::this_thread::get_id()) continue;  // see below
    if (backend->stream_is_capturing(ordinal, stream))
      fail(ErrorCode::unsupported,
           "release_workspaces() while device {} stream {} is being captured into a graph: freeing would break the "
           "capture; call it after the capture has ended",
           ordinal, static_cast<void*>(stream));
  }
  for (auto& [key, slot] : slots_) {
    if (slot->data == nullptr && slot->retired.empty()) continue;
    const auto& [backend, ordinal, stream, thread] = key;
    // Another thread's per-thread default stream cannot be named from here; the legacy default
    // stream synchronizes with it (both are blocking streams), so wait on that one instead.
    const bool foreign = stream == per_thread_default_stream && thread != std::this_thread::get_id();
    backend->synchronize(ordinal, foreign ? nullptr : stream);
    if (slot->data != nullptr) backend->free(ordinal, slot->data);
    for (const Slot::Retired& retired : slot->retired) backend->free(ordinal, retired.data);
    slot->data = nullptr;
    slot->bytes = 0;
    slot->captured = false;
    slot->retired.clear();
  }
}

std::size_t WorkspacePool::bytes_held() const {
  std::lock_guard map_lock(slots_mutex_);
  std::size_t total = 0;
  for (const auto& [key, slot] : slots_) {
    std::lock_guard slot_lock(slot->mutex);
    total += slot->bytes;
    for (const Slot::Retired& retired : slot->retired) total += retired.bytes;
  }
  return total;
}

WorkspacePool& workspace_pool() {
  static WorkspacePool* pool = new WorkspacePool();
  return *pool;
}

}  // namespace sagejit
