"""torch.ops.sagejit.sageattn: the attention as a torch custom operator.

    sageattn(Tensor q, Tensor k, Tensor v, int layout, bool causal, float? sm_scale, bool smooth_k,
             bool return_lse, Tensor? key_mask=None) -> (Tensor out, Tensor lse)

`key_mask` is torch SDPA's attn_mask when it is a key mask (sagejit/_key_mask.py: the same for every
head and query); the kernels read it where it is.

Registered with torch.library at import (torch >= 2.4; no compiled extension, so no torch ABI
coupling): a CUDA kernel (CUDA and ROCm devices: torch calls both "cuda"), a CPU kernel that runs the
library's emulator of the numerics contract (slow, exact), a fake kernel that gives the output shapes
so that torch.compile(fullgraph=True) traces the op without a graph break, and an autograd formula
whose backward is a clear error (sagejit is inference only). `lse` is fp32 [B, Hq, Nq] when
return_lse, else an empty tensor. Arguments are validated by sagejit.sageattn (the public entry) and,
authoritatively, by the library when the op runs.

Host cost: a launch keeps the ctypes arguments of each call signature (shapes, strides, dtype,
device, options) per thread, so a repeated call only sets four data pointers, allocates the output
and workspace through torch's caching allocator and makes one C call.
"""
import ctypes
import threading

import torch

from . import _key_mask
from ._library import SagejitError, Tensor, UnsupportedCall, check, last_error, library
from ._torch_tensors import INVALID_ARGUMENT, to_c_tensor

LAYOUT_CODES = {"HND": 0, "NHD": 1}
_MIN_TORCH = (2, 4)


def _torch_version():
    parts = torch.__version__.split("+")[0].split(".")
    return tuple(int("".join(ch for ch in part if ch.isdigit()) or 0) for part in parts[:2])


if _torch_version() < _MIN_TORCH:
    raise ImportError(f"sagejit's torch operator needs torch >= {'.'.join(map(str, _MIN_TORCH))} "
                      f"(torch.library.register_fake); this is torch {torch.__version__}")


def check_op_arguments(q, k, v, layout):
    """What every kernel of the op checks first, fake kernel included: the layout code, and one device for q,
    k and v (else the Meta key of a meta input would run the fake kernel and return empty memory)."""
    if isinstance(layout, bool) or not isinstance(layout, int) or layout not in (0, 1):
        raise SagejitError(INVALID_ARGUMENT, f"layout {layout!r} is not 0 (HND) or 1 (NHD)")
    if k.device != q.device or v.device != q.device:
        raise SagejitError(INVALID_ARGUMENT, f"q, k and v must be on one device (q: {q.device}, k: {k.device}, "
                           f"v: {v.device})")


def lse_shape(q, layout):
    """[B, Hq, Nq] of q in `layout` (0 = HND, 1 = NHD)."""
    return (q.shape[0], q.shape[1], q.shape[2]) if layout == 0 else (q.shape[0], q.shape[2], q.shape[1])


def _options(layout, causal, sm_scale, smooth_k):
    options = library().sagejit_default_options()
    options.layout = layout
    options.causal = 1 if causal else 0
    if sm_scale is not None:
        options.has_sm_scale = 1
        options.sm_scale = float(sm_scale)
    options.smooth_k = 1 if smooth_k else 0
    options.device = -1
    return options


class _Signature:
    """The ctypes arguments of one call signature; only data pointers change between calls."""

    __slots__ = ("cq", "ck", "cv", "cout", "options", "args", "workspace_bytes", "lse_shape")

    def __init__(self, q, k, v, layout, causal, sm_scale, smooth_k, return_lse, measure_workspace, key_mask=None):
        self.cq, self.ck, self.cv = to_c_tensor(q, "q"), to_c_tensor(k, "k"), to_c_tensor(v, "v")
        # The output sageattn allocates: q's shape and dtype, dense.
        self.cout = Tensor()
        self.cout.dtype = self.cq.dtype
        self.cout.device = self.cq.device
        stride = 1
        for i in reversed(range(4)):
            self.cout.shape[i] = q.shape[i]
            self.cout.strides[i] = stride
            stride *= q.shape[i]
        self.options = _options(layout, causal, sm_scale, smooth_k)
        self.options.key_mask = _key_mask.c_key_mask(key_mask, q, k, layout)
        self.lse_shape = lse_shape(q, layout) if return_lse else None
        self.args = tuple(ctypes.byref(x) for x in (self.cq, self.ck, self.cv, self.cout, self.options))
        self.workspace_bytes = 0
        # Asked before anything is allocated for the call, with placeholder addresses (no data is read):
        # a GPU call's workspace, which depends on whether an LSE is written (a per-row correction term),
        # or whether the emulator's kernels take the call at all (a sequence past the limits is
        # UnsupportedCall, not torch failing to allocate its output).
        placeholder = (ctypes.c_float * 1)()
        self.options.lse = ctypes.addressof(placeholder) if return_lse else None
        self.cout.data = ctypes.addressof(placeholder)
        try:
            if measure_workspace:
                nbytes = ctypes.c_size_t(0)
                check(library().sagejit_workspace_size(self.args[0], self.args[1], self.args[2], self.args[4],
                                                       ctypes.byref(nbytes)))
                self.workspace_bytes = nbytes.value
            else:
                supported = ctypes.c_int(0)
                check(library().sagejit_supports_target(*self.args, None, ctypes.byref(supported)))
                if supported.value != 1:
                    raise UnsupportedCall(last_error())
        finally:
            self.options.lse = None
            self.cout.data = None

    def bind(self, q, k, v, out, lse, key_mask=None):
        self.cq.data, self.ck.data, self.cv.data, self.cout.data = (
            q.data_ptr(), k.data_ptr(), v.data_ptr(), out.data_ptr())
        self.options.lse = lse.data_ptr() if self.lse_shape is not None else None
        self.options.key_mask.data = key_mask.data_ptr() if key_mask is not None else None


_signatures = threading.local()  # per thread: the ctypes structs are mutated by each call


def _signature(q, k, v, layout, causal, sm_scale, smooth_k, return_lse, gpu, key_mask=None):
    cache = getattr(_signatures, "by_key", None)
    if cache is None:
        cache = _signatures.by_key = {}
    key = (q.shape, q.stride(), k.shape, k.stride(), v.shape, v.stride(), q.dtype, k.dtype, v.dtype, q.device,
           k.device, v.device, layout, causal, sm_scale, smooth_k, return_lse, _key_mask.signature(key_mask))
    signature = cache.get(key)
    if signature is None:
        if len(cache) > 256:  # a bound on what a process of changing shapes keeps
            cache.clear()
        signature = cache[key] = _Signature(q, k, v, layout, causal, sm_scale, smooth_k, return_lse, gpu, key_mask)
    return signature


def _empty_lse(q, signature):
    if signature.lse_shape is not None:
        return torch.empty(signature.lse_shape, dtype=torch.float32, device=q.device)
    return torch.empty((0,), dtype=torch.float32, device=q.device)


_raw_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None)


def _current_stream(device):
    index = device.index if device.index is not None else torch.cuda.current_device()
    if _raw_stream is not None:
        return _raw_stream(index)
    return torch.cuda.current_stream(index).cuda_stream


def _gpu_kernel(q, k, v, layout, causal, sm_scale, smooth_k, return_lse, key_mask=None):
    check_op_arguments(q, k, v, layout)
    signature = _signature(q, k, v, layout, causal, sm_scale, smooth_k, return_lse, True, key_mask)
    out = torch.empty(q.shape, dtype=q.dtype, device=q.device)
    lse = _empty_lse(q, signature)
    workspace = torch.empty((signature.workspace_bytes,), dtype=torch.uint8, device=q.device)
    signature.bind(q, k, v, out, lse, key_mask)
    check(library().sagejit_attention_with_workspace(*signature.args, _current_stream(q.device),
                                                     workspace.data_ptr(), signature.workspace_bytes))
    return out, lse


def _cpu_kernel(q, k, v, layout, causal, sm_scale, smooth_k, return_lse, key_mask=None):
    check_op_arguments(q, k, v, layout)
    signature = _signature(q, k, v, layout, causal, sm_scale, smooth_k, return_lse, False, key_mask)
    out = torch.empty(q.shape, dtype=q.dtype)
    lse = _empty_lse(q, signature)
    signature.bind(q, k, v, out, lse, key_mask)
    # None: the library's default target, whose kernels' numerics are emulated (sagejit.h).
    check(library().sagejit_emulate_attention(*signature.args, None))
    return out, lse


def _fake_kernel(q, k, v, layout, causal, sm_scale, smooth_k, return_lse, key_mask=None):
    check_op_arguments(q, k, v, layout)
    if key_mask is not None:
        _key_mask.key_mask_view(key_mask, q, k, layout)
    out = q.new_empty(q.shape)
    lse = q.new_empty(lse_shape(q, layout) if return_lse else (0,), dtype=torch.float32)
    return out, lse


def _setup_context(ctx, inputs, output):
    pass


def _backward(ctx, grad_out, grad_lse):
    raise RuntimeError("sagejit.sageattn has no backward: it is an inference kernel (INT8/FP8 quantized). "
                       "Run it under torch.no_grad() / torch.inference_mode(), or use torch SDPA for training.")


_library = torch.library.Library("sagejit", "DEF")
_library.define("sageattn(Tensor q, Tensor k, Tensor v, int layout, bool causal, float? sm_scale, bool smooth_k, "
                "bool return_lse, Tensor? key_mask=None) -> (Tensor, Tensor)")
_library.impl("sageattn", _gpu_kernel, "CUDA")
_library.impl("sageattn", _cpu_kernel, "CPU")
torch.library.register_fake("sagejit::sageattn", _fake_kernel, lib=_library)
torch.library.register_autograd("sagejit::sageattn", _backward, setup_context=_setup_context, lib=_library)

sageattn_op = torch.ops.sagejit.sageattn.default
