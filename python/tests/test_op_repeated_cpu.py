"""sageattn's repeated call (_op.attend_repeated): a signature this thread has run skips sageattn's Python
checks, which is exact because they read only what the signature's key holds. On the CPU the repeated call
reaches the op (the emulator); on a GPU, the eager launch (test_op_gpu.py runs the same refusals there).
Also the rule for a workspace in the output's allocation (_op.workspace_rides_in_block)."""
import threading

import pytest

torch = pytest.importorskip("torch")

from sagejit import _op, attention, sageattn  # noqa: E402

SHAPE = (1, 2, 64, 64)  # N == D: a transposed k keeps its shape and loses its contiguous last dim


pytestmark = pytest.mark.usefixtures("lib")  # conftest: skipped, saying why, without the library


def base_inputs(seed, device="cpu", shape=SHAPE):
    generator = torch.Generator().manual_seed(seed)
    return [torch.randn(shape, generator=generator).to(torch.bfloat16).to(device) for _ in range(3)]


def in_new_thread(fn):
    """fn() in a thread of its own, whose signature cache starts empty: ('ok', result) or (type, message)."""
    outcome = []

    def run():
        try:
            outcome.append(("ok", fn()))
        except Exception as error:  # noqa: BLE001  compared by the caller
            outcome.append((type(error), str(error)))

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    return outcome[0]


class _LooksLikeHND:
    """Hashes and compares like 'HND' but is no str: tensor_layout refuses it."""

    def __hash__(self):
        return hash("HND")

    def __eq__(self, other):
        return other == "HND"

    def __repr__(self):
        return "LooksLikeHND"


def refused_calls(q, k, v):
    """Calls of SHAPE's signature (or one equal but for the refused part) that sageattn refuses, by name."""
    grad_q = q.detach().clone().requires_grad_(True)
    mask = torch.rand(q.shape[2], k.shape[2]) > 0.5  # differs per query: not a key mask either
    return {
        "a gradient": lambda: sageattn(grad_q, k, v),
        "attn_mask": lambda: sageattn(q, k, v, attn_mask=mask.to(q.device)),
        "dropout": lambda: sageattn(q, k, v, dropout_p=0.1),
        "layout name": lambda: sageattn(q, k, v, tensor_layout="hnd"),
        "layout type": lambda: sageattn(q, k, v, tensor_layout=0),
        "layout lookalike": lambda: sageattn(q, k, v, tensor_layout=_LooksLikeHND()),
        "negative scale": lambda: sageattn(q, k, v, sm_scale=-1.0),
        "bool scale": lambda: sageattn(q, k, v, sm_scale=True),
        "scales disagree": lambda: sageattn(q, k, v, sm_scale=1.0, scale=2.0),
        "keyword value": lambda: sageattn(q, k, v, pv_accum_dtype="int8"),
        "unknown keyword": lambda: sageattn(q, k, v, block_size=64),
        "k dtype": lambda: sageattn(q, k.to(torch.float16), v),
        "v fp32": lambda: sageattn(q, k, v.float()),
        "k on meta": lambda: sageattn(q, k.to("meta"), v),
        "k last dim strided": lambda: sageattn(q, k.transpose(2, 3), v),
        "q 3-D": lambda: sageattn(q[0], k, v),
        "q not a tensor": lambda: sageattn(None, k, v),
        "q a subclass": lambda: sageattn(torch.nn.Parameter(q, requires_grad=True), k, v),
    }


def assert_refusals_unchanged_by_a_warm_signature(q, k, v):
    """Each refused call raises in a thread that has just run the valid signature what it raises in a new
    thread: the repeated call's shortcut weakens no check and changes no error."""
    names = sorted(refused_calls(q, k, v))
    cold = {name: in_new_thread(lambda name=name: refused_calls(q, k, v)[name]()) for name in names}

    def warm_then_refused():
        with torch.no_grad():
            sageattn(q, k, v)
            sageattn(q, k, v)  # a repeated call of the valid signature
        outcomes = {}
        for name in names:
            with torch.enable_grad():
                try:
                    refused_calls(q, k, v)[name]()
                    outcomes[name] = ("ok", None)
                except Exception as error:  # noqa: BLE001
                    outcomes[name] = (type(error), str(error))
        return outcomes

    status, warm = in_new_thread(warm_then_refused)
    assert status == "ok", warm
    for name in names:
        assert cold[name][0] is not None and cold[name][0] != "ok", (name, cold[name])
        assert warm[name] == cold[name], name


def test_refused_calls_raise_the_same_after_their_signature_ran(seed):
    assert_refusals_unchanged_by_a_warm_signature(*base_inputs(seed))


def test_a_repeated_call_skips_the_python_checks_and_computes_the_same(seed, monkeypatch):
    q, k, v = base_inputs(seed)
    q2, k2, v2 = base_inputs(seed + 1)
    checks = []
    original = attention._check_call
    monkeypatch.setattr(attention, "_check_call", lambda *args: (checks.append(1), original(*args))[1])

    def run():
        with torch.no_grad():
            first = sageattn(q, k, v, is_causal=True, return_lse=True)
            repeated = sageattn(q2, k2, v2, is_causal=True, return_lse=True)  # new data, the same signature
            strided = sageattn(q2, k2.transpose(1, 2).contiguous().transpose(1, 2), v2, is_causal=True,
                               return_lse=True)  # a new signature (k's strides)
        return first, repeated, strided, len(checks)

    status, (first, repeated, strided, checked) = in_new_thread(run)
    assert status == "ok"
    assert checked == 2  # the first call and the new signature's; not the repeated one
    fresh = in_new_thread(lambda: sageattn(q2, k2, v2, is_causal=True, return_lse=True))[1]  # a cold thread
    assert torch.equal(repeated[0], fresh[0]) and torch.equal(repeated[1], fresh[1])
    assert torch.equal(strided[0], fresh[0]) and torch.equal(strided[1], fresh[1])
    assert not torch.equal(first[0], repeated[0])


def test_non_bool_flags_take_the_full_path_and_mean_the_same(seed):
    q, k, v = base_inputs(seed)
    with torch.no_grad():
        expected = sageattn(q, k, v, is_causal=True)
        assert torch.equal(sageattn(q, k, v, is_causal=1), expected)
        assert torch.equal(sageattn(q, k, v, is_causal=True, sm_scale=q.shape[-1] ** -0.5), expected)


def test_the_key_holds_every_input_the_checks_read(seed):
    """Each tensor's shape, strides, dtype and device, and every option, change the key (so a call that
    differs in any of them is checked again); the data does not."""
    q, k, v = base_inputs(seed)
    args = dict(layout=0, causal=False, sm_scale=None, smooth_k=True, return_lse=False)
    base = _op._key(q, k, v, **args)
    assert _op._key(*base_inputs(seed + 1), **args) == base
    variants = {
        "q shape": ((q[:, :, :32], k, v), {}),
        "k strides": ((q, k.transpose(2, 3), v), {}),
        "v strides": ((q, k, v.transpose(1, 2).contiguous().transpose(1, 2)), {}),
        "k dtype": ((q, k.half(), v), {}),
        "v dtype": ((q, k, v.half()), {}),
        "q device": ((q.to("meta"), k, v), {}),
        "k device": ((q, k.to("meta"), v), {}),
        "v device": ((q, k, v.to("meta")), {}),
        "v shape": ((q, k, v[:, :1]), {}),
        "layout": ((q, k, v), {"layout": 1}),
        "causal": ((q, k, v), {"causal": True}),
        "scale": ((q, k, v), {"sm_scale": 0.5}),
        "smooth_k": ((q, k, v), {"smooth_k": False}),
        "lse": ((q, k, v), {"return_lse": True}),
        "a key mask": ((q, k, v), {"key_mask": torch.ones(q.shape[0], 1, 1, k.shape[2], dtype=torch.bool)}),
    }
    for name, (tensors, change) in variants.items():
        assert _op._key(*tensors, **{**args, **change}) != base, name
    # The key mask's dtype, shape, strides and device are in the key; its data is not.
    mask = torch.ones(q.shape[0], 1, 1, k.shape[2], dtype=torch.bool)
    masked = _op._key(q, k, v, **args, key_mask=mask)
    assert _op._key(q, k, v, **args, key_mask=torch.zeros_like(mask)) == masked
    for name, other in {"mask dtype": mask.float(), "mask shape": mask[:, :, :, :1],
                        "mask strides": mask.expand(-1, 2, 3, -1), "mask device": mask.to("meta")}.items():
        assert _op._key(q, k, v, **args, key_mask=other) != masked, name


def test_masked_and_unmasked_calls_of_one_shape_never_share_a_signature(seed):
    """A masked call takes sageattn's full path (never attend_repeated), and an unmasked call after it, of
    the same shapes, computes without the mask (a masked signature is never found by an unmasked key)."""
    q, k, v = base_inputs(seed)
    mask = torch.ones(q.shape[0], 1, 1, k.shape[2], dtype=torch.bool)
    mask[..., k.shape[2] // 2:] = False

    def run():
        with torch.no_grad():
            plain = sageattn(q, k, v)
            masked = sageattn(q, k, v, attn_mask=mask)
            masked_again = sageattn(q, k, v, attn_mask=mask)
            plain_again = sageattn(q, k, v)
            assert _op.attend_repeated(q, k, v, 0, False, None, True, False) is not None  # unmasked: warm
        return plain, masked, masked_again, plain_again

    status, (plain, masked, masked_again, plain_again) = in_new_thread(run)
    assert status == "ok"
    assert torch.equal(plain, plain_again) and torch.equal(masked, masked_again)
    assert not torch.equal(plain, masked)
    with torch.no_grad():
        half = sageattn(q, k[:, :, : k.shape[2] // 2], v[:, :, : k.shape[2] // 2])  # the valid keys only
    assert torch.nn.functional.cosine_similarity(masked.flatten().double(), half.flatten().double(), dim=0) > 0.999


MIB = 1 << 20


@pytest.mark.parametrize("workspace, out, rides", [
    (100 << 10, 64 << 10, True),         # 1x2x128x128 bf16 self-attention: 1.6x, tiny
    (2 * MIB, 1 * MIB, True),            # twice the output: the ratio bound, inclusive
    (2 * MIB + 1, 1 * MIB, False),       # just over twice
    (10 * MIB, 64 << 10, False),         # short queries, long keys: under no absolute bound's reach
    (4 * MIB, 3 * MIB, True),            # 4 MiB: the absolute bound, inclusive
    (4 * MIB + 1, 3 * MIB, False),       # over it, though under twice the output
    (72 * MIB, 48 * MIB, False),         # 2x24x4096x128 self-attention: 1.5x, large
])
def test_a_workspace_rides_with_the_output_only_within_both_bounds(workspace, out, rides):
    assert _op.workspace_rides_in_block(workspace, out) is rides
