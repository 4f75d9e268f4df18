#pragma once
// The CUDA driver API entry points and values only CUDA has (the shared ones are in driver_api.hpp),
// restated from cuda.h (CUDA 12/13) so the build needs no CUDA headers; libcuda.so.1 is dlopen'ed
// at run time. Symbol names are the ones cuda.h maps the API names to (e.g. cuMemcpyHtoD ->
// cuMemcpyHtoD_v2); the plain stream functions (not *_ptsz) use the legacy default stream for a
// null stream, as the Device interface documents.
#include <cstddef>
#include <type_traits>

#include "device/driver_api.hpp"

namespace sagejit::cuda_api {

using driver_api::Result;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUcontext = void*;

// CUdevice_attribute values used here.
inline constexpr int CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK = 8;
inline constexpr int CU_DEVICE_ATTRIBUTE_WARP_SIZE = 10;
inline constexpr int CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16;
inline constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75;
inline constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76;
inline constexpr int CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97;

// CUfunction_attribute: dynamic shared memory above 48 KiB must be opted into per function.
inline constexpr int CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8;
inline constexpr unsigned CU_EVENT_DEFAULT = 0;

// cuTensorMapEncodeTiled's enum values used here (CUtensorMapDataType, ...Interleave, ...Swizzle,
// ...L2promotion, ...FloatOOBfill).
inline constexpr int CU_TENSOR_MAP_DATA_TYPE_UINT8 = 0;
inline constexpr int CU_TENSOR_MAP_INTERLEAVE_NONE = 0;
inline constexpr int CU_TENSOR_MAP_SWIZZLE_NONE = 0;  // 32B, 64B, 128B: 1, 2, 3
inline constexpr int CU_TENSOR_MAP_L2_PROMOTION_L2_128B = 2;
inline constexpr int CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE = 0;
// cuTensorMapEncodeTiled (CUDA 12.0+; resolved when present). The map is 128 opaque bytes.
using TensorMapEncodeTiled = Result(void* map, int data_type, unsigned rank, void* global_address,
                                    const unsigned long long* global_dims, const unsigned long long* global_strides,
                                    const unsigned* box_dims, const unsigned* element_strides, int interleave,
                                    int swizzle, int l2_promotion, int oob_fill);

// X(symbol, signature)
#define SAGEJIT_CUDA_ONLY_CALLS(X)                                                                         \
  X(cuGetErrorName, Result(Result error, const char** name))                                              \
  X(cuGetErrorString, Result(Result error, const char** text))                                            \
  X(cuDeviceGet, Result(CUdevice* device, int ordinal))                                                   \
  X(cuDevicePrimaryCtxRetain, Result(CUcontext* context, CUdevice device))                                \
  X(cuCtxGetCurrent, Result(CUcontext* context))                                                          \
  X(cuCtxSetCurrent, Result(CUcontext context))                                                           \
  X(cuCtxGetDevice, Result(CUdevice* device))                                                             \
  X(cuFuncSetAttribute, Result(driver_api::Function function, int attribute, int value))                  \
  X(cuMemcpyHtoD_v2, Result(CUdeviceptr dst, const void* src, std::size_t bytes))                         \
  X(cuMemcpyDtoH_v2, Result(void* dst, CUdeviceptr src, std::size_t bytes))                               \
  X(cuMemsetD8Async, Result(CUdeviceptr dst, unsigned char value, std::size_t count, driver_api::Stream stream)) \
  X(cuEventCreate, Result(driver_api::Event* event, unsigned flags))

#define SAGEJIT_CUDA_MEMBER(symbol, signature) std::add_pointer_t<signature> symbol = nullptr;

struct Functions {
  SAGEJIT_CUDA_ONLY_CALLS(SAGEJIT_CUDA_MEMBER)
};

}  // namespace sagejit::cuda_api
