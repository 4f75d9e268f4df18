"""diffusers' "sagejit_varlen" backend on CPU tensors (sagejit's emulator): key-padding masks become cu_seqlens and
packed keys (any pattern of valid keys), the result against torch SDPA with the mask, the calls it cannot take
falling back counted, and a tiny HunyuanVideo transformer with every masked call routed through it."""
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("diffusers")

import sagejit  # noqa: E402
import sagejit.integrations.diffusers as sj_diffusers  # noqa: E402
from diffusers.models.attention_dispatch import (  # noqa: E402
    AttentionBackendName, _AttentionBackendRegistry, dispatch_attention_fn)
from sagejit.integrations import _diffusers_varlen  # noqa: E402
from sagejit.integrations._reference import attention_with_lse  # noqa: E402

import diffusers_models as dm  # noqa: E402

MIN_COSINE = 0.998  # sagejit's INT8/FP8 attention vs fp32 SDPA at these sizes (D = 64); measured >= 0.9994
VARLEN = sj_diffusers.VARLEN_BACKEND_NAME


@pytest.fixture(autouse=True)
def _emulated(emulated_integration):
    emulated_integration(sj_diffusers)
    yield
    _AttentionBackendRegistry.set_active_backend(AttentionBackendName.NATIVE)


def _qkv(g, batch=2, tokens=40, heads=2, kv_heads=None, head_dim=64):
    q = torch.randn(batch, tokens, heads, head_dim, generator=g).to(torch.bfloat16)
    k, v = (torch.randn(batch, tokens, kv_heads or heads, head_dim, generator=g).to(torch.bfloat16) for _ in range(2))
    return q, k, v


def _native(q, k, v, mask):
    if mask is not None and mask.dim() == 2:
        mask = mask[:, None, None, :]
    return torch.nn.functional.scaled_dot_product_attention(
        q.float().transpose(1, 2), k.float().transpose(1, 2), v.float().transpose(1, 2), attn_mask=mask,
        enable_gqa=q.shape[2] != k.shape[2]).transpose(1, 2)


def test_pack_keys_gathers_each_items_kept_keys_in_order(seed):
    g = torch.Generator().manual_seed(seed)
    batch, tokens = 3, 37
    keep = torch.rand(batch, tokens, generator=g) > torch.rand(batch, 1, generator=g)  # 0 .. all kept per item
    key = torch.randn(batch, tokens, 2, 8, generator=g)
    value = torch.randn(batch, tokens, 2, 8, generator=g)
    cu, packed_k, packed_v = _diffusers_varlen.pack_keys(keep, key, value)
    counts = keep.sum(dim=1)
    assert cu.dtype == torch.int32 and cu.tolist() == [0] + torch.cumsum(counts, 0).tolist()
    assert packed_k.shape == (batch * tokens, 2, 8)
    for b in range(batch):
        start, stop = cu[b].item(), cu[b + 1].item()
        assert torch.equal(packed_k[start:stop], key[b][keep[b]])
        assert torch.equal(packed_v[start:stop], value[b][keep[b]])
    # The dropped keys follow, each exactly once: the packing is a permutation of the rows.
    assert torch.equal(packed_k[cu[-1]:], key.reshape(-1, 2, 8)[~keep.reshape(-1)])


@pytest.mark.parametrize("pattern", ["prefix", "scattered", "none kept in one item", "no mask"])
@pytest.mark.parametrize("form", ["[B, Nk]", "[B, 1, 1, Nk]", "expanded [B, H, Nq, Nk]"])
def test_key_padding_masks_match_sdpa_with_the_mask(seed, pattern, form):
    g = torch.Generator().manual_seed(seed)
    q, k, v = _qkv(g)
    batch, tokens, heads = q.shape[:3]
    if pattern == "prefix":
        keep = torch.arange(tokens)[None, :] < torch.tensor([[tokens], [11]])
    elif pattern == "scattered":
        keep = torch.rand(batch, tokens, generator=g) > 0.4
        keep[:, 0] = True
    elif pattern == "none kept in one item":
        keep = torch.ones(batch, tokens, dtype=torch.bool)
        keep[1] = False
    else:
        keep = None
    mask = keep
    if keep is not None and form != "[B, Nk]":
        mask = keep[:, None, None, :]
        if form.startswith("expanded"):
            mask = mask.expand(batch, heads, tokens, tokens)
    out = dispatch_attention_fn(q, k, v, attn_mask=mask, backend=VARLEN)
    expected = _native(q, k, v, keep)
    assert out.shape == q.shape and out.dtype == q.dtype
    if pattern == "none kept in one item":  # torch SDPA gives NaN for a row without keys, sagejit 0
        assert torch.equal(out[1], torch.zeros_like(out[1]))
        out, expected = out[:1], expected[:1]
    assert dm.cosine(out, expected) >= MIN_COSINE
    assert sj_diffusers.counters() == {"routed": 1, "fallback": 0, "fallback_reasons": {}}


def test_gqa_and_the_lse_in_diffusers_layout(seed):
    g = torch.Generator().manual_seed(seed)
    q, k, v = _qkv(g, heads=4, kv_heads=2)
    keep = torch.rand(2, 40, generator=g) > 0.3
    keep[:, 0] = True
    backend = _AttentionBackendRegistry._backends[AttentionBackendName(VARLEN)]
    out, lse = backend(q, k, v, attn_mask=keep, return_lse=True)
    ref_out, ref_lse = attention_with_lse(q.float(), k.repeat_interleave(2, dim=2).float(),
                                          v.repeat_interleave(2, dim=2).float(), tensor_layout="NHD",
                                          attn_mask=keep[:, None, None, :])
    assert dm.cosine(out, ref_out) >= MIN_COSINE
    assert lse.shape == (2, 40, 4)  # diffusers' [B, S, H]
    assert torch.allclose(lse, ref_lse.transpose(1, 2), atol=0.05)


def test_masks_it_cannot_take_fall_back_counted_or_raise_in_strict_mode(seed):
    g = torch.Generator().manual_seed(seed)
    q, k, v = _qkv(g)
    keep = torch.rand(2, 40, generator=g) > 0.3
    keep[:, 0] = True
    additive = ((~keep).float() * -10000.0)[:, None, None, :]
    per_query = torch.tril(torch.ones(40, 40, dtype=torch.bool))[None, None].expand(2, 1, 40, 40)
    for mask in (additive, per_query):
        out = dispatch_attention_fn(q, k, v, attn_mask=mask, backend=VARLEN)
        assert dm.cosine(out, _native(q, k, v, mask)) > 0.99999  # native's own result
    assert sj_diffusers.counters() == {"routed": 0, "fallback": 2, "fallback_reasons": {
        "attn_mask: not bool": 1, "attn_mask: varies along the queries": 1}}
    sj_diffusers.configure(strict=True)
    try:
        with pytest.raises(sagejit.UnsupportedCall, match="attn_mask: not bool"):
            dispatch_attention_fn(q, k, v, attn_mask=additive, backend=VARLEN)
    finally:
        sj_diffusers.configure(strict=False)
    with pytest.raises(ValueError, match="attn_mask or is_causal"):
        dispatch_attention_fn(q, k, v, attn_mask=keep, is_causal=True, backend=VARLEN)
    with pytest.raises(sagejit.SagejitError, match="does not broadcast"):
        dispatch_attention_fn(q, k, v, attn_mask=keep[:, :7], backend=VARLEN)


def test_hunyuan_video_runs_its_masked_calls_through_the_varlen_backend(seed):
    c = dm.case("hunyuanvideo", "tiny")
    model = dm.build(c, "cpu", torch.bfloat16, seed)
    latent, cond = dm.model_inputs(c, "cpu", torch.bfloat16, seed)
    with torch.no_grad():
        model.set_attention_backend("native")
        native = dm.forward(model, c, latent, 0.5, cond).float()
        model.set_attention_backend(VARLEN)
        ours = dm.forward(model, c, latent, 0.5, cond).float()
    # The joint and single-stream blocks dispatch with the text-padding mask; both reach sagejit_varlen.
    assert sj_diffusers.counters() == {"routed": 2, "fallback": 0, "fallback_reasons": {}}
    assert dm.cosine(ours, native) > 0.999
    assert not torch.equal(ours, native)
