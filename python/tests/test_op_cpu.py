"""The torch op on the CPU (the library's emulator): numerics against an fp64 reference, the fake
kernel, torch.compile(fullgraph=True) without graph breaks, SageAttention's keywords, the one
exception type for calls sagejit cannot take, no gradients, and patch_sdpa routing under compile."""
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")

import torch.nn.functional as F  # noqa: E402

import sagejit  # noqa: E402
from sagejit import SagejitError, UnsupportedCall, sageattn  # noqa: E402

MIN_COS = 0.998  # fp8 PV on tiny random problems, against an exact reference
TORCH_SDPA = F.scaled_dot_product_attention


def _library_or_skip():
    try:
        sagejit.library()
    except SagejitError as error:
        pytest.skip(f"libsagejit not found: {error}")


@pytest.fixture(autouse=True)
def _needs_library():
    _library_or_skip()


def reference(q, k, v, layout="HND", causal=False, scale=None):
    """fp64 softmax(q k^T * scale) v and its natural LSE, [B, H, N, D] / [B, H, N]."""
    qh, kh, vh = (t.double() if layout == "HND" else t.double().transpose(1, 2) for t in (q, k, v))
    group = qh.shape[1] // kh.shape[1]
    kh, vh = kh.repeat_interleave(group, dim=1), vh.repeat_interleave(group, dim=1)
    scores = qh @ kh.transpose(-1, -2) * (scale if scale is not None else qh.shape[-1] ** -0.5)
    if causal:
        n_q, n_k = scores.shape[-2:]
        scores = scores.masked_fill(torch.ones(n_q, n_k, dtype=torch.bool).triu(1), float("-inf"))
    out = torch.softmax(scores, dim=-1) @ vh
    return (out if layout == "HND" else out.transpose(1, 2)), torch.logsumexp(scores, dim=-1)


def cosine(a, b):
    return F.cosine_similarity(a.double().flatten(), b.double().flatten(), dim=0).item()


def inputs(generator, batch, heads_q, heads_kv, seq_q, seq_kv, head_dim, dtype, layout):
    def one(heads, seq):
        shape = (batch, heads, seq, head_dim) if layout == "HND" else (batch, seq, heads, head_dim)
        return torch.randn(shape, generator=generator).to(dtype)
    return one(heads_q, seq_q), one(heads_kv, seq_kv), one(heads_kv, seq_kv)


def test_op_is_registered_with_a_schema():
    schema = str(torch.ops.sagejit.sageattn.default._schema)
    assert schema.startswith("sagejit::sageattn(Tensor q, Tensor k, Tensor v, int layout, bool causal")


@pytest.mark.parametrize("layout", ["HND", "NHD"])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_cpu_sageattn_matches_fp64(seed, layout, dtype):
    generator = torch.Generator().manual_seed(seed)
    rng = torch.Generator().manual_seed(seed + 1)
    pick = lambda *values: values[int(torch.randint(len(values), (1,), generator=rng))]  # noqa: E731
    heads_kv, group = pick(1, 2), pick(1, 2)
    seq_q, seq_kv, head_dim = pick(1, 33, 130), pick(7, 64, 150), pick(64, 128)
    causal = pick(False, True)
    q, k, v = inputs(generator, 1, heads_kv * group, heads_kv, seq_q, seq_kv, head_dim, dtype, layout)
    out, lse = sageattn(q, k, v, tensor_layout=layout, is_causal=causal, return_lse=True)
    expected, expected_lse = reference(q, k, v, layout, causal)
    assert out.shape == q.shape and out.dtype == dtype and out.is_contiguous()
    assert lse.shape == (1, heads_kv * group, seq_q) and lse.dtype == torch.float32
    rows = torch.isfinite(expected_lse)  # causal rows that see no key (seq_q > seq_kv) have no LSE
    assert cosine(out, expected) >= MIN_COS, (layout, causal, q.shape, k.shape)
    # LSE moves by at most the largest score error; INT8 scores err in proportion to their magnitude
    # (the bound of test_sageattn_gpu.py's test_return_lse).
    qh, kh = (t.double() if layout == "HND" else t.double().transpose(1, 2) for t in (q, k))
    kh = kh.repeat_interleave(group, dim=1)
    score_scale = (qh @ kh.transpose(-1, -2)).abs().amax(dim=-1) * head_dim ** -0.5
    tolerance = 0.02 + 0.03 * score_scale
    assert ((lse.double() - expected_lse).abs() <= tolerance)[rows].all()
    again = sageattn(q, k, v, tensor_layout=layout, is_causal=causal)
    assert torch.equal(again, out), "the CPU op is not deterministic"


def test_scale_and_its_sdpa_name(seed):
    generator = torch.Generator().manual_seed(seed)
    q, k, v = inputs(generator, 1, 2, 2, 40, 40, 64, torch.bfloat16, "HND")
    by_sm_scale = sageattn(q, k, v, sm_scale=0.05)
    assert torch.equal(sageattn(q, k, v, scale=0.05), by_sm_scale)
    assert cosine(by_sm_scale, reference(q, k, v, scale=0.05)[0]) >= MIN_COS
    with pytest.raises(ValueError, match="disagree"):
        sageattn(q, k, v, sm_scale=0.05, scale=0.1)


def test_callers_keywords_are_accepted(seed):
    """What diffusers, ComfyUI's attention_sage and WanVideo pass, with the values that mean 'none'."""
    generator = torch.Generator().manual_seed(seed)
    q, k, v = inputs(generator, 1, 2, 2, 24, 24, 128, torch.float16, "NHD")
    plain = sageattn(q, k, v, tensor_layout="NHD")
    assert torch.equal(sageattn(q, k, v, tensor_layout="NHD", is_causal=False, sm_scale=None, attn_mask=None,
                                dropout_p=0.0), plain)
    assert torch.equal(sageattn(q=q, k=k, v=v, tensor_layout="NHD", is_causal=False, sm_scale=128 ** -0.5,
                                return_lse=False), sageattn(q, k, v, tensor_layout="NHD", sm_scale=128 ** -0.5))
    assert torch.equal(sageattn(q, k, v, tensor_layout="NHD", qk_quant_gran="per_thread", pv_accum_dtype="fp32+fp32",
                                smooth_v=False), plain)


def test_calls_sagejit_cannot_take_raise_one_exception_type():
    q = torch.randn(1, 2, 16, 64, dtype=torch.bfloat16)
    with pytest.raises(UnsupportedCall, match="attn_mask"):
        sageattn(q, q, q, attn_mask=torch.ones(16, 16, dtype=torch.bool))
    with pytest.raises(UnsupportedCall, match="dropout_p=0.1"):
        sageattn(q, q, q, dropout_p=0.1)
    with pytest.raises(UnsupportedCall, match="q.dtype fp32 is not one of"):
        sageattn(q.float(), q.float(), q.float())
    wide = torch.randn(1, 2, 16, 512, dtype=torch.bfloat16)
    with pytest.raises(UnsupportedCall, match="head_dim 512"):
        sageattn(wide, wide, wide)
    assert issubclass(UnsupportedCall, SagejitError)
    with pytest.raises(ValueError, match="qk_quant_gran='per_row' is not one of"):
        sageattn(q, q, q, qk_quant_gran="per_row")
    with pytest.raises(TypeError, match="unexpected keyword arguments: bogus"):
        sageattn(q, q, q, bogus=1)


def test_a_call_that_needs_a_gradient_is_an_error():
    q = torch.randn(1, 2, 16, 64, dtype=torch.bfloat16, requires_grad=True)
    k, v = q.detach(), q.detach()
    with pytest.raises(UnsupportedCall, match="no backward"):
        sageattn(q, k, v)
    with torch.no_grad():
        out = sageattn(q, k, v)
    assert not out.requires_grad
    with torch.inference_mode():
        sageattn(q.detach(), k, v)
    # The operator itself, called directly with grad-requiring inputs: its backward is a clear error.
    out, _ = torch.ops.sagejit.sageattn(q, k, v, 0, False, None, True, False)
    with pytest.raises(RuntimeError, match="has no backward"):
        out.float().sum().backward()


def test_fake_kernel_gives_the_shapes():
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        q = torch.empty(2, 40, 3, 64, dtype=torch.bfloat16)  # NHD
        k = torch.empty(2, 50, 1, 64, dtype=torch.bfloat16)
        out, lse = torch.ops.sagejit.sageattn(q, k, k, 1, True, None, True, True)
        assert out.shape == q.shape and out.dtype == q.dtype
        assert lse.shape == (2, 3, 40) and lse.dtype == torch.float32
        _, no_lse = torch.ops.sagejit.sageattn(q, k, k, 1, False, 0.1, True, False)
        assert no_lse.shape == (0,)


def _attention_block(x, wq, wk, wv):
    b, n, _ = x.shape
    q, k, v = ((x @ w).view(b, n, 2, 64).transpose(1, 2).to(torch.bfloat16) for w in (wq, wk, wv))
    out, lse = sageattn(q, k, v, is_causal=True, return_lse=True)
    return out.float().transpose(1, 2).reshape(b, n, 128) * 2 + lse.mean(), lse


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_fullgraph_compile_traces_the_op(seed, backend):
    torch._dynamo.reset()
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(1, 48, 128, generator=generator)
    weights = [torch.randn(128, 128, generator=generator) / 11 for _ in range(3)]
    compiled = torch.compile(_attention_block, fullgraph=True, backend=backend)
    with torch.no_grad():
        eager = _attention_block(x, *weights)
        traced = compiled(x, *weights)
    assert torch.equal(traced[1], eager[1])
    assert torch.allclose(traced[0], eager[0], atol=1e-5, rtol=1e-5)


def test_patch_sdpa_routes_cpu_calls_and_falls_back_under_compile(seed):
    generator = torch.Generator().manual_seed(seed)
    q, k, v = inputs(generator, 1, 4, 2, 32, 32, 64, torch.bfloat16, "HND")
    mask = torch.ones(32, 32, dtype=torch.bool).tril()

    def model(q, k, v):
        routed = F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
        fallback = F.scaled_dot_product_attention(q, k.repeat_interleave(2, 1), v.repeat_interleave(2, 1),
                                                  attn_mask=mask)
        return routed, fallback

    torch._dynamo.reset()
    sagejit.reset_sdpa_counters()
    with sagejit.patch_sdpa(cpu=True):
        eager = model(q, k, v)
        counters = sagejit.sdpa_counters()
        compiled = torch.compile(model, fullgraph=True, backend="aot_eager")(q, k, v)
    assert counters["routed"] == 1 and counters["fallback_reasons"] == {"attn_mask: varies along the queries": 1}
    assert torch.equal(eager[0], sageattn(q, k, v))
    assert torch.equal(compiled[0], eager[0])
    assert torch.equal(compiled[1], TORCH_SDPA(q, k.repeat_interleave(2, 1), v.repeat_interleave(2, 1),
                                               attn_mask=mask))


def python_cwd():
    """Where a test's child Python starts: the source tree's python/ (it imports that package), or, when
    the installed package is under test (SAGEJIT_TEST_INSTALLED=1), a directory without one."""
    import os
    import tempfile

    if os.environ.get("SAGEJIT_TEST_INSTALLED") == "1":
        return tempfile.gettempdir()
    return os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _python(code, **env):
    import os

    environment = dict(os.environ, **env)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=environment,
                          cwd=python_cwd())


def test_without_torch_the_package_imports_and_sageattn_says_why():
    code = ("import sys, importlib.abc\n"
            "class Block(importlib.abc.MetaPathFinder):\n"
            "    def find_spec(self, name, path, target=None):\n"
            "        if name == 'torch' or name.startswith('torch.'): raise ModuleNotFoundError(name)\n"
            "sys.meta_path.insert(0, Block())\n"
            "import sagejit\n"
            "print(sagejit.version())\n"
            "try:\n"
            "    sagejit.sageattn(None, None, None)\n"
            "except sagejit.SagejitError as error:\n"
            "    print('SagejitError', error.code, error)\n")
    result = _python(code)
    assert result.returncode == 0, result.stderr
    assert "SagejitError runtime_not_found sagejit.sageattn needs torch >= 2.4" in result.stdout, result.stdout


def test_a_library_that_is_not_libsagejit_is_a_named_error():
    result = _python("import sagejit\ntry:\n    sagejit.library()\nexcept sagejit.SagejitError as error:\n"
                     "    print(type(error).__name__, error.code, error)\n", SAGEJIT_LIBRARY="libc.so.6")
    assert result.returncode == 0, result.stderr
    assert "SagejitError runtime_not_found" in result.stdout, result.stdout
    assert "libc.so.6 (not a compatible libsagejit" in result.stdout, result.stdout


def test_python_m_sagejit_runs_the_programs():
    result = _python("import sys, sagejit.__main__ as m; sys.exit(m.main(['info']))")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "installed (not imported here)" in result.stdout
    assert "sagejit" in result.stdout
    bad = _python("import sys, sagejit.__main__ as m; sys.exit(m.main(['frobnicate']))")
    assert bad.returncode == 2 and "unknown command 'frobnicate'" in bad.stderr
