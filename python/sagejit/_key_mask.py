"""Key masks (docs/NUMERICS.md "Key masks"): which torch attention masks sagejit takes, and the view of
them the C ABI takes (sagejit_key_mask: [B or 1, Nk] with element strides, read by the kernels as it is:
no copy, no host synchronisation).

A mask follows torch SDPA's `attn_mask`: it broadcasts against the scores [B, Hq, Nq, Nk] (right-aligned,
missing leading dimensions are 1), bool (True = attend) or an additive float (float32, bfloat16,
float16). sagejit takes the ones that are the same for every query (size 1 or stride 0 along Nq) and
either the same for every head or - where q and k have the same heads - one per head: a key-padding mask
such as [B, 1, 1, Nk] (HunyuanVideo), (1 - mask) * -10000 repeated per head as [B, H, 1, Nk] (LTX), or one
expanded to [B, H, Nq, Nk] with stride 0 along Nq. A 2-D mask is SDPA's [Nq, Nk]: it qualifies only when
it does not vary along the queries. Anything else is UnsupportedCall naming what is accepted.
"""
from ._library import KeyMask, KeyMaskHeads, SagejitError, UnsupportedCall
from ._torch_tensors import INVALID_ARGUMENT

# sagejit_mask_type codes by str(torch dtype).
MASK_TYPES = {"torch.bool": 1, "torch.float32": 2, "torch.bfloat16": 3, "torch.float16": 4}
ACCEPTED = ("a key mask: bool (True = attend) or additive float32/bfloat16/float16, broadcasting against the "
            "scores [B, H, Nq, Nk], the same for every query (size 1 or stride 0 there) and for every head unless q "
            "and k have the same heads, e.g. [B, 1, 1, Nk], [B, H, 1, Nk] or one expanded to [B, H, Nq, Nk]")


def _scores_shape(q, k, layout):
    """(B, Hq, Nq, Nk) of a call in `layout` (0 = HND, 1 = NHD)."""
    if layout == 0:
        return q.shape[0], q.shape[1], q.shape[2], k.shape[2]
    return q.shape[0], q.shape[2], q.shape[1], k.shape[1]


def _examine(mask, q, k, layout):
    """(None, view) for an accepted mask, or (error class, message): no exception is raised here, so the
    integrations' routing decides on a mask inside torch.compile(fullgraph=True) too."""
    import torch

    if not isinstance(mask, torch.Tensor):
        return SagejitError, f"attn_mask is a {type(mask).__name__}, not a torch.Tensor or None"
    code = MASK_TYPES.get(str(mask.dtype))
    if code is None:
        return UnsupportedCall, (f"attn_mask.dtype {mask.dtype} is not one of [torch.bool, torch.float32, "
                                 f"torch.bfloat16, torch.float16]; sagejit takes {ACCEPTED}")
    if mask.device != q.device:
        return SagejitError, (f"attn_mask is on {mask.device} but q is on {q.device}; the mask must be on the "
                              "tensors' device")
    batch, heads, queries, keys = _scores_shape(q, k, layout)
    if mask.dim() > 4 or mask.dim() < 1:
        return UnsupportedCall, (f"attn_mask has {mask.dim()} dimensions (shape {tuple(mask.shape)}); sagejit takes "
                                 f"{ACCEPTED}")
    shape = (1,) * (4 - mask.dim()) + tuple(mask.shape)
    strides = (0,) * (4 - mask.dim()) + tuple(mask.stride())
    wanted = (batch, heads, queries, keys)
    for i, name in enumerate(("B", "H", "Nq", "Nk")):
        if shape[i] not in (1, wanted[i]):
            return SagejitError, (f"attn_mask of shape {tuple(mask.shape)} does not broadcast against the scores "
                                  f"[B, H, Nq, Nk] = {list(wanted)} (dimension {name})")
    if shape[2] != 1 and strides[2] != 0:
        return UnsupportedCall, (f"attn_mask of shape {tuple(mask.shape)} and strides {tuple(mask.stride())} "
                                 f"varies along the queries; sagejit takes {ACCEPTED}")
    per_head = shape[1] != 1 and strides[1] != 0
    kv_heads = k.shape[1] if layout == 0 else k.shape[2]
    if per_head and heads != kv_heads:
        return UnsupportedCall, (f"attn_mask of shape {tuple(mask.shape)} and strides {tuple(mask.stride())} "
                                 f"varies along the heads with GQA (q has {heads} heads, k {kv_heads}); sagejit "
                                 f"takes {ACCEPTED}")
    batch_stride = strides[0] if shape[0] != 1 else 0
    key_stride = strides[3] if shape[3] != 1 else 0
    mask_heads = (heads, strides[1]) if per_head else (1, 0)
    return None, (code, (batch if shape[0] != 1 else 1, keys), (batch_stride, key_stride), mask_heads)


def key_mask_view(mask, q, k, layout):
    """(type code, (batch, keys), (batch stride, key stride), (heads, head stride)) of `mask` for a call
    (heads 1: the same for every head), or UnsupportedCall / SagejitError(invalid_argument) naming what is
    wrong. Only shapes, strides, dtype and device are read (traceable by torch.compile; fake tensors have
    them too)."""
    error, result = _examine(mask, q, k, layout)
    if error is UnsupportedCall:
        raise UnsupportedCall(result)
    if error is not None:
        raise SagejitError(INVALID_ARGUMENT, result)
    return result


def refusal(mask, q, k, layout):
    """None when sagejit takes `mask` (or there is none); otherwise the reason, as a short counter key
    ("attn_mask: varies along the queries"), without raising. A caller's error (a mask that does not
    broadcast, on another device) is not a refusal: None, and sageattn raises it."""
    if mask is None:
        return None
    error, result = _examine(mask, q, k, layout)
    if error is not UnsupportedCall:
        return None
    if "varies along the" in result:  # "... the queries", "... the heads with GQA"
        reason = result.split("varies along the ", 1)[1].split(";", 1)[0]
        return "attn_mask: varies along the " + reason.split(" (", 1)[0]
    return "attn_mask: " + result.split(";", 1)[0].split(" (", 1)[0]


def set_key_mask(options, mask, q, k, layout):
    """Sets the sagejit_options' key_mask (with its data pointer) and key_mask_heads for `mask` (None: no
    mask)."""
    c = KeyMask()
    heads = KeyMaskHeads()
    heads.count, heads.stride = 1, 0
    if mask is not None:
        code, shape, strides, (heads.count, heads.stride) = key_mask_view(mask, q, k, layout)
        c.type = code
        c.device = mask.device.index if mask.device.index is not None else 0
        c.shape[0], c.shape[1] = shape
        c.strides[0], c.strides[1] = strides
        c.data = mask.data_ptr()
    options.key_mask = c
    options.key_mask_heads = heads


def signature(mask):
    """What of a mask a call signature depends on (its pointer is bound per call)."""
    if mask is None:
        return None
    return mask.dtype, tuple(mask.shape), mask.stride(), mask.device
