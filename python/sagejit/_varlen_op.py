"""torch.ops.sagejit.sageattn_varlen: packed varlen attention (docs/NUMERICS.md "Varlen") as a torch custom
operator, registered with sagejit::sageattn (_op.py imports this module).

    sageattn_varlen(Tensor q, Tensor k, Tensor v, Tensor cu_seqlens_q, Tensor cu_seqlens_k, int max_seqlen_q,
                    int max_seqlen_k, bool causal, float? sm_scale, bool smooth_k, bool return_lse)
        -> (Tensor out, Tensor lse)

q, out: [total_q, Hq, D]; k, v: [total_k, Hk, D]; cu_seqlens_*: int32 [batch + 1] on q's device, read by
the kernels where they are (no host synchronisation); lse: fp32 [Hq, total_q] when return_lse, else empty.
The library sees the packed tensors as NHD [1, total, H, D] with options.varlen. The CUDA kernel allocates
the output and a workspace tensor from torch's caching allocator on the current stream; the CPU kernel
runs the library's emulator (cu_seqlens then on the CPU); the fake kernel gives the shapes for
torch.compile; the backward is a clear error.
"""
import ctypes

import torch

from ._library import SagejitError, Tensor, check, error_for, last_error, library
from ._op_registration import register_inference_op
from ._torch_tensors import INVALID_ARGUMENT, dtype_code


def _check_arguments(q, k, v, cu_seqlens_q, cu_seqlens_k):
    """What every kernel checks first, fake kernel included (the library validates the rest)."""
    for tensor, name in ((q, "q"), (k, "k"), (v, "v")):
        if tensor.dim() != 3:
            raise SagejitError(INVALID_ARGUMENT, f"{name} has {tensor.dim()} dimensions (shape {tuple(tensor.shape)}); "
                               "a varlen call takes packed 3-D tensors [total, H, D]")
    for tensor, name in ((k, "k"), (v, "v"), (cu_seqlens_q, "cu_seqlens_q"), (cu_seqlens_k, "cu_seqlens_k")):
        if tensor.device != q.device:
            raise SagejitError(INVALID_ARGUMENT, f"{name} is on {tensor.device} but q is on {q.device}; a varlen call's "
                               "tensors and cu_seqlens are on one device")
    for tensor, name in ((cu_seqlens_q, "cu_seqlens_q"), (cu_seqlens_k, "cu_seqlens_k")):
        if tensor.dtype != torch.int32 or tensor.dim() != 1 or tensor.shape[0] < 2 or tensor.stride(0) != 1:
            raise SagejitError(INVALID_ARGUMENT, f"{name} is {tensor.dtype} of shape {tuple(tensor.shape)}; expected a "
                               "contiguous torch.int32 tensor of batch + 1 >= 2 values")
    if cu_seqlens_q.shape[0] != cu_seqlens_k.shape[0]:
        raise SagejitError(INVALID_ARGUMENT, f"cu_seqlens_q has {cu_seqlens_q.shape[0]} values but cu_seqlens_k "
                           f"{cu_seqlens_k.shape[0]}; both are batch + 1 long")
    # max_seqlen_q / max_seqlen_k: the library checks their range; sageattn_varlen that they are Python ints.


def _c_packed(tensor, name):
    """A packed [total, H, D] tensor as the library's NHD [1, total, H, D]."""
    c = Tensor()
    c.data = tensor.data_ptr()
    c.dtype = dtype_code(tensor.dtype, name)
    c.device = tensor.device.index if tensor.device.index is not None else 0
    c.shape[0], c.strides[0] = 1, tensor.shape[0] * tensor.stride(0)
    for i in range(3):
        c.shape[i + 1] = tensor.shape[i]
        c.strides[i + 1] = tensor.stride(i)
    return c


def _structs(q, k, v, out, lse, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, causal, sm_scale, smooth_k):
    from ._op import _options  # (at call time: _op imports this module as it loads)

    options = _options(1, causal, sm_scale, smooth_k)  # NHD
    options.lse = lse.data_ptr() if lse is not None else None
    options.varlen.cu_seqlens_q = cu_seqlens_q.data_ptr()
    options.varlen.cu_seqlens_k = cu_seqlens_k.data_ptr()
    options.varlen.batch = cu_seqlens_q.shape[0] - 1
    options.varlen.max_seqlen_q = max_seqlen_q
    options.varlen.max_seqlen_k = max_seqlen_k
    return _c_packed(q, "q"), _c_packed(k, "k"), _c_packed(v, "v"), _c_packed(out, "out"), options


def _outputs(q, return_lse):
    out = torch.empty(q.shape, dtype=q.dtype, device=q.device)
    lse = torch.empty((q.shape[1], q.shape[0]) if return_lse else (0,), dtype=torch.float32, device=q.device)
    return out, lse


def _call(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, causal, sm_scale, smooth_k, return_lse):
    """The checks, the outputs and the C ABI arguments a real kernel starts with."""
    _check_arguments(q, k, v, cu_seqlens_q, cu_seqlens_k)
    out, lse = _outputs(q, return_lse)
    structs = _structs(q, k, v, out, lse if return_lse else None, cu_seqlens_q, cu_seqlens_k, max_seqlen_q,
                       max_seqlen_k, causal, sm_scale, smooth_k)
    return out, lse, structs


def _gpu_kernel(*args):
    q = args[0]
    out, lse, (cq, ck, cv, cout, options) = _call(*args)
    nbytes = ctypes.c_size_t(0)
    check(library().sagejit_workspace_size(ctypes.byref(cq), ctypes.byref(ck), ctypes.byref(cv), ctypes.byref(options),
                                           ctypes.byref(nbytes)))
    workspace = torch.empty((max(nbytes.value, 1),), dtype=torch.uint8, device=q.device)
    launch = library().sagejit_default_launch()
    launch.stream = torch.cuda.current_stream(q.device).cuda_stream
    launch.workspace = workspace.data_ptr()
    launch.workspace_bytes = nbytes.value
    status = library().sagejit_attention_launch(ctypes.byref(cq), ctypes.byref(ck), ctypes.byref(cv), ctypes.byref(cout),
                                                ctypes.byref(options), ctypes.byref(launch))
    if status != 0:
        raise error_for(status, last_error())
    return out, lse


def _cpu_kernel(*args):
    out, lse, (cq, ck, cv, cout, options) = _call(*args)
    # None: the library's default target, whose kernels' numerics are emulated (sagejit.h).
    check(library().sagejit_emulate_attention(ctypes.byref(cq), ctypes.byref(ck), ctypes.byref(cv), ctypes.byref(cout),
                                              ctypes.byref(options), None))
    return out, lse


def _fake_kernel(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, causal, sm_scale, smooth_k,
                 return_lse):
    _check_arguments(q, k, v, cu_seqlens_q, cu_seqlens_k)
    return q.new_empty(q.shape), q.new_empty((q.shape[1], q.shape[0]) if return_lse else (0,), dtype=torch.float32)


_library = torch.library.Library("sagejit", "FRAGMENT")
sageattn_varlen_op = register_inference_op(
    _library, "sageattn_varlen", "(Tensor q, Tensor k, Tensor v, Tensor cu_seqlens_q, Tensor cu_seqlens_k, "
    "int max_seqlen_q, int max_seqlen_k, bool causal, float? sm_scale, bool smooth_k, bool return_lse) "
    "-> (Tensor, Tensor)", _gpu_kernel, _cpu_kernel, _fake_kernel, "a training attention (flash-attn, torch SDPA)")
