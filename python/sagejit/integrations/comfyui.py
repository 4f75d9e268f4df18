"""sagejit in ComfyUI's attention-function convention:

    attention(q, k, v, heads, mask=None, attn_precision=None, skip_reshape=False, skip_output_reshape=False,
              **kwargs)

q, k, v: [B, N, heads * D] (k, v: [B, Nk, heads_k * D]), or [B, heads, N, D] with skip_reshape. The output is
[B, N, heads * D], or [B, heads, N, D] with skip_output_reshape. kwargs ComfyUI passes and this reads:
`scale` (softmax scale, default 1/sqrt(D)), `enable_gqa` (k/v with fewer heads), `low_precision_attention`
(False: the caller wants full precision, so the fallback runs). attn_precision (ComfyUI's request to upcast
the scores to fp32) is honoured by construction: sagejit's scores and softmax are fp32. Other kwargs
(transformer_options, ...) are handed to the fallback unchanged.

A key mask (the same for every query and head, e.g. [B, 1, Nk] or [B, 1, 1, Nk], bool or additive) goes to
sagejit. Calls sagejit cannot take (other masks, an unsupported head dim or dtype, CPU tensors, ...) run `fallback`:
ComfyUI's own attention function when the custom node installs this (integrations/comfyui/), else
`sdpa_attention` below. Counted per reason: `counters()`; `configure(strict=True)` raises instead.
"""
from ._routing import Router

_router = Router("comfyui")
configure, counters, reset_counters = _router.module_functions()


def _heads_layout(q, k, v, heads, skip_reshape, enable_gqa):
    """(q, k, v, tensor_layout) as sagejit takes them, as views where the strides allow."""
    if skip_reshape:
        return q, k, v, "HND"
    batch, tokens_q, inner = q.shape
    head_dim = inner // heads
    heads_kv = k.shape[-1] // head_dim if enable_gqa else heads
    return (q.reshape(batch, tokens_q, heads, head_dim), k.reshape(batch, k.shape[1], heads_kv, head_dim),
            v.reshape(batch, v.shape[1], heads_kv, head_dim), "NHD")


def _output_layout(out, tensor_layout, skip_output_reshape):
    if tensor_layout == "HND":
        batch, heads, tokens, head_dim = out.shape
        return out if skip_output_reshape else out.transpose(1, 2).reshape(batch, tokens, heads * head_dim)
    batch, tokens, heads, head_dim = out.shape
    return out.transpose(1, 2) if skip_output_reshape else out.reshape(batch, tokens, heads * head_dim)


def _sdpa_mask(mask):
    # ComfyUI's masks: [Nq, Nk], [B, Nq, Nk] or [B, H, Nq, Nk]; bool (True = attend) or additive.
    if mask is not None and mask.ndim == 2:
        mask = mask[None]
    if mask is not None and mask.ndim == 3:
        mask = mask[:, None]
    return mask


def sdpa_attention(q, k, v, heads, mask=None, attn_precision=None, skip_reshape=False, skip_output_reshape=False,
                   **kwargs):
    """ComfyUI's convention over torch SDPA: the fallback where ComfyUI's own function is not at hand."""
    import torch.nn.functional as F

    enable_gqa = bool(kwargs.get("enable_gqa", False))
    q, k, v, layout = _heads_layout(q, k, v, heads, skip_reshape, enable_gqa)
    if layout == "NHD":
        q, k, v = (t.transpose(1, 2) for t in (q, k, v))
    extra = {"enable_gqa": True} if enable_gqa else {}
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=_sdpa_mask(mask), scale=kwargs.get("scale"), **extra)
    return _output_layout(out, "HND", skip_output_reshape)


def attention(q, k, v, heads, mask=None, attn_precision=None, skip_reshape=False, skip_output_reshape=False, *,
              fallback=None, strict=None, **kwargs):
    """sagejit with ComfyUI's arguments and results; `fallback` (same convention) runs the calls it cannot take."""
    fallback = fallback or sdpa_attention

    def run_fallback():
        return fallback(q, k, v, heads, mask=mask, attn_precision=attn_precision, skip_reshape=skip_reshape,
                        skip_output_reshape=skip_output_reshape, **kwargs)

    refuse = "low_precision_attention=False" if kwargs.get("low_precision_attention", True) is False else None
    sq, sk, sv, layout = _heads_layout(q, k, v, heads, skip_reshape, bool(kwargs.get("enable_gqa", False)))
    result = _router.attention(sq, sk, sv, lambda: None, tensor_layout=layout, scale=kwargs.get("scale"),
                               attn_mask=_sdpa_mask(mask), refuse=refuse, strict=strict)
    if result is None:  # sagejit did not take it: ComfyUI's function, on the caller's own arguments
        return run_fallback()
    return _output_layout(result, layout, skip_output_reshape)


def attention_override(strict=False):
    """A ComfyUI `transformer_options["optimized_attention_override"]`: ComfyUI calls it as
    override(attention_function, *args, **kwargs), with the function it would have used."""
    def override(attention_function, *args, **kwargs):
        return attention(*args, fallback=attention_function, strict=strict, **kwargs)

    override.sagejit = True  # lets callers see what is installed
    return override
