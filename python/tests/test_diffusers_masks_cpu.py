"""Key-padding masks through the diffusers backend "sagejit" and patch_sdpa() on CPU tensors (the
library's emulator), with tiny HunyuanVideo and LTX-Video transformers (random weights): the masked
calls are routed to sagejit, counted, not only outputs that agree with diffusers' native backend.

HunyuanVideo's joint blocks pass a bool [B, 1, 1, N] text-padding mask: routed. Its token refiner
calls torch SDPA itself with a mask materialized per query and head: under patch_sdpa() a counted
fallback.
LTX-Video's cross-attention passes (1 - mask) * -10000 repeated per head in memory by
prepare_attention_mask ([B, H, 1, N], varies along the heads in its strides): routed as a mask per
head (q and k have the same heads); the same additive mask as [B, 1, 1, N] is routed too (test below)."""
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("diffusers")

import sagejit  # noqa: E402
import sagejit.attention  # noqa: E402
import sagejit.integrations.diffusers as sj_diffusers  # noqa: E402
from diffusers.models.attention_dispatch import (  # noqa: E402
    AttentionBackendName, _AttentionBackendRegistry, dispatch_attention_fn)

import diffusers_models as dm  # noqa: E402

MIN_COSINE_MODEL = 0.999


@pytest.fixture(autouse=True)
def _emulated(emulated_integration):
    emulated_integration(sj_diffusers)
    yield
    _AttentionBackendRegistry.set_active_backend(AttentionBackendName.NATIVE)


@pytest.fixture
def masked_calls(monkeypatch):
    """Counts the sageattn calls that carry a mask (what the routers hand to sagejit)."""
    seen = {"masked": 0, "unmasked": 0}
    original = sagejit.attention.sageattn

    def counting(*args, attn_mask=None, **kwargs):
        seen["masked" if attn_mask is not None else "unmasked"] += 1
        return original(*args, attn_mask=attn_mask, **kwargs)

    monkeypatch.setattr(sagejit.attention, "sageattn", counting)
    return seen


def _model(name, seed):
    """A tiny transformer of bench/diffusers_models.py and its inputs as keyword arguments of its forward."""
    c = dm.case(name, "tiny")
    model = dm.build(c, "cpu", torch.bfloat16, seed)
    latent, cond = dm.model_inputs(c, "cpu", torch.bfloat16, seed)
    timestep = torch.full((c.batch,), 500.0)
    return model, dict(hidden_states=latent, timestep=timestep, **cond)


def _hunyuan(seed):
    return _model("hunyuanvideo", seed)


def _ltx(seed):
    return _model("ltx", seed)


def _run(model, inputs, backend):
    model.set_attention_backend(backend)
    with torch.no_grad():
        return model(**inputs, return_dict=False)[0].float()


def test_hunyuan_video_padding_masks_are_routed(seed, masked_calls):
    model, inputs = _hunyuan(seed)
    native = _run(model, inputs, "native")
    sj_diffusers.reset_counters()
    ours = _run(model, inputs, "sagejit")
    counters = sj_diffusers.counters()
    print("HunyuanVideo tiny:", counters, masked_calls, f"cosine {dm.cosine(ours, native):.6f}")
    # The joint (dual-stream) and single-stream blocks: one masked call each, routed; nothing falls back
    # (the token refiner calls torch SDPA itself, not diffusers' dispatch: patch_sdpa's test below).
    assert masked_calls == {"masked": 2, "unmasked": 0}
    assert counters == {"routed": 2, "fallback": 0, "fallback_reasons": {}}, counters
    assert dm.cosine(ours, native) > MIN_COSINE_MODEL
    assert not torch.equal(ours, native)


def test_ltx_video_cross_attention_masks_are_routed_per_head(seed, masked_calls):
    model, inputs = _ltx(seed)
    native = _run(model, inputs, "native")
    sj_diffusers.reset_counters()
    ours = _run(model, inputs, "sagejit")
    counters = sj_diffusers.counters()
    print("LTX-Video tiny:", counters, masked_calls, f"cosine {dm.cosine(ours, native):.6f}")
    # The self-attention (no mask) and the cross-attention (its padding mask repeated per head): both routed.
    assert counters == {"routed": 2, "fallback": 0, "fallback_reasons": {}}, counters
    assert masked_calls == {"masked": 1, "unmasked": 1}
    assert dm.cosine(ours, native) > MIN_COSINE_MODEL
    assert not torch.equal(ours, native)


def test_diffusers_key_masks_of_every_accepted_shape_are_routed(seed, masked_calls):
    g = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(2, 40, 2, 64, generator=g).to(torch.bfloat16) for _ in range(3))
    keep = torch.ones(2, 40, dtype=torch.bool)
    keep[0, 25:] = False
    ltx_bias = ((~keep).float() * -10000.0).to(torch.bfloat16)
    per_head = keep[:, None, None, :].repeat(1, 2, 1, 1)  # materialized per head, as LTX's processor does
    per_head[1, 1, 0, 30:] = False  # and the heads differ
    masks = [keep, keep[:, None, None, :], ltx_bias[:, None, None, :], keep[:, None, None, :].expand(2, 2, 40, 40),
             per_head, ltx_bias[:, None, None, :].repeat(1, 2, 1, 1)]
    native = _AttentionBackendRegistry._backends[AttentionBackendName.NATIVE]
    for mask in masks:
        out = dispatch_attention_fn(q, k, v, attn_mask=mask, backend="sagejit")
        expected = native(query=q.float(), key=k.float(), value=v.float(),
                          attn_mask=mask if mask.dtype == torch.bool else mask.float())
        assert dm.cosine(out, expected) > 0.998
    assert sj_diffusers.counters() == {"routed": 6, "fallback": 0, "fallback_reasons": {}}
    assert masked_calls["masked"] == 6


def test_patch_sdpa_routes_hunyuan_video_padding_masks(seed, masked_calls):
    model, inputs = _hunyuan(seed)
    native = _run(model, inputs, "native")
    sagejit.reset_sdpa_counters()
    with sagejit.patch_sdpa(cpu=True), torch.no_grad():
        ours = model(**inputs, return_dict=False)[0].float()
    counters = sagejit.sdpa_counters()
    print("HunyuanVideo tiny, patch_sdpa:", counters, masked_calls)
    assert masked_calls == {"masked": 2, "unmasked": 0}
    # The token refiner's mask, per query and repeated per head in memory, is the one fallback.
    assert counters == {"routed": 2, "fallback": 1, "fallback_reasons": {"attn_mask: varies along the queries": 1}}
    assert dm.cosine(ours, native) > MIN_COSINE_MODEL


def test_the_coverage_benchmark_accounts_for_every_call(seed):
    """bench/run_pipeline_coverage.py (what the H200 coverage table comes from) on the tiny models: its
    per-forward counts are the ones the tests above assert, for enable() and the varlen backend."""
    import run_pipeline_coverage as coverage

    ltx = coverage.run_model("ltx", "tiny", seed, warmup=0, iterations=1, device="cpu")
    assert ltx["per_forward"] == {"modules": 2, "forwards": 2, "routed": 2, "fallback": 0, "fallback_reasons": {}}
    assert ltx["varlen_backend"]["per_forward"] == {  # a varlen call keeps one set of keys for every head
        "routed": 1, "fallback": 1, "fallback_reasons": {"attn_mask: varies along the heads": 1}}
    hunyuan = coverage.run_model("hunyuanvideo", "tiny", seed, warmup=0, iterations=1, device="cpu")
    assert hunyuan["per_forward"]["routed"] == 2
    assert hunyuan["per_forward"]["fallback_reasons"] == {"attn_mask: varies along the queries": 1}
    assert hunyuan["unseen_modules"] == []
    assert hunyuan["varlen_backend"]["per_forward"] == {"routed": 2, "fallback": 0, "fallback_reasons": {}}
    for result in (ltx, hunyuan):
        assert result["cosine"] > MIN_COSINE_MODEL and result["varlen_backend"]["cosine"] > MIN_COSINE_MODEL
