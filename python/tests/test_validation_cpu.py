"""CPU tests: the C ABI through ctypes (no torch needed), and, when torch is importable, sageattn /
supports / patch_sdpa on CPU tensors (rejected or routed to the original SDPA, never crashing)."""
import ctypes
import random

import pytest

import sagejit
from sagejit import _library
from sagejit._library import Options, SagejitError


def _valid_call(lib, dense_tensor):
    batch, heads_kv, group = random.randint(1, 3), random.randint(1, 4), random.randint(1, 3)
    seq_q, seq_kv, head_dim = random.randint(1, 300), random.randint(1, 300), 8 * random.randint(1, 16)
    dtype = random.choice([0, 1])
    # Fake, aligned addresses, never dereferenced.
    q = dense_tensor(1 << 20, (batch, heads_kv * group, seq_q, head_dim), dtype)
    k = dense_tensor(2 << 20, (batch, heads_kv, seq_kv, head_dim), dtype)
    v = dense_tensor(3 << 20, (batch, heads_kv, seq_kv, head_dim), dtype)
    out = dense_tensor(4 << 20, (batch, heads_kv * group, seq_q, head_dim), dtype)
    return q, k, v, out, lib.sagejit_default_options()


def _attention(lib, q, k, v, out, options):
    return lib.sagejit_attention(ctypes.byref(q), ctypes.byref(k), ctypes.byref(v), ctypes.byref(out),
                                 ctypes.byref(options), None)


# Each case breaks one argument of a valid call; _case registers it with the status and the part of
# the error message that the C ABI must return.
CASES = []


def _case(status, part):
    def register(breaks):
        CASES.append(pytest.param(breaks, status, part, id=breaks.__name__))
        return breaks
    return register


@_case(1, "q.data is null")
def _null_q(c):
    c[0].data = None


@_case(2, "[bf16, fp16]")
def _fp32(c):
    for t in c[:4]:
        t.dtype = 2


@_case(1, "v.dtype")
def _dtype_mismatch(c):
    c[2].dtype = 1 - c[0].dtype


@_case(2, "multiples of 8 from 8 to 256")
def _head_dim(c):
    for t in c[:4]:
        t.shape[3] = 100
        _restride(t)


@_case(1, "k.strides[3]")
def _stride(c):
    c[1].strides[3] = 2


@_case(1, "batch of q")
def _batch(c):
    c[1].shape[0] += 1
    _restride(c[1])


@_case(1, "out.shape")
def _out_shape(c):
    c[3].shape[2] += 1
    _restride(c[3])


def _restride(t):
    stride = 1
    for i in reversed(range(4)):
        t.strides[i] = stride
        stride *= t.shape[i]


@_case(1, "Hq % Hk")
def _gqa(c):
    c[0].shape[1] = c[3].shape[1] = 5
    c[1].shape[1] = c[2].shape[1] = 2
    for t in c[:4]:
        _restride(t)


@_case(1, "v.device is 1")
def _device(c):
    c[2].device = 1


@_case(1, ">= 1")
def _zero(c):
    c[0].shape[2] = 0


@_case(1, "options.layout 9")
def _layout(c):
    c[4].layout = 9


@_case(1, "options.sm_scale")
def _scale(c):
    c[4].has_sm_scale = 1
    c[4].sm_scale = -1.0


@pytest.mark.parametrize("breaks,status,part", CASES)
def test_c_abi_validation(breaks, status, part, lib, dense_tensor):
    call = list(_valid_call(lib, dense_tensor))
    breaks(call)
    assert _attention(lib, *call) == status
    message = _library.last_error()
    assert part in message
    supported = ctypes.c_int(-1)
    assert lib.sagejit_supports(*(ctypes.byref(x) for x in call), ctypes.byref(supported)) == 0
    assert supported.value == 0
    assert _library.last_error() == message


def test_version_and_status_names(lib):
    assert sagejit.version().count(".") == 2
    assert lib.sagejit_status_string(2) == b"unsupported"


def _torch_or_skip():
    return pytest.importorskip("torch")


def test_sageattn_rejects_other_devices_and_non_4d_tensors():
    torch = _torch_or_skip()
    q = torch.randn(1, 2, 16, 64, dtype=torch.bfloat16)
    meta = q.to("meta")
    with pytest.raises(sagejit.UnsupportedCall, match="q is on meta"):
        sagejit.sageattn(meta, meta, meta)
    with pytest.raises(SagejitError, match="3 dimensions"):
        sagejit.sageattn(q[0], q[0], q[0])
    with pytest.raises(SagejitError, match="q is a str, not a torch.Tensor"):
        sagejit.sageattn("q", q, q)
    with pytest.raises(sagejit.UnsupportedCall, match="v is on meta"):
        sagejit.sageattn(q, q, meta)
    support = sagejit.supports(meta, meta, meta)
    assert not support and "meta" in support.reason
    assert sagejit.supports(q, q, q), sagejit.supports(q, q, q).reason


def test_patch_sdpa_routes_cpu_calls_to_the_original_with_counts():
    torch = _torch_or_skip()
    import torch.nn.functional as F

    original = F.scaled_dot_product_attention
    sagejit.reset_sdpa_counters()
    q, k, v = (torch.randn(2, 3, 17, 64) for _ in range(3))  # fp32 on the CPU: neither is sagejit's
    expected = original(q, k, v)
    with sagejit.patch_sdpa():
        assert F.scaled_dot_product_attention is not original
        got = F.scaled_dot_product_attention(q, k, v)
        mask = torch.ones(17, 17, dtype=torch.bool)
        F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    assert F.scaled_dot_product_attention is original
    assert torch.equal(got, expected)
    counters = sagejit.sdpa_counters()
    assert counters["routed"] == 0
    assert counters["fallback"] == 2
    assert counters["fallback_reasons"] == {"attn_mask: varies along the queries": 1, "not on a CUDA/ROCm device": 1}
    with sagejit.patch_sdpa(cpu=True):  # CPU routing on: fp32 is the reason now
        F.scaled_dot_product_attention(q, k, v)
    assert sagejit.sdpa_counters()["fallback_reasons"]["dtype"] == 1


def test_patch_sdpa_global_switch():
    _torch_or_skip()
    import torch.nn.functional as F

    original = F.scaled_dot_product_attention
    sagejit.patch_sdpa()
    try:
        assert sagejit.is_sdpa_patched()
        with sagejit.patch_sdpa():  # nested: leaving it keeps the global patch
            pass
        assert sagejit.is_sdpa_patched()
    finally:
        sagejit.unpatch_sdpa()
    assert F.scaled_dot_product_attention is original
