"""sageattn() with SageAttention's signature and keywords, and supports(), over the torch op and the C ABI."""
import ctypes
import math
import numbers
from collections import namedtuple

from . import _key_mask
from ._library import SagejitError, Tensor, UnsupportedCall, check, last_error, library
from ._torch_op import eager_attention, repeated_attention, torch_op
from ._torch_tensors import INVALID_ARGUMENT, check_tensor, dtype_code, to_c_tensor

_LAYOUTS = {"HND": 0, "NHD": 1}

# SageAttention's kernel-selection keywords and the values its kernels accept. sagejit picks its
# kernels from its tuning tables, so these are validated and then do not change the computation
# (every choice computes the same attention within the numerics contract).
SELECTION_KEYWORDS = {
    "qk_quant_gran": ("per_warp", "per_thread", "per_block"),
    "qk_quant_dtype": ("int8",),
    "pv_accum_dtype": ("fp32", "fp32+fp32", "fp16", "fp32+fp16"),
    "smooth_v": (False, True),
}

Support = namedtuple("Support", ["ok", "reason"])
Support.__bool__ = lambda self: bool(self.ok)
Support.__doc__ = "Whether a call is supported (ok) and, if not, why (reason)."


def _check_keywords(kwargs):
    unknown = sorted(set(kwargs) - set(SELECTION_KEYWORDS))
    if unknown:
        raise TypeError(f"sageattn() got unexpected keyword arguments: {', '.join(unknown)}; it accepts "
                        "attn_mask, dropout_p, scale, smooth_k and SageAttention's "
                        + ", ".join(sorted(SELECTION_KEYWORDS)))
    for name, value in kwargs.items():
        if value not in SELECTION_KEYWORDS[name]:
            raise ValueError(f"sageattn(): {name}={value!r} is not one of {list(SELECTION_KEYWORDS[name])}")


_FLOAT32_MAX = 3.4028234663852886e38  # sm_scale reaches the kernels as a float32


def scale_value(value, name="sm_scale"):
    """None, or `value` as a float: a Python or NumPy number or a 0-d tensor/array, finite, > 0 and within
    float32; anything else is SagejitError(invalid_argument) naming the argument."""
    if value is None:
        return None
    if isinstance(value, bool) or not (isinstance(value, numbers.Real) or getattr(value, "ndim", None) == 0):
        raise SagejitError(INVALID_ARGUMENT, f"{name} {value!r} is not a number (a float, an int, a NumPy scalar or "
                           "a 0-d tensor)")
    try:
        result = float(value)
    except OverflowError:  # an int past every float
        result = math.inf
    except (TypeError, ValueError) as error:
        raise SagejitError(INVALID_ARGUMENT, f"{name} {value!r} is not a number: {error}") from None
    if not (math.isfinite(result) and 0.0 < result <= _FLOAT32_MAX):
        shown = repr(value) if len(repr(value)) <= 40 else f"{result:g}"
        raise SagejitError(INVALID_ARGUMENT, f"{name} {shown} is not a finite number > 0 within float32 "
                           f"(at most {_FLOAT32_MAX:.7g})")
    return result


def _resolve_scale(sm_scale, scale):
    """sm_scale or its SDPA name `scale` (one of them, or both equal), as a float or None."""
    sm_scale, scale = scale_value(sm_scale, "sm_scale"), scale_value(scale, "scale")
    if scale is None:
        return sm_scale
    if sm_scale is not None and sm_scale != scale:
        raise ValueError(f"sageattn(): sm_scale={sm_scale} and scale={scale} disagree; pass one of them")
    return scale


def layout_code(tensor_layout):
    """0 for 'HND', 1 for 'NHD'; anything else (a lower-case name, a list) is SagejitError(invalid_argument)."""
    if not isinstance(tensor_layout, str) or tensor_layout not in _LAYOUTS:
        raise SagejitError(INVALID_ARGUMENT, f"tensor_layout {tensor_layout!r} is not one of ['HND', 'NHD']")
    return _LAYOUTS[tensor_layout]


def _check_call(q, k, v, tensor_layout, attn_mask, dropout_p):
    """The checks Python makes before the op (traceable by torch.compile: no C calls here); the layout code and
    the device are then checked by the op's kernels (_op.check_op_arguments)."""
    import torch

    layout_code(tensor_layout)
    if dropout_p != 0.0:
        raise UnsupportedCall(f"dropout_p={dropout_p}: sagejit is inference attention without dropout; pass "
                              "dropout_p=0.0 or use torch SDPA")
    for tensor, name in ((q, "q"), (k, "k"), (v, "v")):
        check_tensor(tensor, name)
        dtype_code(tensor.dtype, name)
    # One device for q, k and v: the op's own check (_op.check_op_arguments), which every path runs.
    if torch.is_grad_enabled() and (q.requires_grad or k.requires_grad or v.requires_grad):
        raise UnsupportedCall("a gradient: q, k or v requires grad, and sagejit has no backward (inference only); "
                              "call it under torch.no_grad() / torch.inference_mode(), or use torch SDPA to train")
    if attn_mask is not None:  # after q, k: the mask broadcasts against their scores
        _key_mask.key_mask_view(attn_mask, q, k, _LAYOUTS[tensor_layout])


def sageattn(q, k, v, tensor_layout="HND", is_causal=False, sm_scale=None, return_lse=False, smooth_k=True, *,
             attn_mask=None, dropout_p=0.0, scale=None, **kwargs):
    """SageAttention forward: softmax(q k^T * sm_scale) v with INT8 QK^T and FP8/FP16 PV.

    q: [B, Hq, Nq, D] (HND) or [B, Nq, Hq, D] (NHD); k, v: [B, Hk, Nk, D] / [B, Nk, Hk, D] with
    Hq % Hk == 0; bf16 or fp16, D a multiple of 8 up to 256 (64, 128 and 256 natively, others
    zero-padded to the next of them), last dimension contiguous, any other strides; on a CUDA/ROCm device
    (CPU tensors run the library's emulator: exact to the numerics contract, slow).
    sm_scale (or its SDPA name `scale`) defaults to 1/sqrt(D); is_causal follows torch SDPA (query i
    sees keys 0..i). Returns the output (q's shape and dtype, contiguous) and, with return_lse, also
    the natural log-sum-exp of the scaled scores, fp32 [B, Hq, Nq] (what torch.logsumexp gives).

    Runs torch.ops.sagejit.sageattn on the current stream with torch's caching allocator: it traces
    under torch.compile(fullgraph=True) and records into CUDA/HIP graphs. In eager mode on plain CUDA
    tensors (no torch function or dispatch mode active) it calls the op's kernel without the dispatcher
    and the autograd wrapper, allocating the output, the LSE and the workspace as one block.
    attn_mask: torch SDPA's, when it is a key mask, the same for every query and for every head (or, where
    q and k have the same heads, one per head): bool (True = attend) or an additive float32/bfloat16/float16
    bias, e.g. [B, 1, 1, Nk], [B, H, 1, Nk] or one expanded to [B, H, Nq, Nk] with stride 0 along Nq
    (docs/NUMERICS.md "Key masks"; a row whose keys are all
    masked gives 0, as torch's SDPA). Other masks, dropout, or inputs that need a gradient raise
    sagejit.UnsupportedCall (catch it to fall back); dropout_p=0.0 is accepted. SageAttention's
    kernel-selection keywords (qk_quant_gran, qk_quant_dtype, pv_accum_dtype, smooth_v) are checked
    against SageAttention's values and otherwise do not change the computation.
    """
    sageattn_op = torch_op()
    if kwargs:
        _check_keywords(kwargs)
    sm_scale = _resolve_scale(sm_scale, scale)
    # A repeated call: a signature this thread has run (and checked) before, with none of the checks
    # below able to fail (no mask or dropout; a valid layout name and real bools, as the signature was
    # keyed by); _op.attend_repeated says why its key makes skipping them exact, and declines (None)
    # where the full path must run. The host cost of small, host-bound calls is mostly this path's.
    if (attn_mask is None and dropout_p == 0.0 and type(tensor_layout) is str and type(is_causal) is bool
            and type(smooth_k) is bool and type(return_lse) is bool):
        layout = _LAYOUTS.get(tensor_layout)
        if layout is not None:
            result = repeated_attention()(q, k, v, layout, is_causal, sm_scale, smooth_k, return_lse)
            if result is not None:
                return result if return_lse else result[0]
    _check_call(q, k, v, tensor_layout, attn_mask, dropout_p)
    can_attend_eagerly, attend_eager = eager_attention()
    if can_attend_eagerly(q, k, v):  # (inputs that need a gradient were refused above)
        out, lse = attend_eager(q, k, v, _LAYOUTS[tensor_layout], bool(is_causal), sm_scale, bool(smooth_k),
                                bool(return_lse), attn_mask)
    else:
        out, lse = sageattn_op(q, k, v, _LAYOUTS[tensor_layout], bool(is_causal), sm_scale, bool(smooth_k),
                               bool(return_lse), attn_mask)
    return (out, lse) if return_lse else out


def supports(q, k, v, tensor_layout="HND", is_causal=False, sm_scale=None, return_lse=False, smooth_k=True, *,
             attn_mask=None, dropout_p=0.0, scale=None, **kwargs):
    """Support(ok, reason): whether sageattn() accepts this call, checked without launching anything.
    CPU tensors are checked against the kernels of the emulated GPU (the library's default target)."""
    try:
        torch_op()
        _check_keywords(kwargs)
        sm_scale = _resolve_scale(sm_scale, scale)
        _check_call(q, k, v, tensor_layout, attn_mask, dropout_p)
        from ._op import _options, check_op_arguments

        check_op_arguments(q, k, v, _LAYOUTS[tensor_layout])
        options = _options(_LAYOUTS[tensor_layout], is_causal, sm_scale, smooth_k)
        options.lse = q.data_ptr() if return_lse else None
        _key_mask.set_key_mask(options, attn_mask, q, k, _LAYOUTS[tensor_layout])
        cq, ck, cv = (to_c_tensor(t, n) for t, n in ((q, "q"), (k, "k"), (v, "v")))
    except (SagejitError, TypeError, ValueError) as error:
        return Support(False, str(error))
    # The output sageattn() would allocate: q's shape, dense. Its address is never used here.
    out = Tensor()
    out.data = q.data_ptr()
    out.dtype = cq.dtype
    out.device = cq.device
    stride = 1
    for i in reversed(range(4)):
        out.shape[i] = q.shape[i]
        out.strides[i] = stride
        stride *= q.shape[i]
    supported = ctypes.c_int(0)
    args = (ctypes.byref(cq), ctypes.byref(ck), ctypes.byref(cv), ctypes.byref(out), ctypes.byref(options))
    if q.device.type == "cpu":  # the emulated GPU's kernels (NULL: the library's default target)
        check(library().sagejit_supports_target(*args, None, ctypes.byref(supported)))
    else:
        check(library().sagejit_supports(*args, ctypes.byref(supported)))
    return Support(True, "") if supported.value == 1 else Support(False, last_error())


def release_workspaces():
    """Frees the library's own workspaces (sageattn uses torch's allocator instead; C++ callers use these)."""
    check(library().sagejit_release_workspaces())


def version():
    return library().sagejit_version().decode()


__all__ = ["SELECTION_KEYWORDS", "Support", "release_workspaces", "sageattn", "supports", "version"]
