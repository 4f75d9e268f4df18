#pragma once
// sagejit public C++ API: SageAttention (INT8 QK^T, FP8 or FP16 PV, FP32 accumulation) on strided
// device tensors, compiled for the GPU at hand on first use and cached.
//
//   sagejit::TensorView q{q_ptr, sagejit::DType::bf16, {B, H, N, D}, sagejit::contiguous_strides({B, H, N, D})};
//   ... k, v, out likewise (out has q's shape) ...
//   sagejit::AttentionOptions options;
//   options.causal = true;
//   sagejit::attention(q, k, v, out, options, stream);
//
// The public headers are C++17 (the exported target requires cxx_std_17); the library is C++20.
//
// Every function validates its arguments before anything is launched and throws sagejit::Error
// (<sagejit/error.hpp>) whose message names the argument at fault and the accepted values.
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sagejit/error.hpp"
#include "sagejit/export.hpp"
#include "sagejit/types.hpp"
#include "sagejit/version.h"

namespace sagejit {

struct AttentionOptions {
  // Dimension order of q, k, v and out: HND = [B, H, N, D], NHD = [B, N, H, D].
  Layout layout = Layout::HND;
  // PyTorch SDPA's is_causal convention (top-left aligned: query i sees keys 0..i).
  bool causal = false;
  // Softmax scale; 1/sqrt(head_dim) when absent. Must be finite and > 0.
  std::optional<float> sm_scale;
  // Subtract the per-channel mean of K (over every eighth key: docs/NUMERICS.md "K mean") before
  // quantizing (SageAttention's smooth_k).
  bool smooth_k = true;
  // Optional log-sum-exp output, fp32 [B, Hq, Nq] contiguous, on the tensors' device: the natural
  // log of sum_j exp(q_i . k_j * sm_scale) (what torch.logsumexp gives). nullptr: not computed.
  float* lse = nullptr;
  // Device ordinal the call runs on; -1: the device of q. Every tensor must be on it.
  int device = -1;
  // A key mask (KeyMask, <sagejit/types.hpp>), on the call's device; type none: every key attends.
  // It is read by the kernels as it is (no copy, no host synchronisation); docs/NUMERICS.md "Key masks".
  KeyMask key_mask;
  // A packed varlen call (Varlen, <sagejit/types.hpp>): layout NHD, tensors [1, total, H, D]; the LSE
  // output is then [Hq, total_q]. Not with a key mask. Default: a dense call.
  Varlen varlen;
};

// A caller-owned device buffer for the quantized copies of q/k/v and their scales.
struct Workspace {
  void* data = nullptr;
  std::size_t bytes = 0;
};

// Whether a call is supported and, if not, why (the message attention() would throw).
struct Support {
  bool ok = false;
  std::string reason;
  explicit operator bool() const noexcept { return ok; }
};

// Validates the call and checks that its device has kernels, without launching or compiling
// anything. Never throws for a bad argument (that is the reason); only for out-of-memory.
SAGEJIT_API Support supports(const TensorView& q, const TensorView& k, const TensorView& v, const TensorView& out,
                             const AttentionOptions& options = {});

// Bytes of workspace the call needs (exactly what attention() with a caller's workspace requires).
// Needs the device (the tile config chosen for its arch decides the V format); throws like attention().
SAGEJIT_API std::size_t workspace_size(const TensorView& q, const TensorView& k, const TensorView& v,
                                       const AttentionOptions& options = {});

// out = softmax(q k^T * sm_scale) v, enqueued on `stream` (cudaStream_t / hipStream_t; nullptr: the
// default stream). bf16/fp16; head_dim D a multiple of 8 up to 256: 64, 128 and 256 run natively, any
// other D zero-padded to the next of them (costing what that one costs; sm_scale stays 1/sqrt(D)). The workspace is the runtime's own, one per (device, stream), grown on demand and
// reused: the steady state allocates nothing. Safe to call from many threads on different streams.
// Graph capture: after a warm-up call of the same or a larger size on `stream`, a captured call is
// launch-only; a call that would have to grow the workspace during a capture throws
// Error(unsupported) and enqueues nothing (docs/API.md, "Graph capture").
SAGEJIT_API void attention(const TensorView& q, const TensorView& k, const TensorView& v, const TensorView& out,
                           const AttentionOptions& options = {}, void* stream = nullptr);

// The same with a caller's workspace (at least workspace_size() bytes; a smaller one throws naming the
// size needed). The workspace must stay valid until the work enqueued on `stream` has finished.
SAGEJIT_API void attention(const TensorView& q, const TensorView& k, const TensorView& v, const TensorView& out,
                           const AttentionOptions& options, void* stream, Workspace workspace);

// The same computation on the CPU: the emulator of the quantized algorithm (docs/NUMERICS.md) on HOST
// memory. q, k, v, out and options.lse are host pointers; each TensorView's `device` and
// options.device are ignored. `target` names the GPU arch whose kernels are emulated ("gfx1201",
// "sm_90", ...; supported_archs() lists them): the plan for that target picks the tile configs (key
// tile, fp8 or fp16 PV) exactly as attention() on such a GPU would, so the result is that GPU's
// output up to accumulation order (bit for bit in the quantized values). The same validation as
// attention(); an unknown target throws Error(invalid_argument) naming `target` and the accepted
// archs. Runs on the calling thread and worker threads (one per core); needs no GPU.
// The GPU arch emulated when none is named: sagejit's first target, the Radeon AI PRO R9700 / RX 9070.
inline constexpr std::string_view default_emulated_target = "gfx1201";

SAGEJIT_API void emulate_attention(const TensorView& q, const TensorView& k, const TensorView& v,
                                   const TensorView& out, const AttentionOptions& options = {},
                                   std::string_view target = default_emulated_target);

// Whether a call is supported on `target` (validation and the plan of attention() for that GPU, no
// device needed, nothing computed), and if not, why. Host or device pointers alike: none is read.
SAGEJIT_API Support supports_target(const TensorView& q, const TensorView& k, const TensorView& v,
                                    const TensorView& out, const AttentionOptions& options = {},
                                    std::string_view target = default_emulated_target);

// Frees the runtime's own workspaces (after waiting for the work of their streams), including the
// buffers kept because a captured graph may use them: graphs that captured attention() calls must
// not be launched afterwards. Throws Error(unsupported), freeing nothing, while one of their streams
// is being captured. The next attention() without a caller's workspace allocates again.
SAGEJIT_API void release_workspaces();

// Bytes currently held by the runtime's own workspaces, over all devices and streams.
SAGEJIT_API std::size_t workspace_bytes_held();

// Whether the kernels take this head dim (the attention plan's rule, checked without any tensor), and
// if not, why (naming the accepted head dims).
SAGEJIT_API Support supports_head_dim(std::int64_t head_dim);

// Archs that have attention kernels and tuning tables ("gfx1200", "gfx1201", "sm_89", "sm_90").
SAGEJIT_API std::vector<std::string> supported_archs();

// Directories to search for the GPU runtime libraries (HIP runtime, hipRTC, NVRTC) before the toolkit
// roots: a host that bundles them (the Python package hands over torch's lib/, the rocm_sdk core lib/,
// pip's NVRTC dirs) says where. Call it before the first attention, compile or device query: the
// libraries are chosen once per process, and a later call throws Error(unsupported). The whole order
// is docs/RUNTIME_DISCOVERY.md; SAGEJIT_LIBRARY_DIRS does the same for processes started with it.
SAGEJIT_API void set_library_search_dirs(const std::vector<std::string>& directories);

// "0.1.0": the library loaded at run time (SAGEJIT_VERSION_STRING, <sagejit/version.h>, is the headers').
SAGEJIT_API std::string_view version() noexcept;

}  // namespace sagejit
