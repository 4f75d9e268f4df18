"""sagejit: SageAttention (INT8 QK^T, FP8/FP16 PV) compiled at first use for the GPU at hand.

    from sagejit import sageattn
    out = sageattn(q, k, v, tensor_layout="HND", is_causal=False)

    import sagejit
    sagejit.patch_sdpa()     # route supported torch SDPA calls (diffusers, ComfyUI) to sagejit

ctypes over the library's C ABI; the library is found through $SAGEJIT_LIBRARY, next to this
package, the install tree or a build tree (see _library.py).
"""
from ._library import SagejitError, library
from .attention import Support, release_workspaces, sageattn, supports, version
from .sdpa import is_sdpa_patched, patch_sdpa, reset_sdpa_counters, sdpa_counters, unpatch_sdpa

__all__ = [
    "SagejitError",
    "Support",
    "is_sdpa_patched",
    "library",
    "patch_sdpa",
    "release_workspaces",
    "reset_sdpa_counters",
    "sageattn",
    "sdpa_counters",
    "supports",
    "unpatch_sdpa",
    "version",
]
