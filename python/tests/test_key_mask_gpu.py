"""GPU tests of key masks through sageattn (docs/NUMERICS.md "Key masks"): HunyuanVideo-like bool
text-padding masks and LTX-like additive masks, [B, 1, 1, N], expanded views and masks per head, against torch SDPA
(fp32); all-masked rows give 0; the mask is
read where it is (a call with a mask is captured into a CUDA graph and replays with new mask values).
Skipped without a CUDA/ROCm device."""
import zlib

import pytest

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA/ROCm device")

import torch.nn.functional as F  # noqa: E402

import sagejit  # noqa: E402
from sagejit import sageattn  # noqa: E402

MIN_COS = 0.999
TORCH_SDPA = F.scaled_dot_product_attention


@pytest.fixture(autouse=True)
def fixed_inputs(request):
    torch.manual_seed(zlib.crc32(request.node.name.encode()))


def cosine(a, b):
    a, b = a.double().flatten(), b.double().flatten()
    return (a @ b / (a.norm() * b.norm())).item()


def padding_mask(batch, tokens, valid):
    mask = torch.zeros(batch, tokens, dtype=torch.bool, device="cuda")
    for b, n in enumerate(valid):
        mask[b, :n] = True
    return mask


@pytest.mark.parametrize("mask_dtype", [torch.bool, torch.float32, torch.bfloat16, torch.float16])
@pytest.mark.parametrize("layout", ["HND", "NHD"])
@pytest.mark.parametrize("view", ["b11n", "expanded"])
def test_key_masks_match_torch_sdpa(mask_dtype, layout, view):
    batch, heads, tokens, head_dim = 2, 8, 4352, 128
    shape = (batch, heads, tokens, head_dim) if layout == "HND" else (batch, tokens, heads, head_dim)
    q, k, v = (torch.randn(shape, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    keep = padding_mask(batch, tokens, [tokens - 200, 3000])  # text padding at the end: whole tiles masked
    mask = keep if mask_dtype == torch.bool else ((~keep).to(torch.float32) * -10000.0).to(mask_dtype)
    mask = mask[:, None, None, :]
    if view == "expanded":
        mask = mask.expand(batch, heads, tokens, tokens)
    out = sageattn(q, k, v, tensor_layout=layout, attn_mask=mask)
    to_hnd = (lambda t: t) if layout == "HND" else (lambda t: t.transpose(1, 2))
    expected = TORCH_SDPA(to_hnd(q).float(), to_hnd(k).float(), to_hnd(v).float(),
                          attn_mask=mask if mask_dtype == torch.bool else mask.float())
    assert cosine(to_hnd(out), expected) >= MIN_COS


@pytest.mark.parametrize("mask_dtype", [torch.bool, torch.bfloat16])
@pytest.mark.parametrize("head_dim", [64, 128])
def test_a_mask_per_head_matches_torch_sdpa(mask_dtype, head_dim):
    """LTX's cross-attention mask: (1 - mask) * -10000 repeated per head in memory, [B, H, 1, N] (here the
    heads' masks differ too), q and k with the same heads."""
    batch, heads, queries, tokens = 2, 8, 4096, 1250
    q = torch.randn(batch, queries, heads, head_dim, device="cuda", dtype=torch.bfloat16)
    k, v = (torch.randn(batch, tokens, heads, head_dim, device="cuda", dtype=torch.bfloat16) for _ in range(2))
    keep = torch.rand(batch, heads, 1, tokens, device="cuda") > 0.3
    keep[:, :, :, 0] = True
    keep[1, 3, :, 700:] = False  # whole key tiles of one head masked
    mask = keep if mask_dtype == torch.bool else ((~keep).to(torch.float32) * -10000.0).to(mask_dtype)
    out = sageattn(q, k, v, tensor_layout="NHD", attn_mask=mask)
    expected = TORCH_SDPA(q.transpose(1, 2).float(), k.transpose(1, 2).float(), v.transpose(1, 2).float(),
                          attn_mask=mask if mask_dtype == torch.bool else mask.float())
    assert cosine(out.transpose(1, 2), expected) >= MIN_COS
    for h in (0, 3):  # each head is its own key mask's result
        one = sageattn(q[:, :, h:h + 1], k[:, :, h:h + 1], v[:, :, h:h + 1], tensor_layout="NHD",
                       attn_mask=mask[:, h:h + 1])
        assert cosine(one, out[:, :, h:h + 1]) >= 0.99999


def test_all_masked_rows_and_causal_with_a_mask():
    q, k, v = (torch.randn(2, 4, 700, 64, device="cuda", dtype=torch.float16) for _ in range(3))
    keep = padding_mask(2, 700, [0, 650])  # batch item 0: no key at all
    keep[1, :5] = False  # causal rows 0..4 of item 1 see only masked keys
    out, lse = sageattn(q, k, v, attn_mask=keep[:, None, None, :], is_causal=True, return_lse=True)
    assert torch.equal(out[0], torch.zeros_like(out[0])) and torch.isneginf(lse[0]).all()
    assert torch.equal(out[1, :, :5], torch.zeros_like(out[1, :, :5]))
    allowed = torch.ones(700, 700, dtype=torch.bool, device="cuda").tril() & keep[1][None, :]
    expected = TORCH_SDPA(q[1:].float(), k[1:].float(), v[1:].float(), attn_mask=allowed)
    assert cosine(out[1:, :, 5:], expected[:, :, 5:]) >= MIN_COS


def test_a_masked_call_replays_in_a_cuda_graph_with_new_mask_values():
    q, k, v = (torch.randn(1, 4, 1024, 128, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    mask = padding_mask(1, 1024, [1024])[:, None, None, :].clone()
    sageattn(q, k, v, attn_mask=mask)  # warm-up: compiled, loaded, workspace sized
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = sageattn(q, k, v, attn_mask=mask)
    mask[..., 500:] = False  # new values, same memory: the kernels read the mask where it is
    graph.replay()
    torch.cuda.synchronize()
    expected = TORCH_SDPA(q.float(), k.float(), v.float(), attn_mask=mask)
    assert cosine(out, expected) >= MIN_COS
