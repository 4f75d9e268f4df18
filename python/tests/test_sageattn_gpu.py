"""GPU tests: sageattn against torch SDPA (fp32 reference) for HND/NHD, strided views of a packed qkv
tensor, causal, GQA, return_lse against torch.logsumexp, another stream, and patch_sdpa's routing
with counts. Skipped without a CUDA/ROCm device."""
import math
import zlib

import pytest

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA/ROCm device")

import torch.nn.functional as F  # noqa: E402

import sagejit  # noqa: E402
from sagejit import SagejitError, sageattn  # noqa: E402

MIN_COS = 0.9992          # issue 7's bar against an exact reference on random normal inputs
MIN_COS_K_OFFSETS = 0.999  # and with K channel offsets (fp8 PV, the sm_90 default, sits near both)
TORCH_SDPA = F.scaled_dot_product_attention  # the reference, never the patched one


@pytest.fixture(autouse=True)
def fixed_inputs(request):
    """Fresh but reproducible random inputs per test: fp8-PV quality sits close to the thresholds, so
    a failure must be re-runnable, not a lucky or unlucky draw."""
    torch.manual_seed(zlib.crc32(request.node.name.encode()))


def cosine(a, b):
    a, b = a.double().flatten(), b.double().flatten()
    return (a @ b / (a.norm() * b.norm())).item()


def to_hnd(t, layout):
    return t if layout == "HND" else t.transpose(1, 2)


def reference(q, k, v, layout="HND", causal=False, scale=None):
    qh, kh, vh = (to_hnd(t, layout).float() for t in (q, k, v))
    group = qh.shape[1] // kh.shape[1]
    kh, vh = kh.repeat_interleave(group, dim=1), vh.repeat_interleave(group, dim=1)
    out = TORCH_SDPA(qh, kh, vh, is_causal=causal, scale=scale)
    return out if layout == "HND" else out.transpose(1, 2)


def make(shape, dtype):
    return torch.randn(shape, dtype=dtype, device="cuda")


def shapes(layout, batch, heads, tokens, head_dim):
    return (batch, heads, tokens, head_dim) if layout == "HND" else (batch, tokens, heads, head_dim)


@pytest.mark.parametrize("layout", ["HND", "NHD"])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("head_dim", [32, 40, 64, 80, 96, 128, 160, 256])  # 32/40/80/96/160 run zero-padded to 64/128/256
def test_matches_sdpa(layout, dtype, head_dim):
    q = make(shapes(layout, 2, 4, 333, head_dim), dtype)
    k = make(shapes(layout, 2, 4, 517, head_dim), dtype)
    v = make(shapes(layout, 2, 4, 517, head_dim), dtype)
    out = sageattn(q, k, v, tensor_layout=layout)
    assert out.shape == q.shape and out.dtype == dtype
    assert cosine(out, reference(q, k, v, layout)) >= MIN_COS


@pytest.mark.parametrize("layout", ["HND", "NHD"])
def test_strided_views_of_a_packed_qkv(layout):
    batch, tokens, heads, head_dim = 2, 300, 6, 128
    qkv = make((batch, tokens, 3, heads, head_dim), torch.bfloat16)
    q, k, v = (qkv[:, :, i] for i in range(3))  # NHD views, token stride 3*H*D
    if layout == "HND":
        q, k, v = (t.transpose(1, 2) for t in (q, k, v))
    assert not q.is_contiguous()
    out = sageattn(q, k, v, tensor_layout=layout)
    assert cosine(out, reference(q, k, v, layout)) >= MIN_COS


@pytest.mark.parametrize("seq_q,seq_kv", [(400, 400), (130, 700), (700, 130)])
def test_causal(seq_q, seq_kv):
    q = make((1, 4, seq_q, 128), torch.float16)
    k, v = make((1, 4, seq_kv, 128), torch.float16), make((1, 4, seq_kv, 128), torch.float16)
    out = sageattn(q, k, v, is_causal=True)
    # Top-left alignment: query i sees keys 0..i, so every row sees at least key 0.
    assert cosine(out, reference(q, k, v, causal=True)) >= MIN_COS


@pytest.mark.parametrize("layout", ["HND", "NHD"])
def test_gqa(layout):
    q = make(shapes(layout, 2, 8, 256, 128), torch.bfloat16)
    k = make(shapes(layout, 2, 2, 384, 128), torch.bfloat16)
    v = make(shapes(layout, 2, 2, 384, 128), torch.bfloat16)
    out = sageattn(q, k, v, tensor_layout=layout, is_causal=True)
    assert cosine(out, reference(q, k, v, layout, causal=True)) >= MIN_COS


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("smooth_k", [True, False])
def test_return_lse(causal, smooth_k):
    q = make((2, 3, 200, 64), torch.bfloat16)
    k = make((2, 3, 200, 64), torch.bfloat16)
    k = k + 4.0 * torch.randn(1, 1, 1, 64, device="cuda", dtype=torch.bfloat16)  # channel offsets: smoothing matters
    v = make((2, 3, 200, 64), torch.bfloat16)
    scale = 0.7 / math.sqrt(64)
    out, lse = sageattn(q, k, v, is_causal=causal, sm_scale=scale, return_lse=True, smooth_k=smooth_k)
    assert lse.shape == (2, 3, 200) and lse.dtype == torch.float32
    scores = q.float() @ k.float().transpose(-1, -2) * scale
    if causal:
        scores = scores.masked_fill(torch.ones(200, 200, device="cuda", dtype=torch.bool).triu(1), float("-inf"))
    expected = torch.logsumexp(scores, dim=-1)
    # LSE moves by at most the largest score error, and INT8 scores err in proportion to their
    # magnitude (about 1% with these channel offsets; measured max 0.11 where |s| reaches ~8). A
    # missing smoothing correction would be off by q.mean(k) * scale, about 2-3 here.
    score_scale = scores.masked_fill(scores.isinf(), 0).abs().amax(dim=-1)
    tolerance = 0.02 + 0.03 * score_scale
    if not smooth_k:
        # Unsmoothed K quantizes its channel offsets too, so a score's error follows |q|.|k|, not |s|
        # (a causal row 0 sees one key whose score can be near 0). Bound: each element's rounding
        # error is at most half an INT8 step of its block, doubled here for margin.
        q_step = q.float().abs().amax(dim=-1) / 127
        k_step = k.float().abs().amax(dim=(-2, -1), keepdim=True).squeeze(-1) / 127
        tolerance = tolerance + scale * (q.float().abs().sum(dim=-1) * k_step
                                         + q_step * k.float().abs().sum(dim=-1).amax(dim=-1, keepdim=True))
    assert ((lse - expected).abs() <= tolerance).all()
    assert cosine(out, reference(q, k, v, causal=causal, scale=scale)) >= MIN_COS_K_OFFSETS


def test_runs_on_the_current_stream():
    q, k, v = (make((1, 4, 1000, 128), torch.bfloat16) for _ in range(3))
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        out = sageattn(q, k, v)
        ref_out = out.clone()  # ordered after sageattn on the same stream
    stream.synchronize()
    assert cosine(ref_out, reference(q, k, v)) >= MIN_COS


def test_errors_name_the_argument():
    q = make((1, 2, 64, 100), torch.bfloat16)
    with pytest.raises(SagejitError, match=r"head_dim 100 .*multiples of 8 from 8 to 256") as error:
        sageattn(q, q, q)
    assert error.value.code == "unsupported"
    wide = make((1, 2, 64, 256), torch.bfloat16)[..., ::2]
    with pytest.raises(SagejitError, match=r"strides\[3\]"):
        sageattn(wide, wide, wide)
    f32 = make((1, 2, 64, 64), torch.float32)
    assert not sagejit.supports(f32, f32, f32)
    good = make((1, 2, 64, 64), torch.float16)
    assert sagejit.supports(good, good, good)


def test_patch_sdpa_routes_and_falls_back_with_counts():
    sagejit.reset_sdpa_counters()
    original = F.scaled_dot_product_attention
    q, k, v = (make((2, 4, 256, 128), torch.bfloat16) for _ in range(3))
    with sagejit.patch_sdpa():
        routed = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        assert cosine(routed, reference(q, k, v, causal=True)) >= MIN_COS
        kv2 = make((2, 2, 256, 128), torch.bfloat16)
        gqa = F.scaled_dot_product_attention(q, kv2, kv2, enable_gqa=True)
        assert cosine(gqa, reference(q, kv2, kv2)) >= MIN_COS
        mask = torch.rand(256, 256, device="cuda") > 0.5
        mask.fill_diagonal_(True)
        # A [1, Nk] mask is a key mask (the same for every head and query): routed.
        keyed = F.scaled_dot_product_attention(q, k, v, dropout_p=0.0, scale=0.05, attn_mask=mask[:1])
        want_keyed = original(*(t.float() for t in (q, k, v)), scale=0.05, attn_mask=mask[:1])
        assert cosine(keyed, want_keyed) >= MIN_COS
        # Fallbacks: each must equal torch's own result.
        calls = [
            dict(args=(q, k, v), kwargs=dict(attn_mask=mask)),  # varies along the queries
            dict(args=tuple(t.float() for t in (q, k, v)), kwargs={}),                     # fp32
            dict(args=tuple(make((1, 1, 64, 512), torch.float16) for _ in range(3)), kwargs={}),  # head_dim 512 (VAE-like)
            dict(args=tuple(t.cpu() for t in (q, k, v)), kwargs={}),                        # CPU
            dict(args=tuple(t[0] for t in (q, k, v)), kwargs={}),                           # 3-D
        ]
        for call in calls:
            got = F.scaled_dot_product_attention(*call["args"], **call["kwargs"])
            want = original(*call["args"], **call["kwargs"])
            assert torch.allclose(got, want, equal_nan=True)
        qg = q.clone().requires_grad_(True)
        F.scaled_dot_product_attention(qg, k, v).sum().backward()  # autograd -> torch, gradient works
        assert qg.grad is not None
        with pytest.raises(RuntimeError):  # heads differ without enable_gqa: torch's own error
            F.scaled_dot_product_attention(q, kv2, kv2)
        dropped = F.scaled_dot_product_attention(q, k, v, dropout_p=0.5)
        assert dropped.shape == q.shape
    assert F.scaled_dot_product_attention is original
    counters = sagejit.sdpa_counters()
    assert counters["routed"] == 3
    assert counters["fallback"] == 8
    reasons = counters["fallback_reasons"]
    assert reasons["attn_mask: varies along the queries"] == 1
    assert reasons["dtype"] == 1
    assert reasons["head_dim"] == 1
    assert reasons["not on a CUDA/ROCm device"] == 1
    assert reasons["not 4-D"] == 1
    assert reasons["autograd"] == 1
    assert reasons["heads differ without enable_gqa"] == 1
    assert reasons["dropout_p"] == 1
