"""Attention with its log-sum-exp in plain torch (fp32 or fp64 math, query chunks): the fallback for calls that need
an LSE (context parallel's ring merges partial results with it) when sagejit cannot take them and the
framework's own attention gives no LSE. Same semantics as torch SDPA (is_causal: query i sees keys 0..i)."""
import math

_CHUNK_BYTES = 256 << 20  # bound on one chunk's fp32 scores


def attention_with_lse(q, k, v, *, tensor_layout, is_causal=False, scale=None, attn_mask=None):
    """(out, lse): out in q's layout and dtype, lse [B, Hq, Nq] (natural log) in the working precision: fp32, or
    fp64 for fp64 inputs. attn_mask: bool (True = attend) or additive, broadcastable to [B, Hq, Nq, Nk]. Heads
    of k/v may divide those of q (GQA)."""
    import torch

    work = torch.float64 if q.dtype == torch.float64 else torch.float32
    if tensor_layout == "NHD":
        q, k, v = (t.transpose(1, 2) for t in (q, k, v))
    batch, heads_q, tokens_q, head_dim = q.shape
    group = heads_q // k.shape[1]
    if group > 1:
        k, v = (t.repeat_interleave(group, dim=1) for t in (k, v))
    tokens_k = k.shape[2]
    scale = 1.0 / math.sqrt(head_dim) if scale is None else scale
    mask = None
    if attn_mask is not None:
        mask = attn_mask
        if mask.dtype == torch.bool:
            mask = torch.zeros(mask.shape, dtype=work, device=mask.device).masked_fill(~mask, -math.inf)
        mask = mask.to(work).expand(batch, heads_q, tokens_q, tokens_k)
    out = torch.empty((batch, heads_q, tokens_q, head_dim), dtype=q.dtype, device=q.device)
    lse = torch.empty((batch, heads_q, tokens_q), dtype=work, device=q.device)
    chunk = max(1, _CHUNK_BYTES // max(1, 4 * batch * heads_q * tokens_k))
    kf, vf = k.to(work), v.to(work)
    for start in range(0, tokens_q, chunk):
        stop = min(tokens_q, start + chunk)
        scores = torch.matmul(q[:, :, start:stop].to(work), kf.transpose(-1, -2)) * scale
        if mask is not None:
            scores = scores + mask[:, :, start:stop]
        if is_causal:
            rows = torch.arange(start, stop, device=q.device)[:, None]
            scores = scores.masked_fill(torch.arange(tokens_k, device=q.device)[None, :] > rows, -math.inf)
        part_lse = torch.logsumexp(scores, dim=-1)
        out[:, :, start:stop] = torch.matmul(torch.exp(scores - part_lse[..., None]), vf).to(q.dtype)
        lse[:, :, start:stop] = part_lse
    if tensor_layout == "NHD":
        out = out.transpose(1, 2)
    return out, lse
