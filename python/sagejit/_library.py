"""Loads libsagejit and declares the C ABI (sagejit/sagejit.h) for ctypes.

The library is searched, in order: $SAGEJIT_LIBRARY (a file), next to this package, the install tree
(cmake --install puts this package in <prefix>/share/sagejit/python and writes _install_location.py),
the build trees of a source checkout (<repo>/build*/runtime), then the dynamic linker's path.
"""
import ctypes
import glob
import os
import threading

from . import _runtime_dirs
from ._abi import Status

_HERE = os.path.dirname(os.path.abspath(__file__))

SUCCESS = Status.success
STATUS_NAMES = {status.value: status.name for status in Status}


class SagejitError(RuntimeError):
    """A sagejit call failed; `status` is the C ABI status, `code` its name ("unsupported", ...)."""

    def __init__(self, status, message):
        super().__init__(message)
        self.status = status
        self.code = STATUS_NAMES.get(status, "unknown")


class UnsupportedCall(SagejitError):
    """sagejit cannot take this attention call, which is otherwise a valid one: a real attn_mask, dropout,
    a gradient, a dtype, head dim or device it has no kernel for. The one type to catch to fall back to
    another attention (torch SDPA, ...); the message names what was refused and what is accepted."""

    def __init__(self, message, status=Status.unsupported):
        super().__init__(status, message)


def error_for(status, message):
    """The exception for a failed C ABI status: UnsupportedCall for `unsupported`, else SagejitError."""
    return UnsupportedCall(message) if status == Status.unsupported else SagejitError(status, message)


class Tensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("dtype", ctypes.c_int32),
        ("device", ctypes.c_int32),
        ("shape", ctypes.c_int64 * 4),
        ("strides", ctypes.c_int64 * 4),
    ]


class KeyMask(ctypes.Structure):
    """sagejit_key_mask: a mask per (batch item, key), [B or 1, Nk] with element strides."""
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("type", ctypes.c_int32),
        ("device", ctypes.c_int32),
        ("shape", ctypes.c_int64 * 2),
        ("strides", ctypes.c_int64 * 2),
    ]


class KeyMaskHeads(ctypes.Structure):
    """sagejit_key_mask_heads: count 1 (one mask for every head) or Hq (a mask per head), element stride."""
    _fields_ = [
        ("count", ctypes.c_int64),
        ("stride", ctypes.c_int64),
    ]


class Varlen(ctypes.Structure):
    """sagejit_varlen: a packed varlen call's cu_seqlens (int32 device arrays of batch + 1 values)."""
    _fields_ = [
        ("cu_seqlens_q", ctypes.c_void_p),
        ("cu_seqlens_k", ctypes.c_void_p),
        ("batch", ctypes.c_int64),
        ("max_seqlen_q", ctypes.c_int64),
        ("max_seqlen_k", ctypes.c_int64),
    ]


class Options(ctypes.Structure):
    # struct_size first (C ABI 1); start from library().sagejit_default_options(), which sets it.
    _fields_ = [
        ("struct_size", ctypes.c_uint32),
        ("layout", ctypes.c_int32),
        ("causal", ctypes.c_int32),
        ("has_sm_scale", ctypes.c_int32),
        ("sm_scale", ctypes.c_float),
        ("smooth_k", ctypes.c_int32),
        ("device", ctypes.c_int32),
        ("lse", ctypes.c_void_p),
        ("key_mask", KeyMask),  # SAGEJIT_OPTIONS_V2_SIZE
        ("varlen", Varlen),  # SAGEJIT_OPTIONS_V3_SIZE
        ("key_mask_heads", KeyMaskHeads),  # SAGEJIT_OPTIONS_V4_SIZE
    ]


class Launch(ctypes.Structure):
    # struct_size first (C ABI 1); start from library().sagejit_default_launch(), which sets it.
    _fields_ = [
        ("struct_size", ctypes.c_uint32),
        ("stream", ctypes.c_void_p),
        ("workspace", ctypes.c_void_p),
        ("workspace_bytes", ctypes.c_size_t),
    ]


def _candidates():
    explicit = os.environ.get("SAGEJIT_LIBRARY")
    if explicit:
        yield explicit
        return
    yield from sorted(glob.glob(os.path.join(_HERE, "libsagejit.so*")))
    try:
        from . import _install_location

        libdir = os.path.normpath(os.path.join(_HERE, _install_location.LIBDIR_FROM_PACKAGE))
        yield from sorted(glob.glob(os.path.join(libdir, "libsagejit.so*")))
    except ImportError:
        pass
    repo = os.path.dirname(os.path.dirname(_HERE))
    builds = glob.glob(os.path.join(repo, "build*", "runtime", "libsagejit.so"))
    # The most recently built tree first.
    yield from sorted(builds, key=os.path.getmtime, reverse=True)
    yield "libsagejit.so.1"
    yield "libsagejit.so"


_lock = threading.Lock()
_lib = None


def _declare(lib):
    tensor_p = ctypes.POINTER(Tensor)
    options_p = ctypes.POINTER(Options)
    lib.sagejit_attention.argtypes = [tensor_p, tensor_p, tensor_p, tensor_p, options_p, ctypes.c_void_p]
    lib.sagejit_attention_with_workspace.argtypes = [tensor_p, tensor_p, tensor_p, tensor_p, options_p,
                                                     ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t]
    lib.sagejit_attention_launch.argtypes = [tensor_p, tensor_p, tensor_p, tensor_p, options_p, ctypes.POINTER(Launch)]
    lib.sagejit_supports.argtypes = [tensor_p, tensor_p, tensor_p, tensor_p, options_p,
                                     ctypes.POINTER(ctypes.c_int)]
    lib.sagejit_workspace_size.argtypes = [tensor_p, tensor_p, tensor_p, options_p, ctypes.POINTER(ctypes.c_size_t)]
    lib.sagejit_emulate_attention.argtypes = [tensor_p, tensor_p, tensor_p, tensor_p, options_p, ctypes.c_char_p]
    lib.sagejit_supports_target.argtypes = [tensor_p, tensor_p, tensor_p, tensor_p, options_p, ctypes.c_char_p,
                                            ctypes.POINTER(ctypes.c_int)]
    lib.sagejit_check_head_dim.argtypes = [ctypes.c_int64]
    for name in ("sagejit_attention", "sagejit_attention_with_workspace", "sagejit_attention_launch", "sagejit_supports",
                 "sagejit_workspace_size", "sagejit_release_workspaces", "sagejit_emulate_attention",
                 "sagejit_supports_target", "sagejit_check_head_dim"):
        getattr(lib, name).restype = ctypes.c_int
    lib.sagejit_release_workspaces.argtypes = []
    lib.sagejit_default_options.argtypes = []
    lib.sagejit_default_options.restype = Options
    lib.sagejit_default_launch.argtypes = []
    lib.sagejit_default_launch.restype = Launch
    lib.sagejit_last_error.argtypes = []
    lib.sagejit_last_error.restype = ctypes.c_char_p
    lib.sagejit_status_string.argtypes = [ctypes.c_int]
    lib.sagejit_status_string.restype = ctypes.c_char_p
    lib.sagejit_version.argtypes = []
    lib.sagejit_version.restype = ctypes.c_char_p
    lib.sagejit_set_library_search_dirs.argtypes = [ctypes.c_char_p]
    lib.sagejit_set_library_search_dirs.restype = ctypes.c_int
    return lib


def _load(path):
    """ctypes.CDLL(path) with the C ABI declared; OSError when it cannot be loaded or is not libsagejit."""
    lib = ctypes.CDLL(path)
    try:
        return _declare(lib)
    except AttributeError as error:  # loaded, but some other library (SAGEJIT_LIBRARY=libc.so.6, ...)
        raise OSError(f"not a compatible libsagejit (a C ABI function is missing: {error})") from None


def library():
    """The loaded library (loaded on first use); raises SagejitError(runtime_not_found) naming every path tried."""
    global _lib
    with _lock:
        if _lib is None:
            tried = []
            for path in _candidates():
                try:
                    _lib = _load(path)
                    break
                except OSError as error:
                    tried.append(f"{path} ({error})")
            if _lib is None:
                raise SagejitError(Status.runtime_not_found, "libsagejit could not be loaded; set SAGEJIT_LIBRARY to its path. Tried: "
                                   + "; ".join(tried))
            _runtime_dirs.hand_over(_lib)  # before any call chooses the GPU runtime libraries
        return _lib


def check(status):
    """Raises SagejitError with the thread's last error message unless status is success."""
    if status != SUCCESS:
        raise error_for(status, library().sagejit_last_error().decode("utf-8", "replace"))


def last_error():
    return library().sagejit_last_error().decode("utf-8", "replace")
