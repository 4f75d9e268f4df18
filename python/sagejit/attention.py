"""sageattn() with SageAttention's signature and semantics, and supports(), over the C ABI."""
import ctypes
import math
from collections import namedtuple

from ._library import Options, SagejitError, Tensor, check, last_error, library
from ._torch_tensors import INVALID_ARGUMENT, check_tensor, to_c_tensor

_LAYOUTS = {"HND": 0, "NHD": 1}
_IGNORED_SAGEATTENTION_KEYWORDS = {"qk_quant_gran", "pv_accum_dtype", "smooth_v"}

Support = namedtuple("Support", ["ok", "reason"])
Support.__bool__ = lambda self: bool(self.ok)
Support.__doc__ = "Whether a call is supported (ok) and, if not, why (reason)."


def _options(tensor_layout, is_causal, sm_scale, smooth_k, lse_pointer):
    if tensor_layout not in _LAYOUTS:
        raise SagejitError(INVALID_ARGUMENT, f"tensor_layout {tensor_layout!r} is not one of ['HND', 'NHD']")
    options = library().sagejit_default_options()
    options.layout = _LAYOUTS[tensor_layout]
    options.causal = 1 if is_causal else 0
    if sm_scale is not None:
        options.has_sm_scale = 1
        options.sm_scale = float(sm_scale)
        if not math.isfinite(options.sm_scale):
            raise SagejitError(INVALID_ARGUMENT, f"sm_scale {sm_scale} is not finite")
    options.smooth_k = 1 if smooth_k else 0
    options.device = -1
    options.lse = lse_pointer
    return options


def _lse_shape(q, tensor_layout):
    batch, heads, tokens = (q.shape[0], q.shape[1], q.shape[2]) if tensor_layout == "HND" else \
        (q.shape[0], q.shape[2], q.shape[1])
    return (batch, heads, tokens)


def _current_stream(device):
    import torch

    return ctypes.c_void_p(torch.cuda.current_stream(device).cuda_stream)


def sageattn(q, k, v, tensor_layout="HND", is_causal=False, sm_scale=None, return_lse=False, smooth_k=True,
             **kwargs):
    """SageAttention forward: softmax(q k^T * sm_scale) v with INT8 QK^T and FP8/FP16 PV.

    q: [B, Hq, Nq, D] (HND) or [B, Nq, Hq, D] (NHD); k, v: [B, Hk, Nk, D] / [B, Nk, Hk, D] with
    Hq % Hk == 0; bf16 or fp16, D a multiple of 8 up to 128 (64 and 128 natively, others zero-padded
    to the next of them), last dimension contiguous, any other strides.
    sm_scale defaults to 1/sqrt(D); is_causal follows torch SDPA (query i sees keys 0..i).
    Returns the output (q's shape and dtype, contiguous) and, with return_lse, also the natural
    log-sum-exp of the scaled scores, fp32 [B, Hq, Nq] (what torch.logsumexp gives).
    Runs on the current torch stream; the workspace comes from torch's caching allocator.
    SageAttention's kernel-selection keywords (qk_quant_gran, pv_accum_dtype, smooth_v) are accepted
    and ignored: sagejit picks its kernels from its tuning tables. Other keywords are a TypeError.
    """
    import torch

    unknown = sorted(set(kwargs) - _IGNORED_SAGEATTENTION_KEYWORDS)
    if unknown:
        raise TypeError(f"sageattn() got unexpected keyword arguments: {', '.join(unknown)}")

    for tensor, name in ((q, "q"), (k, "k"), (v, "v")):
        check_tensor(tensor, name)
    lib = library()
    out = torch.empty(q.shape, dtype=q.dtype, device=q.device)
    lse = torch.empty(_lse_shape(q, tensor_layout), dtype=torch.float32, device=q.device) if return_lse else None
    options = _options(tensor_layout, is_causal, sm_scale, smooth_k, lse.data_ptr() if lse is not None else None)
    cq, ck, cv, cout = (to_c_tensor(t, n) for t, n in ((q, "q"), (k, "k"), (v, "v"), (out, "out")))
    with torch.cuda.device(q.device):
        nbytes = ctypes.c_size_t(0)
        check(lib.sagejit_workspace_size(ctypes.byref(cq), ctypes.byref(ck), ctypes.byref(cv), ctypes.byref(options),
                                         ctypes.byref(nbytes)))
        workspace = torch.empty(nbytes.value, dtype=torch.uint8, device=q.device)
        check(lib.sagejit_attention_with_workspace(ctypes.byref(cq), ctypes.byref(ck), ctypes.byref(cv),
                                                   ctypes.byref(cout), ctypes.byref(options),
                                                   _current_stream(q.device), ctypes.c_void_p(workspace.data_ptr()),
                                                   nbytes))
    return (out, lse) if return_lse else out


def supports(q, k, v, tensor_layout="HND", is_causal=False, sm_scale=None, return_lse=False, smooth_k=True):
    """Support(ok, reason): whether sageattn() accepts this call, checked without launching anything."""
    try:
        for tensor, name in ((q, "q"), (k, "k"), (v, "v")):
            check_tensor(tensor, name)
        # The output sageattn() would allocate: q's shape, dense. Its address is never used here.
        out = Tensor()
        out.data = q.data_ptr()
        out.dtype = to_c_tensor(q, "q").dtype
        out.device = q.device.index if q.device.index is not None else 0
        stride = 1
        for i in reversed(range(4)):
            out.shape[i] = q.shape[i]
            out.strides[i] = stride
            stride *= q.shape[i]
        options = _options(tensor_layout, is_causal, sm_scale, smooth_k, q.data_ptr() if return_lse else None)
        cq, ck, cv = (to_c_tensor(t, n) for t, n in ((q, "q"), (k, "k"), (v, "v")))
    except SagejitError as error:
        return Support(False, str(error))
    supported = ctypes.c_int(0)
    check(library().sagejit_supports(ctypes.byref(cq), ctypes.byref(ck), ctypes.byref(cv), ctypes.byref(out),
                                     ctypes.byref(options), ctypes.byref(supported)))
    return Support(True, "") if supported.value == 1 else Support(False, last_error())


def release_workspaces():
    """Frees the library's own workspaces (sageattn uses torch's allocator instead; C++ callers use these)."""
    check(library().sagejit_release_workspaces())


def version():
    return library().sagejit_version().decode()
