#pragma once
// A counting global operator new for the tests that prove a path allocates nothing on the host
// (issue 24: a repeated attention call). Include it in exactly ONE source file of a test binary: it
// replaces the global allocation functions of the whole process, the library's included.
#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <new>

namespace sagejit::test::detail {

// Only the calling thread's allocations are counted, and only while an AllocationCount is running.
inline thread_local bool counting = false;
inline std::atomic<long> counted{0};

inline void* allocate_counted(std::size_t bytes, std::size_t alignment) {
  if (counting) ++counted;
  void* pointer = alignment <= alignof(std::max_align_t)
                      ? std::malloc(bytes == 0 ? 1 : bytes)
                      : std::aligned_alloc(alignment, (bytes + alignment - 1) / alignment * alignment);
  if (pointer == nullptr) throw std::bad_alloc();
  return pointer;
}

}  // namespace sagejit::test::detail

namespace sagejit::test {

// Counts this thread's allocations from construction until stop() (which returns the count).
class AllocationCount {
 public:
  AllocationCount() {
    detail::counted = 0;
    detail::counting = true;
  }
  ~AllocationCount() { detail::counting = false; }
  AllocationCount(const AllocationCount&) = delete;
  AllocationCount& operator=(const AllocationCount&) = delete;
  long stop() {
    detail::counting = false;
    return detail::counted.load();
  }
};

}  // namespace sagejit::test

void* operator new(std::size_t bytes) { return sagejit::test::detail::allocate_counted(bytes, 0); }
void* operator new[](std::size_t bytes) { return sagejit::test::detail::allocate_counted(bytes, 0); }
void* operator new(std::size_t bytes, std::align_val_t alignment) {
  return sagejit::test::detail::allocate_counted(bytes, static_cast<std::size_t>(alignment));
}
void* operator new[](std::size_t bytes, std::align_val_t alignment) {
  return sagejit::test::detail::allocate_counted(bytes, static_cast<std::size_t>(alignment));
}
void* operator new(std::size_t bytes, const std::nothrow_t&) noexcept {
  try {
    return sagejit::test::detail::allocate_counted(bytes, 0);
  } catch (...) {
    return nullptr;
  }
}
void* operator new[](std::size_t bytes, const std::nothrow_t&) noexcept {
  try {
    return sagejit::test::detail::allocate_counted(bytes, 0);
  } catch (...) {
    return nullptr;
  }
}
void operator delete(void* pointer) noexcept { std::free(pointer); }
void operator delete[](void* pointer) noexcept { std::free(pointer); }
void operator delete(void* pointer, std::size_t) noexcept { std::free(pointer); }
void operator delete[](void* pointer, std::size_t) noexcept { std::free(pointer); }
void operator delete(void* pointer, std::align_val_t) noexcept { std::free(pointer); }
void operator delete[](void* pointer, std::align_val_t) noexcept { std::free(pointer); }
void operator delete(void* pointer, std::size_t, std::align_val_t) noexcept { std::free(pointer); }
void operator delete[](void* pointer, std::size_t, std::align_val_t) noexcept { std::free(pointer); }
