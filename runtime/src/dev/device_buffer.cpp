#include "dev/device_buffer.hpp"

namespace sagejit {

DeviceBuffer::DeviceBuffer(Device& device, int ordinal, std::size_t bytes)
    : device_(&device), ordinal_(ordinal), pointer_(device.allocate(ordinal, bytes == 0 ? 1 : bytes)), bytes_(bytes) {}

DeviceBuffer::~DeviceBuffer() {
  if (pointer_ != nullptr) device_->free(ordinal_, pointer_);
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : device_(other.device_), ordinal_(other.ordinal_), pointer_(other.pointer_), bytes_(other.bytes_) {
  other.pointer_ = nullptr;
  other.bytes_ = 0;
}

void DeviceBuffer::upload(const void* host, std::size_t bytes) { device_->copy_to_device(ordinal_, pointer_, host, bytes); }

void DeviceBuffer::download(void* host, std::size_t bytes) const { device_->copy_to_host(ordinal_, host, pointer_, bytes); }

}  // namespace sagejit
