#pragma once
// The GPU runtime behind one small interface, implemented once over the CUDA driver API and the
// HIP module API (driver_device.cpp; each vendor's symbols and data: driver_vendors.cpp).
// Vendor libraries are loaded with dlopen on first use, so the library loads and its CPU paths work
// on a machine with no GPU runtime at all.
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/target.hpp"

namespace sagejit {

struct DeviceInfo {
  int ordinal = 0;
  Vendor vendor = Vendor::nvidia;
  std::string name;          // "NVIDIA H200", "AMD Radeon AI PRO R9700"
  std::string target;        // arch used to pick kernels and tables: "sm_90", "gfx1201"
  std::string full_target;   // as reported, feature suffixes kept: "gfx1201:sramecc-:xnack-"; "sm_90"
  int compute_units = 0;     // CUs (AMD) / SMs (NVIDIA)
  std::size_t shared_memory_per_block = 0;        // LDS / static shared memory limit, bytes
  std::size_t shared_memory_per_block_optin = 0;  // with opt-in (NVIDIA); == above on AMD
  int warp_size = 32;
  std::size_t total_memory = 0;
};

using Stream = void*;  // cudaStream_t / hipStream_t (nullptr = the default/legacy stream)

struct LaunchGeometry {
  std::array<unsigned, 3> grid{1, 1, 1};
  std::array<unsigned, 3> block{1, 1, 1};
  unsigned dynamic_shared_bytes = 0;
};

// A tiled tensor map (CUDA's CUtensorMap) for the tensor copy engine (cp.async.bulk.tensor):
// `rank` dimensions of one-byte elements, innermost first, each `sizes[i]` long; `strides[i]` is the
// byte stride of dimension i + 1 (a multiple of 16); `box` the tile one copy moves; `swizzle_bytes`
// the shared-memory swizzle of the box's rows (0, 32, 64 or 128; the innermost box extent must
// not exceed it).
struct TensorMapRequest {
  const void* base = nullptr;  // 16-byte aligned
  int rank = 0;                // 1..5
  std::array<unsigned long long, 5> sizes{};
  std::array<unsigned long long, 4> strides{};
  std::array<unsigned, 5> box{};
  int swizzle_bytes = 0;
};
// A tensor map's size; it is opaque and must be 64-byte aligned where it is stored.
inline constexpr std::size_t kTensorMapBytes = 128;

// A code object loaded on one device; holds the module handle until destroyed.
class LoadedModule {
 public:
  virtual ~LoadedModule() = default;
  // Returns an opaque function handle; throws Error(device_error) naming the missing symbol.
  virtual void* function(const std::string& name) = 0;
};

class Device {
 public:
  virtual ~Device() = default;

  virtual Vendor vendor() const = 0;
  // Identity of the runtime for cache keys and sagejit-info: "CUDA driver 13.0", "HIP 6.4.1".
  virtual std::string runtime_version() const = 0;
  // Path of the library that was loaded (for sagejit-info).
  virtual std::string library_path() const = 0;

  virtual int device_count() const = 0;
  // Why device_count() is 0 ("hipInit failed: hipErrorNoDevice"); empty when devices exist.
  virtual std::string no_device_reason() const { return {}; }
  virtual DeviceInfo info(int ordinal) const = 0;
  // The ordinal current on the calling thread (the caller's framework may have set it).
  virtual int current_device() const = 0;

  virtual std::unique_ptr<LoadedModule> load_module(int ordinal, std::span<const std::byte> code_object) = 0;
  // args: array of pointers to each kernel argument, as cuLaunchKernel / hipModuleLaunchKernel take.
  virtual void launch(int ordinal, void* function, const LaunchGeometry& geometry, Stream stream, void** args) = 0;

  // Memory and timing, used by the workspace, tests, tools and benchmarks.
  virtual void* allocate(int ordinal, std::size_t bytes) = 0;
  virtual void free(int ordinal, void* pointer) noexcept = 0;
  virtual void copy_to_device(int ordinal, void* dst, const void* src, std::size_t bytes) = 0;
  virtual void copy_to_host(int ordinal, void* dst, const void* src, std::size_t bytes) = 0;
  virtual void memset(int ordinal, void* dst, int value, std::size_t bytes, Stream stream) = 0;
  virtual void synchronize(int ordinal, Stream stream) = 0;
  // Whether `stream` is being captured into a graph (cuStreamIsCapturing / hipStreamIsCapturing):
  // then work may only be enqueued, never allocated, freed or waited for. Throws Error(device_error)
  // when the runtime cannot tell (e.g. the legacy stream while another stream captures globally).
  virtual bool stream_is_capturing(int ordinal, Stream stream) = 0;
  // Device-event timing: returns milliseconds between two recorded events.
  virtual void* create_event(int ordinal) = 0;
  virtual void destroy_event(int ordinal, void* event) noexcept = 0;
  virtual void record_event(int ordinal, void* event, Stream stream) = 0;
  virtual float elapsed_ms(int ordinal, void* start, void* stop) = 0;

  // Writes the tensor map of `request` (kTensorMapBytes) to `map`. Throws Error(unsupported) where
  // the runtime has none (HIP, a CUDA driver before 12.0), Error(invalid_argument) when the driver
  // rejects the request.
  virtual void encode_tensor_map(const TensorMapRequest& request, void* map) const;
};

// Each returns the process-wide backend, loading its libraries on first call. Throws
// Error(runtime_not_found) naming every library path that was tried when none could be loaded.
Device& cuda_device();
Device& hip_device();

// The first backend that loads and has at least one device (CUDA, then HIP); throws
// Error(runtime_not_found) listing what was tried for both.
Device& default_device();

}  // namespace sagejit
