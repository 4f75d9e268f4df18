"""Key masks through the CPU emulator (docs/NUMERICS.md "Key masks"): sagejit.sageattn(attn_mask=...) and
supports() with bool and additive masks of every accepted shape, against torch SDPA (fp64); all-masked
rows give what torch gives (0); masks sagejit does not take raise UnsupportedCall naming what is accepted;
the op traces under torch.compile(fullgraph=True) with a mask; patch_sdpa routes key-padding masks."""
import pytest

torch = pytest.importorskip("torch")

import torch.nn.functional as F  # noqa: E402

import sagejit  # noqa: E402
from sagejit import SagejitError, UnsupportedCall, sageattn  # noqa: E402

MIN_COS = 0.998
TORCH_SDPA = F.scaled_dot_product_attention


pytestmark = pytest.mark.usefixtures("lib")  # conftest: skipped, saying why, without the library


def cosine(a, b):
    return F.cosine_similarity(a.double().flatten(), b.double().flatten(), dim=0).item()


def sdpa_reference(q, k, v, mask, causal=False, layout="HND"):
    """torch SDPA in fp64 (math backend), [B, H, N, D] in `layout`; GQA by repeating k and v."""
    qh, kh, vh = (t.double() if layout == "HND" else t.double().transpose(1, 2) for t in (q, k, v))
    group = qh.shape[1] // kh.shape[1]
    kh, vh = kh.repeat_interleave(group, dim=1), vh.repeat_interleave(group, dim=1)
    m = mask if mask.dtype == torch.bool else mask.double()
    if causal:  # SDPA takes no mask with is_causal: fold the causal mask into it
        n_q, n_k = qh.shape[2], kh.shape[2]
        allowed = torch.ones(n_q, n_k, dtype=torch.bool).tril()
        m = (m & allowed) if m.dtype == torch.bool else m.masked_fill(~allowed, float("-inf"))
    from torch.nn.attention import SDPBackend, sdpa_kernel

    with sdpa_kernel(SDPBackend.MATH):
        out = TORCH_SDPA(qh, kh, vh, attn_mask=m)
    return out if layout == "HND" else out.transpose(1, 2)


def draw_mask(generator, batch, heads, seq_q, seq_kv, dtype, shape_kind):
    """A key mask of one of the accepted shapes: [B,1,1,Nk], [1,1,1,Nk], [Nk], expanded [B,H,Nq,Nk]."""
    valid = torch.rand(batch, seq_kv, generator=generator) > 0.3
    valid[:, 0] |= torch.rand(batch, generator=generator) > 0.5  # some rows keep key 0, others not
    if dtype == torch.bool:
        values = valid
    else:
        bias = torch.where(torch.rand(batch, seq_kv, generator=generator) > 0.5, 0.0,
                           torch.randn(batch, seq_kv, generator=generator))
        values = torch.where(valid, bias, torch.tensor(float("-inf"))).to(dtype)
    if shape_kind == "b11n":
        return values[:, None, None, :]
    if shape_kind == "111n":
        return values[:1, None, None, :]
    if shape_kind == "n":
        return values[0]
    return values[:, None, None, :].expand(batch, heads, seq_q, seq_kv)  # stride 0 along H and Nq


@pytest.mark.parametrize("trial", range(12))
def test_masked_sageattn_matches_torch_sdpa(seed, trial):
    generator = torch.Generator().manual_seed(seed + trial)
    pick = lambda *values: values[int(torch.randint(len(values), (1,), generator=generator))]  # noqa: E731
    batch, heads_kv, group = pick(1, 2), pick(1, 2), pick(1, 2)
    seq_q, seq_kv, head_dim = pick(1, 33, 130), pick(5, 64, 150), pick(64, 128)
    dtype, layout = pick(torch.bfloat16, torch.float16), pick("HND", "NHD")
    mask_dtype = pick(torch.bool, torch.float32, torch.bfloat16, torch.float16)
    shape_kind = pick("b11n", "111n", "n", "expanded")
    causal = pick(False, True)
    heads = heads_kv * group

    def one(h, n):
        shape = (batch, h, n, head_dim) if layout == "HND" else (batch, n, h, head_dim)
        return torch.randn(shape, generator=generator).to(dtype)

    q, k, v = one(heads, seq_q), one(heads_kv, seq_kv), one(heads_kv, seq_kv)
    mask = draw_mask(generator, batch, heads, seq_q, seq_kv, mask_dtype, shape_kind)
    assert sagejit.supports(q, k, v, tensor_layout=layout, is_causal=causal, attn_mask=mask)
    out = sageattn(q, k, v, tensor_layout=layout, is_causal=causal, attn_mask=mask)
    expected = sdpa_reference(q, k, v, mask, causal, layout)
    expected = torch.nan_to_num(expected, nan=0.0)  # (older torch: NaN for all-masked rows; 2.13 gives 0)
    rows = expected.abs().sum(dim=-1) != 0  # rows that see a valid key (a draw may leave none)
    if rows.any():
        assert cosine(out[rows], expected[rows]) >= MIN_COS, (shape_kind, mask_dtype, causal, layout)
    assert torch.equal(out[~rows], torch.zeros_like(out[~rows]))


def test_all_masked_rows_give_what_torch_sdpa_gives():
    """torch 2.13's SDPA (math backend and the default CPU kernel) gives 0 for a row whose keys are all
    masked, bool or -inf; sagejit gives 0 too (and an LSE of -inf)."""
    q = torch.randn(2, 2, 9, 64, dtype=torch.bfloat16)
    k, v = torch.randn_like(q), torch.randn_like(q)
    mask = torch.ones(2, 1, 1, 9, dtype=torch.bool)
    mask[1] = False  # batch item 1: no key
    from torch.nn.attention import SDPBackend, sdpa_kernel

    for m in (mask, torch.zeros(mask.shape).masked_fill(~mask, float("-inf"))):
        torch_default = TORCH_SDPA(q.float(), k.float(), v.float(), attn_mask=m)
        with sdpa_kernel(SDPBackend.MATH):
            torch_math = TORCH_SDPA(q.float(), k.float(), v.float(), attn_mask=m)
        assert torch.equal(torch_math[1], torch.zeros_like(torch_math[1]))
        assert torch.equal(torch_default[1], torch.zeros_like(torch_default[1]))
        out, lse = sageattn(q, k, v, attn_mask=m, return_lse=True)
        assert torch.equal(out[1], torch.zeros_like(out[1]))
        assert torch.isneginf(lse[1]).all() and torch.isfinite(lse[0]).all()
        assert cosine(out[0], torch_math[0]) >= MIN_COS


def test_ltx_style_additive_mask_and_a_true_mask_change_nothing_else():
    q = torch.randn(2, 3, 40, 64, dtype=torch.float16)
    k, v = torch.randn(2, 3, 50, 64, dtype=torch.float16), torch.randn(2, 3, 50, 64, dtype=torch.float16)
    keep = torch.ones(2, 50)
    keep[0, 30:] = 0
    ltx = ((1 - keep) * -10000.0).to(torch.float16)[:, None, None, :]  # (1 - mask) * -10000
    out = sageattn(q, k, v, attn_mask=ltx)
    assert cosine(out, sdpa_reference(q, k, v, ltx)) >= MIN_COS
    plain = sageattn(q, k, v)
    assert torch.equal(sageattn(q, k, v, attn_mask=torch.ones(2, 1, 1, 50, dtype=torch.bool)), plain)
    assert torch.equal(sageattn(q, k, v, attn_mask=torch.zeros(1, 1, 1, 50)), plain)


def test_masks_sagejit_does_not_take_are_unsupported_calls_naming_what_is_accepted():
    q = torch.randn(2, 2, 16, 64, dtype=torch.bfloat16)
    per_query = torch.rand(2, 1, 16, 16) > 0.5  # varies along the queries
    with pytest.raises(UnsupportedCall, match="varies along the queries.*key mask"):
        sageattn(q, q, q, attn_mask=per_query)
    per_head = torch.rand(2, 2, 1, 16) > 0.5  # taken where q and k have the same heads; not with GQA
    kv = q[:, :1]
    with pytest.raises(UnsupportedCall, match="varies along the heads with GQA"):
        sageattn(q, kv, kv, attn_mask=per_head)
    with pytest.raises(UnsupportedCall, match="attn_mask.dtype torch.int64 is not one of"):
        sageattn(q, q, q, attn_mask=torch.ones(2, 1, 1, 16, dtype=torch.int64))
    with pytest.raises(SagejitError, match="does not broadcast"):
        sageattn(q, q, q, attn_mask=torch.ones(3, 1, 1, 16, dtype=torch.bool))
    support = sagejit.supports(q, q, q, attn_mask=per_query)
    assert not support and "varies along the queries" in support.reason


def test_fullgraph_compile_traces_a_masked_call():
    torch._dynamo.reset()

    def block(q, k, v, mask):
        return sageattn(q, k, v, attn_mask=mask) * 2

    q = torch.randn(1, 2, 24, 64, dtype=torch.bfloat16)
    k, v = torch.randn_like(q), torch.randn_like(q)
    mask = (torch.arange(24) < 17)[None, None, None, :]
    compiled = torch.compile(block, fullgraph=True, backend="aot_eager")
    assert torch.equal(compiled(q, k, v, mask), block(q, k, v, mask))
    fake = torch.ops.sagejit.sageattn.default(q, k, v, 0, False, None, True, False, mask)
    assert fake[0].shape == q.shape


def test_patch_sdpa_routes_key_padding_masks_and_counts_other_masks():
    q = torch.randn(2, 2, 20, 64, dtype=torch.bfloat16)
    k, v = torch.randn_like(q), torch.randn_like(q)
    padding = torch.ones(2, 1, 1, 20, dtype=torch.bool)
    padding[1, ..., 12:] = False
    sagejit.reset_sdpa_counters()
    with sagejit.patch_sdpa(cpu=True):
        routed = F.scaled_dot_product_attention(q, k, v, attn_mask=padding)
        F.scaled_dot_product_attention(q, k, v, attn_mask=torch.rand(2, 1, 20, 20) > 0.5)
    counters = sagejit.sdpa_counters()
    assert counters["routed"] == 1 and counters["fallback"] == 1, counters
    assert list(counters["fallback_reasons"]) == ["attn_mask: varies along the queries"], counters
    assert torch.equal(routed, sageattn(q, k, v, attn_mask=padding))
