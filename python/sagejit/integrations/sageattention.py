"""sageattn with SageAttention's signature, for code written against the `sageattention` package
(ComfyUI's --use-sage-attention, WanVideo nodes, diffusers' "sage" backend): sagejit where it can, torch SDPA
(same semantics) where it cannot - a mask other than a key mask, dropout, CPU tensors, a head dim without kernels - counted per
reason (`counters()`); `configure(strict=True)` raises instead. integrations/sageattention_shim/ makes this
importable as `sageattention`.
"""
from ..attention import _resolve_scale
from ._reference import attention_with_lse
from ._routing import Router

_router = Router("sageattention")
configure, counters, reset_counters = _router.module_functions()


def _sdpa(q, k, v, tensor_layout, is_causal, sm_scale, return_lse, attn_mask, dropout_p):
    import torch.nn.functional as F

    if return_lse:
        return attention_with_lse(q, k, v, tensor_layout=tensor_layout, is_causal=is_causal, scale=sm_scale,
                                  attn_mask=attn_mask)
    if tensor_layout == "NHD":
        q, k, v = (t.transpose(1, 2) for t in (q, k, v))
    extra = {"enable_gqa": True} if q.shape[1] != k.shape[1] else {}
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, dropout_p=dropout_p, is_causal=is_causal,
                                         scale=sm_scale, **extra)
    return out.transpose(1, 2) if tensor_layout == "NHD" else out


def sageattn(q, k, v, tensor_layout="HND", is_causal=False, sm_scale=None, return_lse=False, attn_mask=None,
             dropout_p=0.0, **kwargs):
    """SageAttention's sageattn: q [B, H, N, D] (HND) or [B, N, H, D] (NHD); returns out, or (out, lse) with lse
    fp32 [B, H, N]. `scale` (SDPA's name for sm_scale), smooth_k and SageAttention's kernel-selection keywords
    are what sagejit.sageattn accepts; anything else is its TypeError."""
    sm_scale = _resolve_scale(sm_scale, kwargs.pop("scale", None))

    def fallback():
        return _sdpa(q, k, v, tensor_layout, is_causal, sm_scale, return_lse, attn_mask, dropout_p)

    return _router.attention(q, k, v, fallback, tensor_layout=tensor_layout, is_causal=is_causal, scale=sm_scale,
                             return_lse=return_lse, attn_mask=attn_mask, dropout_p=dropout_p, **kwargs)
