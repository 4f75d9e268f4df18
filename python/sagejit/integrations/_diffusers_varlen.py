"""diffusers' "sagejit_varlen" backend: the counterpart of its varlen backends ("flash_varlen", "sage_varlen"),
which turn a key-padding mask into sequence lengths and attend over the valid keys packed back to back.

Here the packing runs on the device and reads no value on the host: the valid keys of each batch item are
gathered in their order (any pattern of valid keys, not only a prefix: diffusers' own varlen backends slice
the first sum(mask) keys, which is right for prefix masks only), cu_seqlens_k is the running sum of the
per-item counts, and the call is sagejit.sageattn_varlen with the padded lengths as max_seqlen (upper
bounds: docs/API.md "Varlen"). The queries are not packed (every query row of every item is computed, as
in diffusers' varlen backends). The "sagejit" backend takes the same masks as key masks without packing
(and additive masks too); this one is for pipelines written against a varlen backend.

Calls sagejit cannot take (a mask that is not bool, one that varies along the heads or queries, dropout,
what sageattn_varlen refuses, CPU tensors) run diffusers' native attention with the caller's mask, counted
per reason in the diffusers integration's counters (strict mode raises instead).
"""
from .._key_mask import key_mask_view, refusal
from ..attention import layout_code

NHD = "NHD"


def key_padding(attn_mask, query, key):
    """(keep [B, Nk] bool view, None) of a mask the varlen backend takes, or (None, reason): a bool mask that
    broadcasts against the scores and is the same for every head and query (sagejit/_key_mask.py's rule for
    key masks, less its per-head masks), read from its shape and strides only."""
    import torch

    reason = refusal(attn_mask, query, key, layout_code(NHD))
    if reason is not None:
        return None, reason
    # A caller's error (no broadcast, another device) raises here.
    _, _, _, (heads, _) = key_mask_view(attn_mask, query, key, layout_code(NHD))
    if heads > 1:  # sequence lengths are per batch item: one set of kept keys for every head
        return None, "attn_mask: varies along the heads"
    if attn_mask.dtype != torch.bool:
        return None, "attn_mask: not bool"  # a varlen call keeps or drops keys; the sagejit backend adds biases
    batch, keys = query.shape[0], key.shape[1]
    mask = attn_mask.reshape((1,) * (4 - attn_mask.dim()) + tuple(attn_mask.shape))
    return mask[:, 0, 0, :].expand(batch, keys), None


def pack_keys(keep, key, value):
    """(cu_seqlens_k int32 [B + 1], packed k, packed v): the keys with keep True, item by item in their order,
    then the dropped keys (rows past cu_seqlens_k[-1], which no sequence reads). No host synchronisation: the
    destination of every key is computed on the device, and the packed tensors have the padded size."""
    import torch

    batch, keys = keep.shape
    counts = keep.sum(dim=1, dtype=torch.int32)
    cu_seqlens_k = torch.zeros(batch + 1, dtype=torch.int32, device=keep.device)
    cu_seqlens_k[1:] = torch.cumsum(counts, dim=0)
    flat = keep.reshape(-1)
    rank = torch.cumsum(keep.to(torch.int64), dim=1) - 1  # a kept key's place among its item's kept keys
    kept_at = cu_seqlens_k[:-1, None].to(torch.int64) + rank
    dropped_at = cu_seqlens_k[-1].to(torch.int64) + torch.cumsum((~flat).to(torch.int64), dim=0) - 1
    destination = torch.where(flat, kept_at.reshape(-1), dropped_at)  # a permutation of 0 .. B Nk - 1

    def packed(tensor):
        rows = tensor.reshape(batch * keys, *tensor.shape[2:])
        out = torch.empty_like(rows)
        out[destination] = rows
        return out

    return cu_seqlens_k, packed(key), packed(value)


def attention(query, key, value, keep, is_causal, scale, return_lse):
    """sagejit.sageattn_varlen of one diffusers call ([B, S, H, D]) with the keys `keep` ([B, Nk] bool, from
    key_padding; None: every key); the LSE as sagejit.sageattn's, [B, H, S]."""
    import torch

    from ..varlen import sageattn_varlen

    batch, queries, heads = query.shape[0], query.shape[1], query.shape[2]
    keys = key.shape[1]
    if keep is None:
        keep = torch.ones(batch, keys, dtype=torch.bool, device=query.device)
    cu_seqlens_k, k, v = pack_keys(keep, key, value)
    cu_seqlens_q = torch.arange(0, batch + 1, dtype=torch.int32, device=query.device) * queries
    result = sageattn_varlen(query.reshape(batch * queries, heads, query.shape[3]), k, v, cu_seqlens_q, cu_seqlens_k,
                             queries, keys, is_causal=is_causal, sm_scale=scale, return_lse=return_lse)
    if not return_lse:
        return result.unflatten(0, (batch, queries))
    out, lse = result  # lse [H, B S]
    return out.unflatten(0, (batch, queries)), lse.view(heads, batch, queries).transpose(0, 1)
