// What the tests that run the JIT and the runner without a GPU share: a code object the runtime's
// check accepts (compiler/code_object_check.hpp) and a module over it that finds the entry names in it.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.hpp"
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

}  // namespace sagejit::test
