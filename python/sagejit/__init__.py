"""sagejit: SageAttention (INT8 QK^T, FP8/FP16 PV) compiled at first use for the GPU at hand.

    from sagejit import sageattn
    out = sageattn(q, k, v, tensor_layout="HND", is_causal=False)   # torch.ops.sagejit.sageattn

    import sagejit
    sagejit.patch_sdpa()     # route supported torch SDPA calls (diffusers, ComfyUI) to sagejit

ctypes over the library's C ABI (no compiled extension: one wheel for every torch >= 2.4, ROCm and
CUDA); the library is found next to this package, through $SAGEJIT_LIBRARY, the install tree or a
build tree (see _library.py). torch is optional: without it the C ABI and the programs still work.
"""
from ._library import SagejitError, UnsupportedCall, library
from ._torch_op import torch_op
from .attention import SELECTION_KEYWORDS, Support, release_workspaces, sageattn, supports, version
from .sdpa import is_sdpa_patched, patch_sdpa, reset_sdpa_counters, sdpa_counters, unpatch_sdpa

torch_op(required=False)  # registers torch.ops.sagejit.sageattn now when torch is installed

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
    "sdpa_counters",
    "supports",
    "torch_op",
    "unpatch_sdpa",
    "version",
]
