// What the tests that run the JIT and the runner without a GPU share: a code object the runtime's
// check accepts (compiler/code_object_check.hpp), a module over it that finds the entry names in it, and
// a device whose every operation does nothing (each test overrides the ones it observes).
#pragma once

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.hpp"
#include "core/target.hpp"
#include "device/device.hpp"

namespace sagejit::test {

inline constexpr int elf_machine_amdgpu = 224;  // EM_AMDGPU
inline constexpr int elf_machine_cuda = 190;    // EM_CUDA

// A 64-byte ELF64 header of `machine`, then `text` (the source: the fake module looks names up in it).
inline std::vector<std::byte> fake_code_object(std::string_view text, int machine = elf_machine_amdgpu) {
  const unsigned char header[20] = {0x7f, 'E', 'L', 'F', 2, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0,
                                    static_cast<unsigned char>(machine & 0xff), static_cast<unsigned char>(machine >> 8)};
  std::vector<std::byte> code(64, std::byte{0});
  for (std::size_t i = 0; i < sizeof header; ++i) code[i] = static_cast<std::byte>(header[i]);
  for (const char c : text) code.push_back(static_cast<std::byte>(c));
  return code;
}

// A loaded module of a fake code object: a function is found when its name is in the object's text.
class FakeModule final : public LoadedModule {
 public:
  explicit FakeModule(std::string source) : source_(std::move(source)) {}
  void* function(const std::string& name) override {
    if (source_.find(name) == std::string::npos) fail(ErrorCode::device_error, "no symbol {}", name);
    return reinterpret_cast<void*>(std::hash<std::string>{}(name) | 1);
  }

 private:
  std::string source_;
};

// A device of `count` GPUs of one vendor and target ("gfx1201:xnack-", "sm_90") that loads fake code
// objects as FakeModules, launches nothing, allocates host memory and times nothing.
class FakeDeviceBase : public Device {
 public:
  FakeDeviceBase(Vendor vendor, std::string full_target, int count = 1)
      : vendor_(vendor), full_target_(std::move(full_target)), count_(count) {}
  Vendor vendor() const override { return vendor_; }
  std::string runtime_version() const override { return "fake 1"; }
  std::string library_path() const override { return "(test)"; }
  int device_count() const override { return count_; }
  DeviceInfo info(int ordinal) const override {
    DeviceInfo info;
    info.ordinal = ordinal;
    info.vendor = vendor_;
    info.full_target = full_target_;
    info.target = std::string(target_arch(full_target_));
    return info;
  }
  int current_device() const override { return 0; }
  std::unique_ptr<LoadedModule> load_module(int, std::span<const std::byte> code) override {
    std::string source(code.size(), '\0');
    std::memcpy(source.data(), code.data(), code.size());
    return std::make_unique<FakeModule>(std::move(source));
  }
  void launch(int, void*, const LaunchGeometry&, Stream, void**) override {}
  void* allocate(int, std::size_t bytes) override { return std::malloc(bytes); }
  void free(int, void* pointer) noexcept override { std::free(pointer); }
  void copy_to_device(int, void*, const void*, std::size_t) override {}
  void copy_to_host(int, void*, const void*, std::size_t) override {}
  void memset(int, void*, int, std::size_t, Stream) override {}
  void synchronize(int, Stream) override {}
  bool stream_is_capturing(int, Stream) override { return false; }
  void* create_event(int) override { return nullptr; }
  void destroy_event(int, void*) noexcept override {}
  void record_event(int, void*, Stream) override {}
  float elapsed_ms(int, void*, void*) override { return 0.0f; }
  void encode_tensor_map(const TensorMapRequest&, void* map) const override { std::memset(map, 0, kTensorMapBytes); }

 private:
  Vendor vendor_;
  std::string full_target_;
  int count_;
};

}  // namespace sagejit::test
