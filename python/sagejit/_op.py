"""torch.ops.sagejit.sageattn: the attention as a torch custom operator, and the eager call beside it.

    sageattn(Tensor q, Tensor k, Tensor v, int layout, bool causal, float? sm_scale, bool smooth_k,
             bool return_lse, Tensor? key_mask=None) -> (Tensor out, Tensor lse)

`key_mask` is torch SDPA's attn_mask when it is a key mask (sagejit/_key_mask.py: the same for every
query, and for every head or one per head); the kernels read it where it is.

Registered with torch.library at import (torch >= 2.4; no compiled extension, so no torch ABI
coupling): a CUDA kernel (CUDA and ROCm devices: torch calls both "cuda"), a CPU kernel that runs the
library's emulator of the numerics contract (slow, exact), a fake kernel that gives the output shapes
so that torch.compile(fullgraph=True) traces the op without a graph break, and an autograd formula
whose backward is a clear error (sagejit is inference only). `lse` is fp32 [B, Hq, Nq] when
return_lse, else an empty tensor. Arguments are validated by sagejit.sageattn (the public entry) and,
authoritatively, by the library when the op runs.

Host cost: each thread keeps the ctypes arguments of each call signature (shapes, strides, dtypes,
devices, options; the C ABI's sagejit_launch struct included), so a repeated call sets the data
pointers, the stream and the workspace, allocates once from torch's caching allocator and makes one C
call, which for a repeated signature is a lookup of its plan and kernels plus the launches (no host
allocation in the library). The op's CUDA kernel allocates the output with the workspace behind it in
one block (the LSE apart; workspace_rides_in_block says when the workspace rides along);
sagejit.sageattn on plain CUDA tensors in eager mode (no torch.compile, no torch function or dispatch
mode, no gradient) skips the dispatcher and the autograd wrapper (`attend_eager`, whose block also holds
the LSE), and for a signature this thread has already run also its Python checks (`attend_repeated`).
Measured on an H200 (docs/API.md, "Host cost per call", one run, 2026-12-02): a repeated sagejit.sageattn
34.5 us per call at 1x2x128x128 bf16, of which ~16.3 us is the C call and its three launches; torch SDPA
27.6 us in the same process.
"""
import ctypes
import threading

import torch

from . import _key_mask
from ._library import SagejitError, Tensor, UnsupportedCall, check, error_for, last_error, library
from ._op_registration import register_inference_op
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
# The workspace rides in the output's allocation (one allocation a call) only when it is at most
# _WORKSPACE_IN_BLOCK_MAX_RATIO times the output's size AND at most _WORKSPACE_IN_BLOCK_MAX_BYTES, because
# it then stays allocated for as long as the output lives: a caller that keeps many outputs (a cache of
# attention outputs, ring attention's partial outputs) keeps their workspaces too. Both bounds hold it
# down: at most twice an output's own size (self-attention's workspace is 1.5-2.1 times its output; short,
# padded sequences and long keys are more) and at most 4 MiB whatever the output's size (a call with a
# larger workspace runs long enough on the GPU to hide the second allocation; its workspace is its own
# tensor, freed when the call returns and reused by torch's allocator in stream order).
_WORKSPACE_IN_BLOCK_MAX_RATIO = 2
_WORKSPACE_IN_BLOCK_MAX_BYTES = 4 << 20


def workspace_rides_in_block(workspace_bytes, out_bytes):
    """The rule above: whether a workspace of `workspace_bytes` shares the allocation of an output of `out_bytes`."""
    return workspace_bytes <= min(_WORKSPACE_IN_BLOCK_MAX_RATIO * out_bytes, _WORKSPACE_IN_BLOCK_MAX_BYTES)


def _round_up(nbytes):
    return (nbytes + _BLOCK_ALIGNMENT - 1) // _BLOCK_ALIGNMENT * _BLOCK_ALIGNMENT


class _Signature:
    """The ctypes arguments of one call signature, and where its output, LSE and workspace lie in the one
    block a call allocates; only data pointers, the stream and the workspace change between calls."""

    __slots__ = ("cq", "ck", "cv", "cout", "options", "launch", "args", "launch_args", "workspace_bytes", "shape",
                 "strides", "dtype", "lse_shape", "lse_strides", "lse_offset", "workspace_offset", "block_elements",
                 "workspace_in_block", "workspace_elements", "gpu", "device_index")

    def __init__(self, q, k, v, layout, causal, sm_scale, smooth_k, return_lse, measure_workspace, key_mask=None):
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
        self.gpu, self.device_index = measure_workspace, q.get_device()
        self.options = _options(layout, causal, sm_scale, smooth_k)
        _key_mask.set_key_mask(self.options, key_mask, q, k, layout)
        self.launch = library().sagejit_default_launch()
        self.lse_shape = lse_shape(q, layout) if return_lse else None
        structs = (self.cq, self.ck, self.cv, self.cout, self.options, self.launch)
        self.args = tuple(ctypes.byref(x) for x in structs)
        # The same six addresses as plain pointers for _launch's untyped call (the structs live as long as self).
        self.launch_args = tuple(ctypes.c_void_p(ctypes.addressof(x)) for x in structs)
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
                _attention_launch_function()  # looked up now, not in a call's hot path
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
        self.workspace_in_block = workspace_rides_in_block(self.workspace_bytes, out_bytes)
        self.workspace_offset = _round_up(self.lse_offset * 4 + lse_elements * 4)  # in bytes
        block_bytes = self.workspace_offset + (self.workspace_bytes if self.workspace_in_block else 0)
        self.block_elements = _round_up(block_bytes) // element
        # A workspace apart, in elements of q's dtype (torch's allocator aligns every block to 512 bytes).
        self.workspace_elements = -(-self.workspace_bytes // element)

    def bind(self, q, k, v, out, lse, workspace, stream, key_mask=None):
        self.cq.data, self.ck.data, self.cv.data, self.cout.data = (
            q.data_ptr(), k.data_ptr(), v.data_ptr(), out.data_ptr())
        self.options.lse = lse.data_ptr() if self.lse_shape is not None else None
        self.options.key_mask.data = key_mask.data_ptr() if key_mask is not None else None
        self.launch.stream = stream
        self.launch.workspace = workspace


_signatures = threading.local()  # per thread: the ctypes structs are mutated by each call


def _key(q, k, v, layout, causal, sm_scale, smooth_k, return_lse, key_mask=None):
    """What a signature is cached by: everything its ctypes arguments, the library's validation of the call
    and the Python checks of sagejit.sageattn and the op read (shapes, strides, dtypes, each tensor's device,
    the options, the key mask's dtype, shape, strides and device), so that a call with an equal key passes or
    fails them as the signature's first call did (attend_repeated relies on it; the data pointers, which are
    not in it, are checked by every C call). An unmasked call's key ends in None, so it never finds a masked
    signature."""
    return (q.shape, q.stride(), k.shape, k.stride(), v.shape, v.stride(), q.dtype, k.dtype, v.dtype, q.device,
            k.device, v.device, layout, causal, sm_scale, smooth_k, return_lse, _key_mask.signature(key_mask))


def _signature(q, k, v, layout, causal, sm_scale, smooth_k, return_lse, gpu, key_mask=None):
    """The cached _Signature, made (and validated: to_c_tensor's checks, the library's) on first use. Callers
    have run check_op_arguments, so a cached signature also passed that."""
    cache = getattr(_signatures, "by_key", None)
    if cache is None:
        cache = _signatures.by_key = {}
    key = _key(q, k, v, layout, causal, sm_scale, smooth_k, return_lse, key_mask)
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


def _current_stream(index):
    """The current stream of CUDA device `index` as an address: torch's raw form (one C call, no Stream object)."""
    if _raw_stream is not None:
        return _raw_stream(index)
    return torch.cuda.current_stream(index).cuda_stream


# sagejit_attention_launch as a function of six untyped pointers: the library's declaration
# (_library._declare) has ctypes check each POINTER argument's type on every call, about 1 us of the six;
# _Signature.launch_args are pointers to the right structs by construction.
_LAUNCH_PROTOTYPE = ctypes.CFUNCTYPE(ctypes.c_int, *([ctypes.c_void_p] * 6))
_c_attention_launch = None


def _attention_launch_function():
    """Looks the function up once (library() takes a lock); the library stays loaded for the process."""
    global _c_attention_launch
    if _c_attention_launch is None:
        _c_attention_launch = _LAUNCH_PROTOTYPE(ctypes.cast(library().sagejit_attention_launch, ctypes.c_void_p).value)
    return _c_attention_launch


def _launch(q, k, v, signature, lse_in_block, key_mask=None):
    """Allocates the call's block (and what does not ride in it) and launches; returns (out, lse or None).
    q.new_empty(n) allocates in q's dtype on q's device: no keyword parsing, and an int size parses faster
    than a tuple (each of these is a per-call cost of the host-bound small calls). key_mask is the tensor
    of a masked signature (its data pointer is bound per call), None for an unmasked one."""
    lse = None
    if signature.workspace_in_block or (lse_in_block and signature.lse_shape is not None):
        block = q.new_empty(signature.block_elements)
        out = block.as_strided(signature.shape, signature.strides)
        if signature.lse_shape is not None:
            lse = (block.view(torch.float32).as_strided(signature.lse_shape, signature.lse_strides,
                                                        signature.lse_offset)
                   if lse_in_block else torch.empty(signature.lse_shape, dtype=torch.float32, device=q.device))
    else:  # nothing rides with the output: it is the block, no view needed
        block = out = q.new_empty(signature.shape)
        if signature.lse_shape is not None:
            lse = torch.empty(signature.lse_shape, dtype=torch.float32, device=q.device)
    if signature.workspace_in_block:
        workspace = block.data_ptr() + signature.workspace_offset
    else:
        separate = q.new_empty(signature.workspace_elements)
        workspace = separate.data_ptr()  # freed on return: torch's allocator orders its reuse on this stream
    signature.bind(q, k, v, out, lse, workspace, _current_stream(signature.device_index), key_mask)
    status = _c_attention_launch(*signature.launch_args)
    if status != 0:
        raise error_for(status, last_error())
    return out, lse


def _gpu_kernel(q, k, v, layout, causal, sm_scale, smooth_k, return_lse, key_mask=None):
    check_op_arguments(q, k, v, layout)
    signature = _signature(q, k, v, layout, causal, sm_scale, smooth_k, return_lse, True, key_mask)
    # What torch.compile and graph capture see: the output (with the workspace behind it) and a tensor
    # of its own for the LSE, always present.
    out, lse = _launch(q, k, v, signature, False, key_mask)
    return out, lse if lse is not None else torch.empty((0,), dtype=torch.float32, device=q.device)


def attend_eager(q, k, v, layout, causal, sm_scale, smooth_k, return_lse, key_mask=None):
    """The op's CUDA kernel without the dispatcher or autograd, for sagejit.sageattn in eager mode on plain
    CUDA tensors that need no gradient (can_attend_eagerly): one allocation holds the output, the LSE when
    asked and the workspace (where workspace_rides_in_block). Returns (out, lse or None)."""
    check_op_arguments(q, k, v, layout)
    return _launch(q, k, v, _signature(q, k, v, layout, causal, sm_scale, smooth_k, return_lse, True, key_mask),
                   True, key_mask)


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


_grad_enabled = torch.is_grad_enabled


def attend_repeated(q, k, v, layout, causal, sm_scale, smooth_k, return_lse):
    """sagejit.sageattn's call of a signature this thread has already run: (out, lse or None), or None where
    sageattn's full path must decide (the first call of a signature, torch.compile, a subclass, a torch
    function or dispatch mode, a gradient). The caller passes only what its checks left unchanged (layout
    0 or 1 from a valid tensor_layout, real bools, a validated sm_scale) and has refused a mask or dropout.
    Skipping sageattn's tensor checks and check_op_arguments here is exact: a signature is cached only after
    they passed, and they read nothing that _key does not hold (the type of each tensor is checked here, the
    gradient per call); the library validates every C call again."""
    if (_is_compiling is None or _dispatch_modes is None or _function_mode_enabled is None or _is_compiling()
            or type(q) is not _plain_tensor or type(k) is not _plain_tensor or type(v) is not _plain_tensor
            or _dispatch_modes() != 0 or _function_mode_enabled()):
        return None
    if _grad_enabled() and (q.requires_grad or k.requires_grad or v.requires_grad):
        return None  # sageattn's UnsupportedCall
    cache = getattr(_signatures, "by_key", None)
    signature = None if cache is None else cache.get(_key(q, k, v, layout, causal, sm_scale, smooth_k, return_lse))
    if signature is None:
        return None
    if signature.gpu:  # a CUDA signature: what attend_eager does, its checks passed
        return _launch(q, k, v, signature, lse_in_block=True)
    return sageattn_op(q, k, v, layout, causal, sm_scale, smooth_k, return_lse)  # the emulator's op (CPU)


def _cpu_kernel(q, k, v, layout, causal, sm_scale, smooth_k, return_lse, key_mask=None):
    check_op_arguments(q, k, v, layout)
    signature = _signature(q, k, v, layout, causal, sm_scale, smooth_k, return_lse, False, key_mask)
    out = torch.empty(q.shape, dtype=q.dtype)
    lse = _empty_lse(q, signature)
    signature.bind(q, k, v, out, lse, None, None, key_mask)
    # None: the library's default target, whose kernels' numerics are emulated (sagejit.h).
    check(library().sagejit_emulate_attention(*signature.args[:5], None))
    return out, lse


def _fake_kernel(q, k, v, layout, causal, sm_scale, smooth_k, return_lse, key_mask=None):
    check_op_arguments(q, k, v, layout)
    if key_mask is not None:
        _key_mask.key_mask_view(key_mask, q, k, layout)
    out = q.new_empty(q.shape)
    lse = q.new_empty(lse_shape(q, layout) if return_lse else (0,), dtype=torch.float32)
    return out, lse


_library = torch.library.Library("sagejit", "DEF")
sageattn_op = register_inference_op(
    _library, "sageattn", "(Tensor q, Tensor k, Tensor v, int layout, bool causal, float? sm_scale, bool smooth_k, "
    "bool return_lse, Tensor? key_mask=None) -> (Tensor, Tensor)", _gpu_kernel, _cpu_kernel, _fake_kernel, "torch SDPA")

from ._varlen_op import sageattn_varlen_op  # noqa: E402,F401  sagejit::sageattn_varlen beside sagejit::sageattn
