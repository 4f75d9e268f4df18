"""The framework integrations on CPU tensors through sagejit's CPU op (the emulator): the shared router
(routing, fallback reasons, strict mode), the diffusers backend's calls (layouts, LSE, masks, GQA), ComfyUI's
attention convention (heads, skip_reshape, skip_output_reshape, masks, enable_gqa, scale) and the
sageattention stand-in. References are float64 attention; sagejit's results are held to the numerics
contract's cosine (INT8 QK^T, FP8 PV), fallbacks to exact equality with the framework's own attention."""
import math
import sys

import pytest

torch = pytest.importorskip("torch")

import sagejit  # noqa: E402
from sagejit.integrations import comfyui as sj_comfyui  # noqa: E402
from sagejit.integrations import sageattention as sj_sageattention  # noqa: E402
from sagejit.integrations._reference import attention_with_lse  # noqa: E402
from sagejit.integrations._routing import reason_key  # noqa: E402

MIN_COSINE = 0.995  # one attention call under the numerics contract, random inputs, bf16


def _library_or_skip():
    try:
        sagejit.library()
    except sagejit.SagejitError as error:
        pytest.skip(f"libsagejit not loadable: {error}")


@pytest.fixture(autouse=True)
def _fresh_routers():
    _library_or_skip()
    routers = (sj_comfyui, sj_sageattention)
    for module in routers:
        module.configure(strict=False, emulate_on_cpu=True)
        module.reset_counters()
    yield
    for module in routers:
        module.configure(strict=False, emulate_on_cpu=False)
        module.reset_counters()


def _cos(a, b):
    a, b = a.double().flatten(), b.double().flatten()
    return float(a @ b / (a.norm() * b.norm()))


def _reference(q, k, v, layout, scale=None, causal=False):
    out, lse = attention_with_lse(q.double(), k.double(), v.double(), tensor_layout=layout, scale=scale,
                                  is_causal=causal)
    return out, lse


def _randn(g, *shape, dtype=torch.bfloat16):
    return torch.randn(*shape, generator=g).to(dtype)


# ------------------------------------------------------------------------------------------- router
def test_reason_key_groups_one_kind_of_refusal():
    assert reason_key("head_dim 80 is not one of [64, 128]") == reason_key("head_dim 96 is not one of [64, 128]")
    assert reason_key("dtype f32 is not one of [bf16, fp16]; use torch SDPA") == "dtype fN is not one of [bfN, fpN]"
    assert reason_key("") == "unsupported"


def test_reference_matches_torch_sdpa(seed):
    g = torch.Generator().manual_seed(seed)
    q, k, v = (_randn(g, 2, 4, 33, 64, dtype=torch.float64) for _ in range(3))
    for causal in (False, True):
        out, lse = attention_with_lse(q, k, v, tensor_layout="HND", is_causal=causal)
        expected = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
        assert torch.allclose(out, expected, atol=1e-12)
        scores = q @ k.transpose(-1, -2) / 8.0
        if causal:
            scores = scores.masked_fill(torch.ones(33, 33, dtype=torch.bool).triu(1), -math.inf)
        assert torch.allclose(lse, torch.logsumexp(scores, -1), atol=1e-12)


# ------------------------------------------------------------------------------------------- ComfyUI
@pytest.mark.parametrize("skip_reshape", [False, True])
@pytest.mark.parametrize("skip_output_reshape", [False, True])
def test_comfyui_layouts_run_on_sagejit(seed, skip_reshape, skip_output_reshape):
    g = torch.Generator().manual_seed(seed)
    batch, heads, tokens_q, tokens_k, head_dim = 2, 3, 40, 24, 64
    q4, k4, v4 = (_randn(g, batch, heads, n, head_dim) for n in (tokens_q, tokens_k, tokens_k))
    scale = 0.1 + 0.1 * torch.rand(1, generator=g).item()
    if skip_reshape:
        q, k, v = q4, k4, v4
    else:  # ComfyUI's [B, N, heads * D]
        q, k, v = (t.transpose(1, 2).reshape(batch, t.shape[2], heads * head_dim) for t in (q4, k4, v4))
    out = sj_comfyui.attention(q, k, v, heads, skip_reshape=skip_reshape, skip_output_reshape=skip_output_reshape,
                               scale=scale)
    expected, _ = _reference(q4, k4, v4, "HND", scale=scale)
    if not skip_output_reshape:
        expected = expected.transpose(1, 2).reshape(batch, tokens_q, heads * head_dim)
    assert out.shape == expected.shape and out.dtype == q.dtype
    assert _cos(out, expected) > MIN_COSINE
    assert sj_comfyui.counters()["routed"] == 1 and sj_comfyui.counters()["fallback"] == 0


def test_comfyui_enable_gqa(seed):
    g = torch.Generator().manual_seed(seed)
    q = _randn(g, 1, 4, 32, 64)
    k, v = _randn(g, 1, 2, 32, 64), _randn(g, 1, 2, 32, 64)
    out = sj_comfyui.attention(q, k, v, 4, skip_reshape=True, skip_output_reshape=True, enable_gqa=True)
    expected, _ = _reference(q, k.repeat_interleave(2, 1), v.repeat_interleave(2, 1), "HND")
    assert _cos(out, expected) > MIN_COSINE
    # the same in ComfyUI's flat layout: k/v hold fewer heads in their last dimension
    flat = [t.transpose(1, 2).reshape(1, 32, -1) for t in (q, k, v)]
    out_flat = sj_comfyui.attention(*flat, 4, enable_gqa=True)
    assert torch.equal(out_flat, out.transpose(1, 2).reshape(1, 32, 256))


@pytest.mark.parametrize("mask_dims", [2, 3, 4])
@pytest.mark.parametrize("boolean", [False, True])
def test_comfyui_mask_goes_to_the_fallback_unchanged(seed, mask_dims, boolean):
    g = torch.Generator().manual_seed(seed)
    q, k, v = (_randn(g, 2, 16, 2 * 64) for _ in range(3))
    shape = {2: (16, 16), 3: (2, 16, 16), 4: (2, 1, 16, 16)}[mask_dims]
    mask = torch.rand(shape, generator=g) > 0.3 if boolean else _randn(g, *shape)
    if boolean:
        mask[..., 0] = True  # no fully masked row
    seen = []

    def fallback(*args, **kwargs):
        seen.append((args, kwargs))
        return sj_comfyui.sdpa_attention(*args, **kwargs)

    out = sj_comfyui.attention(q, k, v, 2, mask, fallback=fallback, transformer_options={"x": 1})
    (args, kwargs), = seen
    assert args[3] == 2 and kwargs["mask"] is mask and kwargs["transformer_options"] == {"x": 1}
    sdpa_mask = mask if mask_dims == 4 else (mask[:, None] if mask_dims == 3 else mask[None, None])
    q4, k4, v4 = (t.reshape(2, 16, 2, 64).transpose(1, 2) for t in (q, k, v))
    expected = torch.nn.functional.scaled_dot_product_attention(q4, k4, v4, attn_mask=sdpa_mask)
    assert torch.equal(out, expected.transpose(1, 2).reshape(2, 16, 128))
    counters = sj_comfyui.counters()
    assert counters["routed"] == 0 and counters["fallback_reasons"] == {"attn_mask: varies along the queries": 1}


def test_comfyui_fallback_reasons_and_strict(seed):
    g = torch.Generator().manual_seed(seed)
    q, k, v = (_randn(g, 1, 2, 8, 64) for _ in range(3))
    out = sj_comfyui.attention(q, k, v, 2, skip_reshape=True, low_precision_attention=False)
    assert torch.equal(out, sj_comfyui.sdpa_attention(q, k, v, 2, skip_reshape=True))
    q32, k32, v32 = (t.float() for t in (q, k, v))
    sj_comfyui.attention(q32, k32, v32, 2, skip_reshape=True)
    reasons = sj_comfyui.counters()["fallback_reasons"]
    assert reasons.pop("low_precision_attention=False") == 1
    (dtype_reason, count), = reasons.items()
    assert count == 1 and "dtype" in dtype_reason
    sj_comfyui.configure(emulate_on_cpu=False)
    sj_comfyui.attention(q, k, v, 2, skip_reshape=True)
    assert sj_comfyui.counters()["fallback_reasons"]["cpu tensors"] == 1
    with pytest.raises(sagejit.UnsupportedCall, match="cpu tensors"):
        sj_comfyui.attention(q, k, v, 2, skip_reshape=True, strict=True)
    sj_comfyui.configure(emulate_on_cpu=True, strict=True)
    with pytest.raises(sagejit.UnsupportedCall, match="attn_mask"):
        sj_comfyui.attention(q, k, v, 2, torch.zeros(8, 8), skip_reshape=True)


def test_comfyui_override_calls_comfys_function_for_what_sagejit_cannot_take(seed):
    g = torch.Generator().manual_seed(seed)
    q, k, v = (_randn(g, 1, 8, 128) for _ in range(3))
    calls = []

    def comfy_function(*args, **kwargs):
        calls.append(kwargs)
        return sj_comfyui.sdpa_attention(*args, **kwargs)

    override = sj_comfyui.attention_override(strict=False)
    routed = override(comfy_function, q, k, v, 2, attn_precision=torch.float32, transformer_options={},
                      _inside_attn_wrapper=True)
    assert calls == [] and routed.shape == q.shape
    override(comfy_function, q, k, v, 2, torch.zeros(8, 8), transformer_options={}, _inside_attn_wrapper=True)
    assert len(calls) == 1 and calls[0]["_inside_attn_wrapper"] is True
    with pytest.raises(sagejit.UnsupportedCall):
        sj_comfyui.attention_override(strict=True)(comfy_function, q, k, v, 2, torch.zeros(8, 8))


# ------------------------------------------------------------------------------------------- sageattention stand-in
@pytest.mark.parametrize("layout", ["HND", "NHD"])
def test_sageattention_standin(seed, layout):
    g = torch.Generator().manual_seed(seed)
    shape = (1, 2, 48, 64) if layout == "HND" else (1, 48, 2, 64)
    q, k, v = (_randn(g, *shape) for _ in range(3))
    out, lse = sj_sageattention.sageattn(q, k, v, tensor_layout=layout, is_causal=True, return_lse=True,
                                         smooth_k=False, qk_quant_gran="per_warp")
    expected, expected_lse = _reference(q, k, v, layout, causal=True)
    assert _cos(out, expected) > MIN_COSINE
    assert torch.allclose(lse.double(), expected_lse, atol=0.05)
    # a mask (what ComfyUI passes once it sees attn_mask in the signature) runs torch SDPA: exact
    mask = torch.rand(1, 1, 48, 48, generator=g) > 0.5
    mask[..., 0] = True
    masked = sj_sageattention.sageattn(q, k, v, tensor_layout=layout, attn_mask=mask)
    tq, tk, tv = (t if layout == "HND" else t.transpose(1, 2) for t in (q, k, v))
    expected_masked = torch.nn.functional.scaled_dot_product_attention(tq, tk, tv, attn_mask=mask)
    assert torch.equal(masked, expected_masked if layout == "HND" else expected_masked.transpose(1, 2))
    assert sj_sageattention.counters() == {"routed": 1, "fallback": 1, "fallback_reasons": {"attn_mask: varies along the queries": 1}}


def test_sageattention_standin_scale_keyword(seed):
    g = torch.Generator().manual_seed(seed)
    q, k, v = (_randn(g, 1, 2, 32, 64) for _ in range(3))
    by_sdpa_name = sj_sageattention.sageattn(q, k, v, scale=0.05)
    assert torch.equal(by_sdpa_name, sj_sageattention.sageattn(q, k, v, sm_scale=0.05))
    assert not torch.equal(by_sdpa_name, sj_sageattention.sageattn(q, k, v))
    with pytest.raises(ValueError, match="disagree"):
        sj_sageattention.sageattn(q, k, v, sm_scale=0.1, scale=0.05)
    with pytest.raises(TypeError, match="unexpected keyword"):
        sj_sageattention.sageattn(q, k, v, no_such_keyword=1)


def test_sageattention_shim_is_what_comfyui_imports(monkeypatch):
    import importlib
    import inspect
    import os

    shim = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                        "integrations", "sageattention_shim")
    monkeypatch.syspath_prepend(shim)
    monkeypatch.delitem(sys.modules, "sageattention", raising=False)
    module = importlib.import_module("sageattention")
    assert os.path.dirname(os.path.dirname(module.__file__)) == shim
    assert module.sageattn is sj_sageattention.sageattn
    # ComfyUI passes masks to sageattn only when its signature names attn_mask (SAGE_ATTENTION_SUPPORTS_MASK)
    assert "attn_mask" in inspect.signature(module.sageattn).parameters
