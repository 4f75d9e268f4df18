// The CUDA side of the driver-API Device (driver_device.cpp), and cuda_device(). It shares each
// device's *primary* context with the CUDA runtime (and so with PyTorch): kernels we load and
// launch live in the same context as the caller's tensors and streams, which a private context
// would not.
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.hpp"
#include "core/log.hpp"
#include "device/cuda_api.hpp"
#include "device/driver_vendor.hpp"

namespace sagejit {
namespace {

using namespace cuda_api;

class CudaDriver final : public DriverVendor {
 public:
  explicit CudaDriver(const DynamicLibrary& library)
      : DriverVendor(library,
                     {.vendor = Vendor::nvidia, .name = "CUDA", .api = "CUDA driver", .runtime_noun = "the CUDA driver"},
                     driver_api::kCudaNames,
                     {CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK,
                      CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, CU_DEVICE_ATTRIBUTE_WARP_SIZE}) {
#define SAGEJIT_CUDA_RESOLVE(symbol, signature) library.resolve(cuda_.symbol, #symbol);
    SAGEJIT_CUDA_ONLY_CALLS(SAGEJIT_CUDA_RESOLVE)
#undef SAGEJIT_CUDA_RESOLVE
    library.resolve_optional(encode_tiled_, "cuTensorMapEncodeTiled");
  }

  std::string error_name(driver_api::Result result) const override {
    const char* name = nullptr;
    if (cuda_.cuGetErrorName == nullptr || cuda_.cuGetErrorName(result, &name) != driver_api::kSuccess || name == nullptr)
      return fmt::format("CUresult {}", result);
    const char* text = nullptr;
    if (cuda_.cuGetErrorString != nullptr && cuda_.cuGetErrorString(result, &text) == driver_api::kSuccess && text != nullptr)
      return fmt::format("{} ({})", name, text);
    return name;
  }

  std::string format_version(int version) const override {
    return fmt::format("CUDA driver {}.{}", version / 1000, (version % 1000) / 10);
  }

  int device_handle(int ordinal) const override {
    CUdevice device = 0;
    check(cuda_.cuDeviceGet(&device, ordinal), "cuDeviceGet");
    return device;
  }

  void read_target(DeviceInfo& info, int device) const override {
    const int major = attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device);
    const int minor = attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device);
    info.target = fmt::format("sm_{}{}", major, minor);
    info.full_target = info.target;
  }

  int current_device() const override {
    CUcontext context = nullptr;
    check(cuda_.cuCtxGetCurrent(&context), "cuCtxGetCurrent");
    if (context == nullptr) return 0;  // nothing current yet: CUDA's own default is device 0
    CUdevice device = 0;
    check(cuda_.cuCtxGetDevice(&device), "cuCtxGetDevice");
    return static_cast<int>(device);
  }

  // A different context that the caller had current is restored afterwards; when none was current,
  // the primary context stays current, which is exactly what the CUDA runtime would have done.
  Previous make_current(int ordinal) const override {
    const CUcontext wanted = primary_context(ordinal);
    Previous previous;
    check(cuda_.cuCtxGetCurrent(&previous.context), "cuCtxGetCurrent");
    if (previous.context != wanted) {
      check(cuda_.cuCtxSetCurrent(wanted), "cuCtxSetCurrent");
      previous.restore = previous.context != nullptr;
    }
    return previous;
  }

  void restore(const Previous& previous) const noexcept override {
    if (!previous.restore) return;
    const driver_api::Result result = cuda_.cuCtxSetCurrent(previous.context);
    if (result != driver_api::kSuccess) log::warn("restoring the caller's CUDA context failed: {}", error_name(result));
  }

  void prepare_launch(driver_api::Function function, unsigned dynamic_shared_bytes) const override {
    // Static limit is 48 KiB; beyond it the function must opt in (up to shared_memory_per_block_optin).
    if (dynamic_shared_bytes > 48u * 1024u)
      check(cuda_.cuFuncSetAttribute(function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                     static_cast<int>(dynamic_shared_bytes)),
            "cuFuncSetAttribute");
  }

  void copy_to_device(void* dst, const void* src, std::size_t bytes) const override {
    check(cuda_.cuMemcpyHtoD_v2(reinterpret_cast<CUdeviceptr>(dst), src, bytes), "cuMemcpyHtoD_v2");
  }

  void copy_to_host(void* dst, const void* src, std::size_t bytes) const override {
    check(cuda_.cuMemcpyDtoH_v2(dst, reinterpret_cast<CUdeviceptr>(src), bytes), "cuMemcpyDtoH_v2");
  }

  void memset(void* dst, int value, std::size_t bytes, driver_api::Stream stream) const override {
    check(cuda_.cuMemsetD8Async(reinterpret_cast<CUdeviceptr>(dst), static_cast<unsigned char>(value), bytes, stream),
          "cuMemsetD8Async");
  }

  void encode_tensor_map(const TensorMapRequest& request, void* map) const override {
    if (encode_tiled_ == nullptr)
      fail(ErrorCode::unsupported, "encode_tensor_map: this CUDA driver has no cuTensorMapEncodeTiled (CUDA 12.0+)");
    if (request.rank < 1 || request.rank > 5)
      fail(ErrorCode::invalid_argument, "encode_tensor_map: rank {} is not one of 1..5", request.rank);
    const int swizzle = request.swizzle_bytes == 0 ? CU_TENSOR_MAP_SWIZZLE_NONE
                        : request.swizzle_bytes == 32 ? 1
                        : request.swizzle_bytes == 64 ? 2
                        : request.swizzle_bytes == 128 ? 3
                                                       : -1;
    if (swizzle < 0)
      fail(ErrorCode::invalid_argument, "encode_tensor_map: swizzle_bytes {} is not one of 0, 32, 64, 128",
           request.swizzle_bytes);
    const unsigned element_strides[5] = {1, 1, 1, 1, 1};
    const Result result = encode_tiled_(map, CU_TENSOR_MAP_DATA_TYPE_UINT8, static_cast<unsigned>(request.rank),
                                        const_cast<void*>(request.base), request.sizes.data(), request.strides.data(),
                                        request.box.data(), element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle,
                                        CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (result != driver_api::kSuccess)
      fail(ErrorCode::invalid_argument,
           "cuTensorMapEncodeTiled rejected the map (rank {}, sizes [{}], byte strides [{}], box [{}], swizzle {}): {}",
           request.rank, fmt::join(std::span(request.sizes).first(request.rank), ", "),
           fmt::join(std::span(request.strides).first(request.rank - 1), ", "),
           fmt::join(std::span(request.box).first(request.rank), ", "), request.swizzle_bytes, error_name(result));
  }

  driver_api::Event create_event() const override {
    driver_api::Event event = nullptr;
    check(cuda_.cuEventCreate(&event, CU_EVENT_DEFAULT), "cuEventCreate");
    return event;
  }

 private:
  int attribute(int which, int device) const {
    int value = 0;
    check(api().device_attribute(&value, which, device), names().device_attribute);
    return value;
  }

  // Retained once per device for the life of the process (never released: PyTorch and others keep
  // using it, and releasing at exit races the driver's own teardown).
  CUcontext primary_context(int ordinal) const {
    const CUdevice device = device_handle(ordinal);
    std::lock_guard lock(context_mutex_);
    if (contexts_.size() <= static_cast<std::size_t>(ordinal)) contexts_.resize(static_cast<std::size_t>(ordinal) + 1);
    CUcontext& context = contexts_[static_cast<std::size_t>(ordinal)];
    if (context == nullptr) check(cuda_.cuDevicePrimaryCtxRetain(&context, device), "cuDevicePrimaryCtxRetain");
    return context;
  }

  cuda_api::Functions cuda_;
  std::add_pointer_t<TensorMapEncodeTiled> encode_tiled_ = nullptr;
  mutable std::mutex context_mutex_;
  mutable std::vector<CUcontext> contexts_;
};

}  // namespace

Device& cuda_device() {
  // Loaded once; a failure is remembered so every call reports the same, complete reason. libcuda
  // ships with the driver, not the toolkit: the .so.1 soname is the stable one.
  static const auto* outcome = new LoadedLibrary<Device>(load_driver_device(  // never destroyed: see primary_context
      {[] { return open_first_candidate({"libcuda.so.1", "libcuda.so"}, "cuInit", "the CUDA driver library"); },
       [](const DynamicLibrary& library) -> std::shared_ptr<DriverVendor> { return std::make_shared<CudaDriver>(library); }}));
  return outcome->get();
}

}  // namespace sagejit
