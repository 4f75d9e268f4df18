"""patch_sdpa(): route torch.nn.functional.scaled_dot_product_attention calls that sagejit supports to
sageattn, and every other call to the original SDPA, counting both.

    import sagejit
    sagejit.patch_sdpa()                 # global switch, e.g. at the top of a ComfyUI custom node
    with sagejit.patch_sdpa():           # or only for a block (restores what was there before)
        image = pipe(prompt).images[0]
    print(sagejit.sdpa_counters())       # {'routed': 960, 'fallback': 24, 'fallback_reasons': {...}}

Routed: 4-D CUDA/ROCm tensors [B, H, N, D] in bf16/fp16, no attn_mask or a key mask (the same for every
head and query, e.g. a key-padding mask [B, 1, 1, Nk], bool or additive; sagejit/_key_mask.py), dropout_p
== 0, a head dim the library accepts, equal heads (or enable_gqa=True with Hq % Hk == 0), no autograd
(sagejit has no backward), and anything else the library accepts. Everything else - other masks, dropout, fp32, a VAE's odd
head_dim, CPU tensors, training - goes to the original function unchanged. Code that imported
scaled_dot_product_attention by name before patching keeps the original.
patch_sdpa(cpu=True) also routes CPU tensors (to the library's emulator: exact and slow; for tests).

Under torch.compile the routing is decided while tracing (from shapes, dtypes and devices, which the
compiled graph is specialised on) and the routed calls are torch.ops.sagejit.sageattn in the graph; the
counters count eager calls only (a compiled graph does not run Python).
"""
import collections
import threading
import warnings

from . import _key_mask
from ._abi import Status, kernel_torch_dtypes
from ._library import SagejitError, library

_state_lock = threading.Lock()
_original = None         # what our wrapper replaced (torch's function, or a wrapper installed before ours); kept
_active = False          # routing: patch_sdpa() until unpatch_sdpa() or the exit of the outermost `with`
_route_cpu = False       # patch_sdpa(cpu=True)
_left_in_chain = False   # unpatched while another wrapper sat on ours: it still calls ours, which passes through
_counters = {"routed": 0, "fallback": 0}
_reasons = collections.Counter()
_warned = set()


def _compiling():
    import torch

    is_compiling = getattr(getattr(torch, "compiler", None), "is_compiling", None)
    return bool(is_compiling and is_compiling())


def _head_dim_supported(head_dim):
    """The library's head-dim rule (sagejit_check_head_dim), asked once per head dim outside tracing."""
    supported = _head_dims.get(head_dim)
    if supported is None:
        try:
            supported = library().sagejit_check_head_dim(int(head_dim)) == Status.success
        except SagejitError:
            supported = False
        _head_dims[head_dim] = supported
    return supported


_head_dims = {}


_kernel_dtype_tuple = None


def _kernel_dtypes(torch):
    """The torch dtypes the kernels take (_abi.kernel_torch_dtypes), built once."""
    global _kernel_dtype_tuple
    if _kernel_dtype_tuple is None:
        _kernel_dtype_tuple = kernel_torch_dtypes(torch)
    return _kernel_dtype_tuple


def _count(routed, reason=None):
    if _compiling():
        return
    with _state_lock:
        if routed:
            _counters["routed"] += 1
        else:
            _counters["fallback"] += 1
            _reasons[reason] += 1


def _fallback_reason(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa, extra):
    import torch

    if extra:
        return "unknown keyword arguments: " + ", ".join(sorted(extra))
    tensors = (query, key, value)
    if not all(isinstance(t, torch.Tensor) for t in tensors):
        return "not torch tensors"
    if dropout_p != 0.0:
        return "dropout_p"
    if any(t.dim() != 4 for t in tensors):
        return "not 4-D"
    if attn_mask is not None:
        if is_causal:  # torch SDPA refuses both at once; the original says so
            return "attn_mask with is_causal"
        reason = _key_mask.refusal(attn_mask, query, key, 0)
        if reason is not None:
            return reason
    if any(t.device.type != "cuda" and not (_route_cpu and t.device.type == "cpu") for t in tensors):
        return "not on a CUDA/ROCm device"
    if any(t.device != query.device for t in tensors):
        return "tensors on different devices"
    if query.dtype not in _kernel_dtypes(torch) or key.dtype != query.dtype or value.dtype != query.dtype:
        return "dtype"
    if key.shape[-1] != query.shape[-1] or value.shape[-1] != query.shape[-1] or \
            not _head_dim_supported(query.shape[-1]):
        return "head_dim"
    if torch.is_grad_enabled() and any(t.requires_grad for t in tensors):
        return "autograd"
    heads_q, heads_kv = query.shape[1], key.shape[1]
    if value.shape[1] != heads_kv:
        return "heads of k and v differ"
    if heads_q != heads_kv and not (enable_gqa and heads_q % heads_kv == 0):
        return "heads differ without enable_gqa"
    if scale is not None and not isinstance(scale, (int, float)):
        return "scale is not a number"
    return None


def _routed_sdpa(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False,
                 **extra):
    from .attention import sageattn

    def original():
        kwargs = dict(attn_mask=attn_mask, dropout_p=dropout_p, is_causal=is_causal, scale=scale, **extra)
        if enable_gqa:
            kwargs["enable_gqa"] = enable_gqa
        return _original(query, key, value, **kwargs)

    if not _active:  # unpatched, but still called: a stale reference, or a later wrapper that calls ours
        return original()
    reason = _fallback_reason(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa, extra)
    if reason is None:
        try:
            out = sageattn(query, key, value, tensor_layout="HND", is_causal=bool(is_causal), sm_scale=scale,
                           attn_mask=attn_mask)
            _count(True)
            return out
        except SagejitError as error:
            reason = f"sagejit: {error.code}"
            # Argument problems are expected (e.g. a stride) and only counted; anything else (no
            # kernels for this GPU, a compile error) is said once so that it is not hidden.
            if error.code not in ("invalid_argument", "unsupported") and str(error) not in _warned:
                _warned.add(str(error))
                warnings.warn(f"sagejit: falling back to torch SDPA: {error}", RuntimeWarning, stacklevel=2)
    _count(False, reason)
    return original()


def _install():
    global _original, _active, _left_in_chain
    import torch.nn.functional as F

    if F.scaled_dot_product_attention is not _routed_sdpa and not _left_in_chain:
        _original = F.scaled_dot_product_attention
        F.scaled_dot_product_attention = _routed_sdpa
    _active = True


def _uninstall():
    """Stops routing. Puts back what ours replaced only where ours is still the installed function: a wrapper
    another library installed later (on top of ours) stays, and ours passes its calls through."""
    global _active, _left_in_chain
    import torch.nn.functional as F

    if not _active:
        return
    _active = False
    if F.scaled_dot_product_attention is _routed_sdpa:
        F.scaled_dot_product_attention = _original
        _left_in_chain = False
    else:
        _left_in_chain = True


class _Patch:
    """Returned by patch_sdpa(): the patch is already active; as a context manager it restores, on exit, the
    state from before this patch_sdpa() call (routing on or off, cpu routing), so `with` blocks nest."""

    def __init__(self, was_active, route_cpu_before):
        self._was_active = was_active
        self._route_cpu_before = route_cpu_before

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        global _route_cpu
        with _state_lock:
            _route_cpu = self._route_cpu_before
            if not self._was_active:
                _uninstall()
        return False


def patch_sdpa(cpu=False):
    """Routes supported torch SDPA calls to sagejit from now on (also usable as a context manager).
    cpu=True also routes CPU tensors, to the library's emulator (slow; for tests and debugging)."""
    global _route_cpu
    with _state_lock:
        before = _Patch(_active, _route_cpu)
        _route_cpu = bool(cpu)
        _install()
    # Ask the library for every head dim up front, so that routing under torch.compile reads a dict.
    for head_dim in range(1, 513):
        _head_dim_supported(head_dim)
    return before


def unpatch_sdpa():
    """Stops routing and restores the function patch_sdpa() replaced (unless another library has since
    wrapped it: that wrapper stays, and calls through ours reach the replaced function unchanged)."""
    with _state_lock:
        _uninstall()


def is_sdpa_patched():
    return _active


def sdpa_counters():
    """{'routed': n, 'fallback': m, 'fallback_reasons': {reason: count}} since the last reset."""
    with _state_lock:
        return {**_counters, "fallback_reasons": dict(_reasons)}


def reset_sdpa_counters():
    with _state_lock:
        _counters["routed"] = 0
        _counters["fallback"] = 0
        _reasons.clear()
