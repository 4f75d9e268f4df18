#pragma once
// Device memory with RAII, for the tools, tests and benchmarks (a host application brings its own
// allocator; the runtime only ever sees pointers). Zero bytes still allocate one, so every buffer
// has a distinct, valid pointer.
#include <cstddef>
#include <vector>

#include "device/device.hpp"

namespace sagejit {

class DeviceBuffer {
 public:
  DeviceBuffer(Device& device, int ordinal, std::size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&&) = delete;

  void* get() const { return pointer_; }
  std::size_t bytes() const { return bytes_; }
  void upload(const void* host, std::size_t bytes);
  void download(void* host, std::size_t bytes) const;
  template <typename T>
  void upload(const std::vector<T>& host) { upload(host.data(), host.size() * sizeof(T)); }
  template <typename T>
  std::vector<T> download_as(std::size_t count) const {
    std::vector<T> host(count);
    download(host.data(), count * sizeof(T));
    return host;
  }

 private:
  Device* device_;
  int ordinal_;
  void* pointer_ = nullptr;
  std::size_t bytes_ = 0;
};

}  // namespace sagejit
