"""torch.ops.sagejit.sageattn: the attention as a torch custom operator, and the eager call beside it.

    sageattn(Tensor q, Tensor k, Tensor v, int layout, bool causal, float? sm_scale, bool smooth_k,
             bool return_lse) -> (Tensor out, Tensor lse)

Registered with torch.library at import (torch >= 2.4; no compiled extension, so no torch ABI
coupling): a CUDA kernel (CUDA and ROCm devices: torch calls both "cuda"), a CPU kernel that runs the
library's emulator of the numerics contract (slow, exact), a fake kernel that gives the output shapes
so that torch.compile(fullgraph=True) traces the op without a graph break, and an autograd formula
whose backward is a clear error (sagejit is inference only). `lse` is fp32 [B, Hq, Nq] when
return_lse, else an empty tensor. Arguments are validated by sagejit.sageattn (the public entry) and,
authoritatively, by the library when the op runs.

Host cost: each thread keeps the ctypes arguments of each call signature (shapes, strides, dtypes,
device, options; the C ABI's sagejit_launch struct included), so a repeated call sets the data
pointers, the stream and the workspace, allocates once from torch's caching allocator and makes one C
call, which for a repeated signature is a lookup of its plan and kernels plus the launches (no host
allocation in the library). The op's CUDA kernel allocates the output with the workspace behind it in
one block (the LSE apart); sagejit.sageattn on plain CUDA tensors in eager mode (no torch.compile, no
torch function or dispatch mode, no gradient) skips the dispatcher and the autograd wrapper and calls
`attend_eager`, whose one block also holds the LSE. Measured on an H200 (docs/API.md, "Host cost per
call", one run): sagejit.sageattn 55 us per call at 1x2x128x128 bf16 (89 us before), of which ~20 us is
the C call and its four launches; torch SDPA 28.5 us in the same process.
"""
import ctypes
import threading

import torch

from ._library import SagejitError, Tensor, UnsupportedCall, check, error_for, last_error, library
from ._torch_tensors import INVALID_ARGUMENT, to_c_tensor

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
    # Three CUDA tensors of one index are on one device (bools and ints, cheaper than comparing devices);
    # anything else is compared device by device.
    same_cuda = q.is_cuda and k.is_cuda and v.is_cuda and q.get_device() == k.get_device() == v.get_device()
    if not same_cuda and (k.device != q.device or v.device != q.device):
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


# The workspace starts this far into a block (WorkspaceLayout::alignment, which the library checks).
_BLOCK_ALIGNMENT = 256
# The workspace rides in the output's allocation when it is at most _WORKSPACE_IN_BLOCK_BYTES or at most
# _WORKSPACE_IN_BLOCK_MAX_RATIO times the output's size (self-attention's is 1.6-2.1 times, the
# 128-token padding included): an output then keeps at most that much workspace memory alive for as
# long as it lives, while a call allocates once. A larger one (long keys for few queries) is its own
# tensor, freed when the call returns.
_WORKSPACE_IN_BLOCK_BYTES = 16 << 20
_WORKSPACE_IN_BLOCK_MAX_RATIO = 2


def _round_up(nbytes):
    return (nbytes + _BLOCK_ALIGNMENT - 1) // _BLOCK_ALIGNMENT * _BLOCK_ALIGNMENT


class _Signature:
    """The ctypes arguments of one call signature, and where its output, LSE and workspace lie in the one
    block a call allocates; only data pointers, the stream and the workspace change between calls."""

    __slots__ = ("cq", "ck", "cv", "cout", "options", "launch", "args", "workspace_bytes", "shape", "strides",
                 "dtype", "lse_shape", "lse_strides", "lse_offset", "workspace_offset", "block_elements",
                 "workspace_in_block")

    def __init__(self, q, k, v, layout, causal, sm_scale, smooth_k, return_lse, measure_workspace):
        self.cq, self.ck, self.cv = to_c_tensor(q, "q"), to_c_tensor(k, "k"), to_c_tensor(v, "v")
        # The output sageattn allocates: q's shape and dtype, dense.
        self.cout = Tensor()
        self.cout.dtype = self.cq.dtype
        self.cout.device = self.cq.device
        stride, strides = 1, [0] * 4
        for i in reversed(range(4)):
            self.cout.shape[i] = q.shape[i]
            self.cout.strides[i] = strides[i] = stride
            stride *= q.shape[i]
        self.shape, self.strides, self.dtype = tuple(q.shape), tuple(strides), q.dtype
        self.options = _options(layout, causal, sm_scale, smooth_k)
        self.launch = library().sagejit_default_launch()
        self.lse_shape = lse_shape(q, layout) if return_lse else None
        self.args = tuple(ctypes.byref(x) for x in (self.cq, self.ck, self.cv, self.cout, self.options, self.launch))
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
                check(library().sagejit_supports_target(*self.args[:5], None, ctypes.byref(supported)))
                if supported.value != 1:
                    raise UnsupportedCall(last_error())
        finally:
            self.options.lse = None
            self.cout.data = None
        self.launch.workspace_bytes = self.workspace_bytes
        # The block, in elements of q's dtype: the output, then (attend_eager) the LSE, then the workspace,
        # each at a multiple of _BLOCK_ALIGNMENT bytes.
        element = q.element_size()
        out_bytes = stride * element
        lse_elements = self.lse_shape[0] * self.lse_shape[1] * self.lse_shape[2] if return_lse else 0
        self.lse_strides = (self.lse_shape[1] * self.lse_shape[2], self.lse_shape[2], 1) if return_lse else None
        self.lse_offset = _round_up(out_bytes) // 4  # in fp32 elements
        self.workspace_in_block = (self.workspace_bytes <= _WORKSPACE_IN_BLOCK_BYTES
                                   or self.workspace_bytes <= _WORKSPACE_IN_BLOCK_MAX_RATIO * out_bytes)
        self.workspace_offset = _round_up(self.lse_offset * 4 + lse_elements * 4)  # in bytes
        block_bytes = self.workspace_offset + (self.workspace_bytes if self.workspace_in_block else 0)
        self.block_elements = _round_up(block_bytes) // element

    def bind(self, q, k, v, out, lse, workspace, stream):
        self.cq.data, self.ck.data, self.cv.data, self.cout.data = (
            q.data_ptr(), k.data_ptr(), v.data_ptr(), out.data_ptr())
        self.options.lse = lse.data_ptr() if self.lse_shape is not None else None
        self.launch.stream = stream
        self.launch.workspace = workspace


_signatures = threading.local()  # per thread: the ctypes structs are mutated by each call


def _signature(q, k, v, layout, causal, sm_scale, smooth_k, return_lse, gpu):
    cache = getattr(_signatures, "by_key", None)
    if cache is None:
        cache = _signatures.by_key = {}
    # q, k and v are on one device (check_op_arguments), so q's stands for all three.
    key = (q.shape, q.stride(), k.shape, k.stride(), v.shape, v.stride(), q.dtype, k.dtype, v.dtype, q.device,
           layout, causal, sm_scale, smooth_k, return_lse)
    signature = cache.get(key)
    if signature is None:
        if len(cache) > 256:  # a bound on what a process of changing shapes keeps
            cache.clear()
        signature = cache[key] = _Signature(q, k, v, layout, causal, sm_scale, smooth_k, return_lse, gpu)
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


_c_attention_launch = None


def _attention_launch(args):
    """sagejit_attention_launch(*args), the function looked up once (library() takes a lock)."""
    global _c_attention_launch
    if _c_attention_launch is None:
        _c_attention_launch = library().sagejit_attention_launch
    status = _c_attention_launch(*args)
    if status != 0:
        raise error_for(status, last_error())


def _launch(q, k, v, signature, lse_in_block):
    """Allocates the call's block (and what does not ride in it) and launches; returns (out, lse or None)."""
    device = q.device
    block = torch.empty((signature.block_elements,), dtype=signature.dtype, device=device)
    out = block.as_strided(signature.shape, signature.strides)
    lse = None
    if signature.lse_shape is not None:
        lse = (block.view(torch.float32).as_strided(signature.lse_shape, signature.lse_strides, signature.lse_offset)
               if lse_in_block else torch.empty(signature.lse_shape, dtype=torch.float32, device=device))
    if signature.workspace_in_block:
        workspace = block.data_ptr() + signature.workspace_offset
    else:
        separate = torch.empty((signature.workspace_bytes,), dtype=torch.uint8, device=device)
        workspace = separate.data_ptr()  # freed on return: torch's allocator orders its reuse on this stream
    signature.bind(q, k, v, out, lse, workspace, _current_stream(device))
    _attention_launch(signature.args)
    return out, lse


def _gpu_kernel(q, k, v, layout, causal, sm_scale, smooth_k, return_lse):
    check_op_arguments(q, k, v, layout)
    signature = _signature(q, k, v, layout, causal, sm_scale, smooth_k, return_lse, gpu=True)
    # What torch.compile and graph capture see: the output (with the workspace behind it) and a tensor
    # of its own for the LSE, always present.
    out, lse = _launch(q, k, v, signature, lse_in_block=False)
    return out, lse if lse is not None else torch.empty((0,), dtype=torch.float32, device=q.device)


def attend_eager(q, k, v, layout, causal, sm_scale, smooth_k, return_lse):
    """The op's CUDA kernel without the dispatcher or autograd, for sagejit.sageattn in eager mode on plain
    CUDA tensors that need no gradient (can_attend_eagerly): one allocation holds the output, the LSE when
    asked and the workspace. Returns (out, lse or None)."""
    check_op_arguments(q, k, v, layout)
    return _launch(q, k, v, _signature(q, k, v, layout, causal, sm_scale, smooth_k, return_lse, gpu=True),
                   lse_in_block=True)


_is_compiling = getattr(getattr(torch, "compiler", None), "is_compiling", None)
_dispatch_modes = getattr(torch._C, "_len_torch_dispatch_stack", None)
_function_mode_enabled = getattr(torch._C, "_is_torch_function_mode_enabled", None)
_plain_tensor = torch.Tensor


def can_attend_eagerly(q, k, v):
    """Whether sageattn may call attend_eager instead of the op: outside torch.compile (which must see the
    op), on plain (not subclassed: fake, functional, distributed) CUDA tensors, with no torch function or
    dispatch mode active (a mode, e.g. a FLOP counter, must see the op). The caller has refused inputs that
    need a gradient. Where this torch cannot tell, the op is called."""
    if _is_compiling is None or _dispatch_modes is None or _function_mode_enabled is None or _is_compiling():
        return False
    return (type(q) is _plain_tensor and type(k) is _plain_tensor and type(v) is _plain_tensor and q.is_cuda
            and _dispatch_modes() == 0 and not _function_mode_enabled())


def _cpu_kernel(q, k, v, layout, causal, sm_scale, smooth_k, return_lse):
    check_op_arguments(q, k, v, layout)
    signature = _signature(q, k, v, layout, causal, sm_scale, smooth_k, return_lse, gpu=False)
    out = torch.empty(q.shape, dtype=q.dtype)
    lse = _empty_lse(q, signature)
    signature.bind(q, k, v, out, lse, None, None)
    # None: the library's default target, whose kernels' numerics are emulated (sagejit.h).
    check(library().sagejit_emulate_attention(*signature.args[:5], None))
    return out, lse


def _fake_kernel(q, k, v, layout, causal, sm_scale, smooth_k, return_lse):
    check_op_arguments(q, k, v, layout)
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
                "bool return_lse) -> (Tensor, Tensor)")
_library.impl("sageattn", _gpu_kernel, "CUDA")
_library.impl("sageattn", _cpu_kernel, "CPU")
torch.library.register_fake("sagejit::sageattn", _fake_kernel, lib=_library)
torch.library.register_autograd("sagejit::sageattn", _backward, setup_context=_setup_context, lib=_library)

sageattn_op = torch.ops.sagejit.sageattn.default
