/* sagejit C ABI: the public API for any language (Python's ctypes binding uses it).
 *
 * Every function returns a status; on failure sagejit_last_error() gives the message of the calling
 * thread's last failed call (it names the argument at fault and the accepted values). No exception
 * or signal crosses this boundary. Structs are plain C; sizes and strides are in elements.
 *
 * Binary compatibility: SAGEJIT_ABI_VERSION (<sagejit/version.h>) is the ABI of these headers and the
 * SONAME of the library (libsagejit.so.<ABI>); it changes only when a change breaks existing binaries.
 * Options grow compatibly through sagejit_options.struct_size. */
#ifndef SAGEJIT_H
#define SAGEJIT_H

#include <stddef.h>
#include <stdint.h>

#include "sagejit/version.h"

#if defined(_WIN32)
#define SAGEJIT_C_API
#else
#define SAGEJIT_C_API __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Mirrors sagejit::ErrorCode. */
typedef enum sagejit_status {
  SAGEJIT_SUCCESS = 0,
  SAGEJIT_ERROR_INVALID_ARGUMENT = 1,
  SAGEJIT_ERROR_UNSUPPORTED = 2,
  SAGEJIT_ERROR_RUNTIME_NOT_FOUND = 3,
  SAGEJIT_ERROR_DEVICE = 4,
  SAGEJIT_ERROR_COMPILE = 5,
  SAGEJIT_ERROR_CACHE = 6,
  SAGEJIT_ERROR_CONFIG = 7,
  SAGEJIT_ERROR_INTERNAL = 8
} sagejit_status;

/* Mirrors sagejit::DType; only BF16 and FP16 are accepted inputs. */
typedef enum sagejit_dtype {
  SAGEJIT_DTYPE_BF16 = 0,
  SAGEJIT_DTYPE_FP16 = 1,
  SAGEJIT_DTYPE_FP32 = 2,
  SAGEJIT_DTYPE_FP64 = 3,
  SAGEJIT_DTYPE_INT8 = 4,
  SAGEJIT_DTYPE_FP8_E4M3 = 5
} sagejit_dtype;

typedef enum sagejit_layout {
  SAGEJIT_LAYOUT_HND = 0, /* [B, H, N, D] */
  SAGEJIT_LAYOUT_NHD = 1  /* [B, N, H, D] */
} sagejit_layout;

/* A strided 4-D device tensor; shape and strides in the layout's own dimension order. */
typedef struct sagejit_tensor {
  void* data;
  int32_t dtype; /* sagejit_dtype */
  int32_t device; /* device ordinal */
  int64_t shape[4];
  int64_t strides[4];
} sagejit_tensor;

/* Element type of a key mask (docs/NUMERICS.md "Key masks"). */
typedef enum sagejit_mask_type {
  SAGEJIT_MASK_NONE = 0,
  SAGEJIT_MASK_BOOL = 1, /* 1 byte, nonzero = attend (torch SDPA's convention) */
  SAGEJIT_MASK_FP32 = 2, /* additive bias on the scaled scores; -inf masks the key */
  SAGEJIT_MASK_BF16 = 3,
  SAGEJIT_MASK_FP16 = 4
} sagejit_mask_type;

/* A mask per (batch item, key): shape {B or 1, Nk}, strides in elements (>= 0; 0 broadcasts), on the
 * call's device (host memory for sagejit_emulate_attention). A torch mask that broadcasts along heads
 * and queries ([B, 1, 1, Nk], an expanded [B, H, Nq, Nk]) is this view of its first and last dims; one
 * that varies along the heads adds sagejit_options.key_mask_heads. */
typedef struct sagejit_key_mask {
  const void* data; /* NULL with SAGEJIT_MASK_NONE */
  int32_t type;     /* sagejit_mask_type */
  int32_t device;   /* device ordinal */
  int64_t shape[2];
  int64_t strides[2];
} sagejit_key_mask;

/* A packed varlen call (flash_attn_varlen_func's convention; docs/NUMERICS.md "Varlen"): layout NHD,
 * q, k, v and out of shape {1, total, H, D} holding the sequences back to back, sequence b being rows
 * cu_seqlens[b] .. cu_seqlens[b + 1] - 1. The arrays (int32, batch + 1 values, on the call's device;
 * host memory for sagejit_emulate_attention) are read by the kernels without a host synchronisation:
 * they must start at 0, not decrease, end at the totals, no sequence longer than its max_seqlen (one
 * that is is clamped: no access outside the tensors, but a wrong result for it). The LSE output is
 * then fp32 [Hq, total_q]. Not with a key mask. All zero (cu_seqlens NULL): a dense call. */
typedef struct sagejit_key_mask_heads {
  int64_t count;  /* 1 or Hq */
  int64_t stride; /* elements between two heads' rows of the mask */
} sagejit_key_mask_heads;

typedef struct sagejit_varlen {
  const int32_t* cu_seqlens_q;
  const int32_t* cu_seqlens_k;
  int64_t batch; /* sequences */
  int64_t max_seqlen_q;
  int64_t max_seqlen_k;
} sagejit_varlen;

/* Options of a call. The struct can grow: new fields are only ever appended, and struct_size (the
 * first field) says how many bytes the caller's struct has. Start from sagejit_default_options(),
 * which sets struct_size to the sizeof(sagejit_options) of the library. A library accepts every
 * struct_size from SAGEJIT_OPTIONS_V1_SIZE up to its own sizeof(sagejit_options); fields past the
 * caller's struct_size take their defaults. Any other struct_size (0, a truncated struct, a struct
 * from newer headers than the library) is SAGEJIT_ERROR_INVALID_ARGUMENT naming options.struct_size. */
typedef struct sagejit_options {
  uint32_t struct_size; /* bytes of this struct as the caller declared it; see above (since ABI 1) */
  int32_t layout;       /* sagejit_layout */
  int32_t causal;       /* 0 | 1 */
  int32_t has_sm_scale; /* 0: sm_scale = 1/sqrt(head_dim) */
  float sm_scale;
  int32_t smooth_k;     /* 0 | 1 (default 1) */
  int32_t device;       /* -1: the device of q */
  float* lse;           /* fp32 [B, Hq, Nq] contiguous, or NULL */
  sagejit_key_mask key_mask; /* type SAGEJIT_MASK_NONE: no mask (since SAGEJIT_OPTIONS_V2_SIZE) */
  sagejit_varlen varlen;     /* cu_seqlens NULL: a dense call (since SAGEJIT_OPTIONS_V3_SIZE) */
  /* The key mask's heads: count 1 (the default) is one mask for every head; count Hq a mask per query
   * head, head h's row at h * stride elements (only where q and k have the same heads). Since V4. */
  sagejit_key_mask_heads key_mask_heads;
  /* Append new fields here (and a SAGEJIT_OPTIONS_V<n>_SIZE for them); never reorder or remove. */
} sagejit_options;

/* The size of the first sagejit_options with struct_size (ABI 1): everything up to and including lse. */
#define SAGEJIT_OPTIONS_V1_SIZE (offsetof(sagejit_options, lse) + sizeof(float*))
/* ... and the key mask (0.2.0). */
#define SAGEJIT_OPTIONS_V2_SIZE (offsetof(sagejit_options, key_mask) + sizeof(sagejit_key_mask))
/* ... and varlen. */
#define SAGEJIT_OPTIONS_V3_SIZE (offsetof(sagejit_options, varlen) + sizeof(sagejit_varlen))
/* ... and the key mask's heads. */
#define SAGEJIT_OPTIONS_V4_SIZE (offsetof(sagejit_options, key_mask_heads) + sizeof(sagejit_key_mask_heads))

/* Defaults: struct_size = sizeof(sagejit_options), HND, not causal, default scale, smooth_k on,
 * device of q, no LSE, no key mask (its heads: count 1), dense (not varlen). */
SAGEJIT_C_API sagejit_options sagejit_default_options(void);

/* out = attention(q, k, v) on `stream` (cudaStream_t / hipStream_t, NULL = default stream) with the
 * runtime's per-(device, stream) workspace. options may be NULL (defaults). Graph capture: after a
 * warm-up call of the same or a larger size on `stream`, a captured call is launch-only; one that would
 * grow the workspace during a capture is SAGEJIT_ERROR_UNSUPPORTED (docs/API.md, "Graph capture"). */
SAGEJIT_C_API sagejit_status sagejit_attention(const sagejit_tensor* q, const sagejit_tensor* k,
                                               const sagejit_tensor* v, const sagejit_tensor* out,
                                               const sagejit_options* options, void* stream);

/* The same with a caller's workspace of workspace_bytes (>= sagejit_workspace_size). */
SAGEJIT_C_API sagejit_status sagejit_attention_with_workspace(const sagejit_tensor* q, const sagejit_tensor* k,
                                                              const sagejit_tensor* v, const sagejit_tensor* out,
                                                              const sagejit_options* options, void* stream,
                                                              void* workspace, size_t workspace_bytes);

/* Where a call runs: the stream and, optionally, the caller's workspace, in one struct that grows like
 * sagejit_options (struct_size first; start from sagejit_default_launch(), which sets it to the
 * library's sizeof(sagejit_launch); accepted: SAGEJIT_LAUNCH_V1_SIZE up to that size). */
typedef struct sagejit_launch {
  uint32_t struct_size;   /* bytes of this struct as the caller declared it (since ABI 1) */
  void* stream;           /* cudaStream_t / hipStream_t; NULL = the default stream */
  void* workspace;        /* a device buffer of workspace_bytes (>= sagejit_workspace_size, aligned to 256 bytes),
                             or NULL: the runtime's own per-(device, stream) workspace */
  size_t workspace_bytes; /* 0 when workspace is NULL */
  /* Append new fields here (and a SAGEJIT_LAUNCH_V<n>_SIZE for them); never reorder or remove. */
} sagejit_launch;

/* The size of the first sagejit_launch: everything up to and including workspace_bytes. */
#define SAGEJIT_LAUNCH_V1_SIZE (offsetof(sagejit_launch, workspace_bytes) + sizeof(size_t))

/* Defaults: struct_size = sizeof(sagejit_launch), the default stream, the runtime's workspace. */
SAGEJIT_C_API sagejit_launch sagejit_default_launch(void);

/* sagejit_attention / sagejit_attention_with_workspace with the stream and workspace in `launch`
 * (NULL = sagejit_default_launch()): one struct a caller fills once and reuses, setting the stream and
 * workspace of each call. A repeated call of one signature (shapes, dtype, options; not the pointers or
 * strides) is a lookup of its plan and kernels plus the launches: no host allocation. A workspace of
 * NULL with workspace_bytes != 0 is SAGEJIT_ERROR_INVALID_ARGUMENT naming launch->workspace_bytes. */
SAGEJIT_C_API sagejit_status sagejit_attention_launch(const sagejit_tensor* q, const sagejit_tensor* k,
                                                      const sagejit_tensor* v, const sagejit_tensor* out,
                                                      const sagejit_options* options, const sagejit_launch* launch);

/* CPU emulation of sagejit_attention (sagejit::emulate_attention): the emulator of the quantized
 * algorithm (docs/NUMERICS.md) on HOST memory. q, k, v, out and options->lse (fp32 [B, Hq, Nq]
 * contiguous, or NULL) are host pointers; each tensor's `device` and options->device are ignored.
 * Shapes, strides and dtypes follow the rules of sagejit_attention. `target` names the GPU arch whose
 * kernels' numerics are emulated ("gfx1201", "sm_90", ...; NULL = "gfx1201"): the tile configs (key
 * tile, fp8 or fp16 PV) are chosen for it exactly as a call on that GPU would choose them. An unknown
 * target is SAGEJIT_ERROR_INVALID_ARGUMENT naming `target` and the accepted archs. Needs no GPU. */
SAGEJIT_C_API sagejit_status sagejit_emulate_attention(const sagejit_tensor* q, const sagejit_tensor* k,
                                                       const sagejit_tensor* v, const sagejit_tensor* out,
                                                       const sagejit_options* options, const char* target);

/* *supported = 1 when the call is supported (nothing is launched); otherwise 0 and
 * sagejit_last_error() holds the reason. Returns SAGEJIT_SUCCESS unless an argument of this function
 * itself (supported == NULL) is bad. */
SAGEJIT_C_API sagejit_status sagejit_supports(const sagejit_tensor* q, const sagejit_tensor* k,
                                              const sagejit_tensor* v, const sagejit_tensor* out,
                                              const sagejit_options* options, int* supported);

/* sagejit_supports for the GPU arch `target` (NULL = "gfx1201") instead of q's device: validation and
 * the plan a call on such a GPU would get; needs no GPU, reads no tensor data (host tensors, for
 * sagejit_emulate_attention, are fine). Returns SAGEJIT_SUCCESS unless supported == NULL. */
SAGEJIT_C_API sagejit_status sagejit_supports_target(const sagejit_tensor* q, const sagejit_tensor* k,
                                                     const sagejit_tensor* v, const sagejit_tensor* out,
                                                     const sagejit_options* options, const char* target,
                                                     int* supported);

/* *bytes = workspace bytes the call needs. */
SAGEJIT_C_API sagejit_status sagejit_workspace_size(const sagejit_tensor* q, const sagejit_tensor* k,
                                                    const sagejit_tensor* v, const sagejit_options* options,
                                                    size_t* bytes);

/* SAGEJIT_SUCCESS when the kernels take head_dim; otherwise SAGEJIT_ERROR_UNSUPPORTED and
 * sagejit_last_error() names the accepted head dims. (Python's patch_sdpa routes by it.) */
SAGEJIT_C_API sagejit_status sagejit_check_head_dim(int64_t head_dim);

/* Frees the runtime's own workspaces, including those kept for captured graphs (which must not be
 * launched afterwards); SAGEJIT_ERROR_UNSUPPORTED, freeing nothing, while one of their streams is
 * being captured. */
SAGEJIT_C_API sagejit_status sagejit_release_workspaces(void);

/* Message of the calling thread's last failed call ("" when none); valid until its next call. */
SAGEJIT_C_API const char* sagejit_last_error(void);

/* Name of a status code ("invalid argument", ...). */
SAGEJIT_C_API const char* sagejit_status_string(sagejit_status status);

/* Directories (':'-separated) to search for the GPU runtime libraries (HIP runtime, hipRTC, NVRTC)
 * before the toolkit roots; see set_library_search_dirs in sagejit.hpp. Call it before the first
 * attention call: afterwards the libraries are chosen and it returns SAGEJIT_ERROR_UNSUPPORTED. */
SAGEJIT_C_API sagejit_status sagejit_set_library_search_dirs(const char* directories);

/* "0.1.0": the library loaded at run time (SAGEJIT_VERSION_STRING is the headers'). */
SAGEJIT_C_API const char* sagejit_version(void);

#ifdef __cplusplus
}
#endif

#endif /* SAGEJIT_H */
