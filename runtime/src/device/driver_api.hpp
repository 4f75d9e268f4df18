#pragma once
// The entry points sagejit calls in the CUDA driver API (libcuda) and the HIP runtime's module API
// (libamdhip64), restated from cuda.h (CUDA 12/13) and the HIP headers (ROCm 5.2 .. 7.x) so the build
// needs neither toolkit's headers. HIP's module API mirrors the driver API call for call, so one
// table (`Calls`) serves both: driver_vendors.cpp names each call's CUDA and HIP symbol, and a call
// only one vendor has stays unnamed (and null) in the other vendor's table.
//
// Types are the vendors' own where they agree (results and device handles are int). Module,
// function, stream and event handles are pointers to opaque structs in both (CUmodule, hipModule_t,
// ...): void* here. Device memory is CUdeviceptr (unsigned long long) in CUDA and void* in HIP;
// both are one 64-bit integer-class argument on the LP64 ABIs sagejit supports, so void* serves
// the shared calls. Symbol names are the ones the headers map the API names to (cuMemcpyHtoD ->
// cuMemcpyHtoD_v2); the plain stream functions (not *_ptsz) use the legacy default stream for a
// null stream, as the Device interface documents.
//
// HIP ABI notes (why the device properties are read the way they are):
// - hipDeviceProp_t changed layout in ROCm 6.0: the header maps hipGetDeviceProperties to
//   hipGetDevicePropertiesR0600 (new struct) while the old layout stays behind
//   hipGetDevicePropertiesR0000 / the unversioned symbol of ROCm 5. We therefore take every number
//   from hipDeviceGetAttribute (whose enum values are the same in ROCm 5.2 and 6.x/7.x for the
//   attributes below) and read only gcnArchName from the struct, at the offset of whichever layout
//   the symbol we called belongs to: 1160 bytes for R0600, 396 bytes for the ROCm 5 layout.
// - The struct is filled into a buffer larger than either layout (zeroed), so a newer runtime that
//   appends fields cannot write past our memory.
#include <array>
#include <cstddef>
#include <string_view>

#include "core/target.hpp"
#include "device/device.hpp"
#include "platform/library_loader.hpp"

namespace sagejit::driver_api {

using Result = int;  // CUresult / hipError_t
using Module = void*;
using Function = void*;
using Stream = void*;
using Event = void*;
using DevicePointer = void*;
using CUdeviceptr = unsigned long long;
using CUcontext = void*;

inline constexpr Result kSuccess = 0;  // CUDA_SUCCESS / hipSuccess

// The CUDA and HIP values the calls below take (the device attributes DeviceInfo reports are in each
// vendor's table, driver_vendors.cpp).
inline constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75;  // CUdevice_attribute
inline constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76;
// CUfunction_attribute: dynamic shared memory above 48 KiB must be opted into per function.
inline constexpr int CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8;
inline constexpr unsigned CU_EVENT_DEFAULT = 0;
// cuTensorMapEncodeTiled's values used here (CUtensorMapDataType, ...Interleave, ...L2promotion,
// ...FloatOOBfill; CUtensorMapSwizzle is 0 none, 1/2/3 for 32/64/128-byte rows).
inline constexpr int CU_TENSOR_MAP_DATA_TYPE_UINT8 = 0;
inline constexpr int CU_TENSOR_MAP_INTERLEAVE_NONE = 0;
inline constexpr int CU_TENSOR_MAP_L2_PROMOTION_L2_128B = 2;
inline constexpr int CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE = 0;
inline constexpr int hipMemcpyHostToDevice = 1;  // hipMemcpyKind
inline constexpr int hipMemcpyDeviceToHost = 2;
// gcnArchName inside the two hipDeviceProp_t layouts (see the note above).
inline constexpr std::size_t kArchNameOffsetR0600 = 1160;
inline constexpr std::size_t kArchNameOffsetR0000 = 396;
inline constexpr std::size_t kArchNameLength = 256;
inline constexpr std::size_t kDevicePropBufferBytes = 8192;  // > sizeof either layout (1472 / 792)

struct Calls {  // every member {}: a vendor names only its own calls
  // Both vendors.
  Symbol<Result(unsigned flags)> init{};
  Symbol<Result(int* version)> driver_version{};
  Symbol<Result(int* count)> device_count{};
  Symbol<Result(char* name, int length, int device)> device_name{};
  Symbol<Result(int* value, int attribute, int device)> device_attribute{};
  Symbol<Result(std::size_t* bytes, int device)> device_total_memory{};
  Symbol<Result(Module* module, const void* image)> module_load_data{};
  Symbol<Result(Module module)> module_unload{};
  Symbol<Result(Function* function, Module module, const char* name)> module_get_function{};
  Symbol<Result(Function function, unsigned grid_x, unsigned grid_y, unsigned grid_z, unsigned block_x, unsigned block_y,
                unsigned block_z, unsigned shared_bytes, Stream stream, void** params, void** extra)>
      launch_kernel{};
  Symbol<Result(DevicePointer* pointer, std::size_t bytes)> mem_alloc{};
  Symbol<Result(DevicePointer pointer)> mem_free{};
  Symbol<Result(Stream stream)> stream_synchronize{};
  // status: CUstreamCaptureStatus / hipStreamCaptureStatus (0 none, 1 active, 2 invalidated)
  Symbol<Result(Stream stream, int* status)> stream_is_capturing{};
  Symbol<Result(Event event)> event_destroy{};
  Symbol<Result(Event event, Stream stream)> event_record{};
  Symbol<Result(Event event)> event_synchronize{};
  Symbol<Result(float* milliseconds, Event start, Event stop)> event_elapsed_time{};

  // CUDA only.
  Symbol<Result(Result error, const char** name)> cu_error_name{};
  Symbol<Result(Result error, const char** text)> cu_error_string{};
  Symbol<Result(int* device, int ordinal)> cu_device_get{};
  Symbol<Result(CUcontext* context, int device)> cu_primary_context_retain{};
  Symbol<Result(CUcontext* context)> cu_context_get_current{};
  Symbol<Result(CUcontext context)> cu_context_set_current{};
  Symbol<Result(int* device)> cu_context_get_device{};
  Symbol<Result(Function function, int attribute, int value)> cu_function_set_attribute{};
  Symbol<Result(CUdeviceptr dst, const void* src, std::size_t bytes)> cu_memcpy_htod{};
  Symbol<Result(void* dst, CUdeviceptr src, std::size_t bytes)> cu_memcpy_dtoh{};
  Symbol<Result(CUdeviceptr dst, unsigned char value, std::size_t count, Stream stream)> cu_memset_d8_async{};
  Symbol<Result(Event* event, unsigned flags)> cu_event_create{};
  // Optional (CUDA >= 12.0): the tensor maps of the tensor copy engine; the map is 128 opaque bytes.
  Symbol<Result(void* map, int data_type, unsigned rank, void* global_address, const unsigned long long* global_dims,
                const unsigned long long* global_strides, const unsigned* box_dims, const unsigned* element_strides,
                int interleave, int swizzle, int l2_promotion, int oob_fill)>
      cu_tensor_map_encode_tiled{};

  // HIP only.
  Symbol<const char*(Result error)> hip_error_name{};
  Symbol<const char*(Result error)> hip_error_string{};
  Symbol<Result(int* ordinal)> hip_get_device{};
  Symbol<Result(int ordinal)> hip_set_device{};
  // hipGetDevicePropertiesR0600 (ROCm >= 6) when exported, else the ROCm 5 layout (newer_bound says which).
  Symbol<Result(void* properties, int ordinal)> hip_device_properties{};
  Symbol<Result(void* dst, const void* src, std::size_t bytes, int kind)> hip_memcpy{};
  Symbol<Result(void* dst, int value, std::size_t bytes, Stream stream)> hip_memset_async{};
  Symbol<Result(Event* event)> hip_event_create{};

  // Resolved in this order; the first symbol missing is the one the error names.
  constexpr std::array<SymbolSlot*, 39> slots() {
    return {&init, &driver_version, &device_count, &device_name, &device_attribute, &device_total_memory,
            &module_load_data, &module_unload, &module_get_function, &launch_kernel, &mem_alloc, &mem_free,
            &stream_synchronize, &stream_is_capturing, &event_destroy, &event_record, &event_synchronize,
            &event_elapsed_time, &cu_error_name, &cu_error_string, &cu_device_get, &cu_primary_context_retain,
            &cu_context_get_current, &cu_context_set_current, &cu_context_get_device, &cu_function_set_attribute,
            &cu_memcpy_htod, &cu_memcpy_dtoh, &cu_memset_d8_async, &cu_event_create, &cu_tensor_map_encode_tiled, &hip_error_name,
            &hip_error_string, &hip_get_device, &hip_set_device, &hip_device_properties, &hip_memcpy,
            &hip_memset_async, &hip_event_create};
  }
};
static_assert(slots_list_every_member<Calls>());

// Everything about one vendor's library that is data: what it is called in messages, which
// attributes DeviceInfo reads, its symbols, how the library is found.
struct VendorTable {
  sagejit::Vendor vendor;
  std::string_view name;          // "CUDA": "CUDA device ordinal 3 is out of range", "CUDA backend: ..."
  std::string_view api;           // "CUDA driver": "CUDA driver call X failed", "CUDA driver 13.0"
  std::string_view runtime_noun;  // "the CUDA driver": "<noun> (<path>) reports 0 devices"
  std::string_view result_type;   // "CUresult": an error the library cannot name is "CUresult 999"
  std::string_view current;       // "CUDA context": "restoring the caller's CUDA context failed"
  // CUdevice_attribute / hipDeviceAttribute_t values of what DeviceInfo reports.
  int compute_units_attribute;
  int shared_memory_per_block_attribute;
  int shared_memory_per_block_optin_attribute;  // < 0: no opt-in (AMD), the plain limit is reported
  int warp_size_attribute;
  Calls symbols;             // names only; bind_symbols fills in the addresses
  OpenedLibrary (*open)();   // the library, or why there is none
};

}  // namespace sagejit::driver_api

namespace sagejit {

// Opens the vendor's library, binds its symbols and builds the Device over it (driver_device.cpp);
// a failure is kept with its reason (see platform/library_loader.hpp).
LoadedLibrary<Device> load_driver_device(const driver_api::VendorTable& vendor);

}  // namespace sagejit
