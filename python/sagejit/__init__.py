"""sagejit: SageAttention (INT8 QK^T, FP8/FP16 PV) compiled at first use for the GPU at hand.

    from sagejit import sageattn
    out = sageattn(q, k, v, tensor_layout="HND", is_causal=False)   # torch.ops.sagejit.sageattn

    import sagejit
    sagejit.patch_sdpa()     # route supported torch SDPA calls (diffusers, ComfyUI) to sagejit

ctypes over the library's C ABI (no compiled extension: one wheel for every torch >= 2.4, ROCm and
CUDA); the library is found next to this package, through $SAGEJIT_LIBRARY, the install tree or a
build tree (see _library.py). torch is optional: without it the C ABI and the programs still work.

Importing sagejit never imports torch (the programs, `python -m sagejit info`, need none, and a broken
torch breaks nothing here): torch.ops.sagejit.sageattn is registered now when torch is already imported,
else right after torch's import (see _torch_op.py), or at the first sageattn / supports / torch_op() call.
"""
from ._library import SagejitError, UnsupportedCall, library
from ._torch_op import register_when_torch_loads, torch_op
from .attention import SELECTION_KEYWORDS, Support, release_workspaces, sageattn, supports, version
from .sdpa import is_sdpa_patched, patch_sdpa, reset_sdpa_counters, sdpa_counters, unpatch_sdpa
from .varlen import sageattn_varlen

register_when_torch_loads()  # torch.ops.sagejit.sageattn for callers that use the op directly

__all__ = [
    "SELECTION_KEYWORDS",
    "SagejitError",
    "Support",
    "UnsupportedCall",
    "is_sdpa_patched",
    "library",
    "patch_sdpa",
    "release_workspaces",
    "reset_sdpa_counters",
    "sageattn",
    "sageattn_varlen",
    "sdpa_counters",
    "supports",
    "torch_op",
    "unpatch_sdpa",
    "version",
]
