"""The diffusers backend "sagejit" on CPU tensors through sagejit's CPU op (the emulator): registration,
single calls through diffusers' dispatch (layout, LSE, fallbacks and their counters, strict mode), real
Flux and Wan transformers (tiny configs, random weights) denoised against diffusers' native backend, and
context parallelism (ring, Ulysses) on 2 CPU processes over gloo, against the same model on one process."""
import json
import math
import os
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("diffusers")

import sagejit  # noqa: E402
import sagejit.integrations.diffusers as sj_diffusers  # noqa: E402
from diffusers.models.attention_dispatch import (  # noqa: E402
    AttentionBackendName, _AttentionBackendRegistry, attention_backend, dispatch_attention_fn)
from sagejit.integrations._reference import attention_with_lse  # noqa: E402

import diffusers_models as dm  # noqa: E402

BENCH = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "bench")
MIN_COSINE_CALL = 0.995      # one attention call under the numerics contract
# A whole model over 3 denoising steps, the error of every attention call carried through the random-weight
# (unit-gain) layers; measured on the emulator, 8 seeds each: Flux cosine >= 0.99998, PSNR 60.8-63.8 dB; Wan
# cosine >= 0.99995, PSNR 55.7-59.4 dB. The bounds leave a wide margin below that.
MIN_COSINE_MODEL = 0.999
MIN_PSNR_MODEL_DB = 40.0
# Context parallel against one process: the same kernels on split sequences (ring: partial softmax merged by
# LSE in fp32), so agreement is much closer than sagejit vs native.
MIN_COSINE_CP = 0.999


@pytest.fixture(autouse=True)
def _emulated(emulated_integration):
    emulated_integration(sj_diffusers)
    yield
    # set_attention_backend also sets diffusers' process-wide active backend: give it back
    _AttentionBackendRegistry.set_active_backend(AttentionBackendName.NATIVE)


def _cos(a, b):
    a, b = a.double().flatten(), b.double().flatten()
    return float(a @ b / (a.norm() * b.norm()))


def _qkv(seed, batch=2, tokens=40, heads=2, head_dim=64, heads_kv=None, dtype=torch.bfloat16):
    g = torch.Generator().manual_seed(seed)
    heads_kv = heads_kv or heads
    return (torch.randn(batch, tokens, heads, head_dim, generator=g).to(dtype),
            torch.randn(batch, tokens, heads_kv, head_dim, generator=g).to(dtype),
            torch.randn(batch, tokens, heads_kv, head_dim, generator=g).to(dtype))


def test_backend_is_registered_with_context_parallel():
    member = sj_diffusers.register()
    assert sj_diffusers.register() is member  # idempotent
    assert AttentionBackendName("sagejit") is member and member.value == "sagejit"
    assert "sagejit" in {m.value for m in AttentionBackendName.__members__.values()}
    assert _AttentionBackendRegistry._is_context_parallel_available(member)
    with attention_backend("sagejit"):
        assert _AttentionBackendRegistry.get_active_backend()[0] is member
    assert _AttentionBackendRegistry.get_active_backend()[0] is not member


def test_dispatch_output_and_lse(seed):
    q, k, v = _qkv(seed)
    scale = 0.11
    out, lse = dispatch_attention_fn(q, k, v, scale=scale, backend="sagejit", attention_kwargs={"return_lse": True})
    expected, expected_lse = attention_with_lse(q.double(), k.double(), v.double(), tensor_layout="NHD",
                                                scale=scale)
    assert out.shape == q.shape and _cos(out, expected) > MIN_COSINE_CALL
    assert lse.shape == (2, 40, 2)  # diffusers' layout [B, S, H]
    assert torch.allclose(lse.double(), expected_lse.transpose(1, 2), atol=0.05)
    assert sj_diffusers.counters() == {"routed": 1, "fallback": 0, "fallback_reasons": {}}


def test_dispatch_gqa(seed):
    q, k, v = _qkv(seed, heads=4, heads_kv=2)
    out = dispatch_attention_fn(q, k, v, enable_gqa=True, backend="sagejit")
    expected, _ = attention_with_lse(q.double(), k.double().repeat_interleave(2, 2),
                                     v.double().repeat_interleave(2, 2), tensor_layout="NHD")
    assert _cos(out, expected) > MIN_COSINE_CALL
    with pytest.raises(RuntimeError):  # torch SDPA's own refusal, reached through the fallback
        dispatch_attention_fn(q, k, v, backend="sagejit")
    assert sj_diffusers.counters()["fallback_reasons"] == {"heads of q and k differ without enable_gqa": 1}


def _native(q, k, v, **kwargs):
    return dispatch_attention_fn(q, k, v, backend=AttentionBackendName.NATIVE, **kwargs)


def test_fallbacks_equal_native_and_are_counted(seed):
    q, k, v = _qkv(seed)
    g = torch.Generator().manual_seed(seed + 1)
    mask = torch.rand(2, 1, 40, 40, generator=g) > 0.2
    mask[..., 0] = True
    assert torch.equal(dispatch_attention_fn(q, k, v, attn_mask=mask, backend="sagejit"), _native(q, k, v,
                                                                                                  attn_mask=mask))
    q32, k32, v32 = (t.float() for t in (q, k, v))
    assert torch.equal(dispatch_attention_fn(q32, k32, v32, backend="sagejit"), _native(q32, k32, v32))
    sj_diffusers.configure(emulate_on_cpu=False)
    assert torch.equal(dispatch_attention_fn(q, k, v, backend="sagejit"), _native(q, k, v))
    reasons = sj_diffusers.counters()["fallback_reasons"]
    assert reasons.pop("attn_mask: varies along the queries") == 1 and reasons.pop("cpu tensors") == 1
    (dtype_reason, count), = reasons.items()
    assert count == 1 and "dtype" in dtype_reason
    assert sj_diffusers.counters()["routed"] == 0


def test_fallback_with_lse_is_exact_attention(seed):
    q, k, v = _qkv(seed, dtype=torch.float32)
    out, lse = dispatch_attention_fn(q, k, v, backend="sagejit", attention_kwargs={"return_lse": True})
    expected = _native(q, k, v)
    assert torch.allclose(out, expected, atol=1e-5)
    scores = torch.einsum("bqhd,bkhd->bhqk", q.double(), k.double()) / 8.0
    assert torch.allclose(lse.double(), torch.logsumexp(scores, -1).transpose(1, 2), atol=1e-5)


def test_strict_mode_raises(seed):
    q, k, v = _qkv(seed)
    sj_diffusers.configure(strict=True)
    with pytest.raises(sagejit.UnsupportedCall, match="attn_mask"):
        dispatch_attention_fn(q, k, v, attn_mask=torch.ones(2, 1, 40, 40, dtype=torch.bool), backend="sagejit")
    with pytest.raises(sagejit.UnsupportedCall, match="dropout"):
        dispatch_attention_fn(q, k, v, dropout_p=0.1, backend="sagejit")
    sj_diffusers.configure(emulate_on_cpu=False)
    with pytest.raises(sagejit.UnsupportedCall, match="cpu tensors"):
        dispatch_attention_fn(q, k, v, backend="sagejit")
    assert sj_diffusers.counters()["fallback"] == 0


@pytest.mark.parametrize("model", dm.MODELS)
def test_real_transformer_denoises_like_native(seed, model):
    c = dm.case(model, "tiny")
    transformer = dm.build(c, "cpu", torch.bfloat16, seed)
    transformer.set_attention_backend("native")
    native = dm.denoise(transformer, c, 3, "cpu", torch.bfloat16, seed)
    transformer.set_attention_backend("sagejit")
    ours = dm.denoise(transformer, c, 3, "cpu", torch.bfloat16, seed)
    cosine, psnr = dm.cosine(ours, native), dm.psnr(ours, native)
    print(f"{model} tiny, 3 Euler steps, sagejit (emulator) vs native: cosine {cosine:.6f}, PSNR {psnr:.1f} dB")
    assert cosine > MIN_COSINE_MODEL and psnr > MIN_PSNR_MODEL_DB
    counters = sj_diffusers.counters()
    assert counters["fallback"] == 0 and counters["routed"] > 0
    assert not torch.equal(ours, native)  # sagejit's result, not native's


def test_context_parallel_two_cpu_processes(seed, tmp_path, free_port):
    """diffusers' ring and Ulysses over gloo (2 processes), the sagejit backend in strict mode, vs 1 process."""
    report = tmp_path / "cp.json"
    env = dict(os.environ, OMP_NUM_THREADS="1")  # the script finds sagejit as the tests do
    command = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2", "--master-port",
               str(free_port()), os.path.join(BENCH, "run_context_parallel.py"), "--device", "cpu", "--size", "tiny",
               "--seed", str(seed), "--json", str(report)]
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-5000:]
    results = json.loads(report.read_text())
    assert {(r["model"], r["mode"]) for r in results} == {(m, mode) for m in dm.MODELS for mode in ("ring", "ulysses")}
    for r in results:
        print(r)
        assert r["cosine"] > MIN_COSINE_CP and math.isfinite(r["max_abs_diff"]), r
        assert r["sagejit_counters"]["routed"] > 0 and r["sagejit_counters"]["fallback"] == 0, r


def test_backend_traces_with_fullgraph_compile(seed):
    q, k, v = _qkv(seed)
    mask = torch.rand(2, 1, 40, 40, generator=torch.Generator().manual_seed(seed)) > 0.2
    mask[..., 0] = True

    def attention(q, k, v, mask):
        return (dispatch_attention_fn(q, k, v, backend="sagejit"),
                dispatch_attention_fn(q, k, v, attn_mask=mask, backend="sagejit"))

    compiled = torch.compile(attention, fullgraph=True, backend="aot_eager")
    for _ in range(2):
        routed, masked = compiled(q, k, v, mask)
    eager_routed, eager_masked = attention(q, k, v, mask)
    assert torch.equal(routed, eager_routed) and torch.equal(masked, eager_masked)
    assert torch.equal(masked, _native(q, k, v, attn_mask=mask))
    assert sj_diffusers.counters() == {"routed": 3, "fallback": 3, "fallback_reasons": {"attn_mask: varies along the queries": 3}}


def test_compiled_refusal_raises_not_wrong(seed):
    """Under torch.compile a refusal sagejit makes itself cannot fall back: it must raise, never return."""
    q, k, v = _qkv(seed, dtype=torch.float32)
    compiled = torch.compile(lambda q, k, v: dispatch_attention_fn(q, k, v, backend="sagejit"), backend="aot_eager")
    with pytest.raises(sagejit.UnsupportedCall, match="dtype"):
        compiled(q, k, v)
