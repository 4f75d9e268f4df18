"""`sageattention` for programs that import SageAttention (ComfyUI's --use-sage-attention, WanVideo nodes):
sagejit where it can take the call, torch SDPA where it cannot (masks, dropout, ...). Put the folder that
holds this package on PYTHONPATH; see integrations/comfyui/README.md."""
from sagejit.integrations.sageattention import configure, counters, reset_counters, sageattn

__all__ = ["configure", "counters", "reset_counters", "sageattn"]
