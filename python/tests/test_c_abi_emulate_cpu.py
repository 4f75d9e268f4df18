"""CPU tests of the C ABI through ctypes (no torch, no GPU): sagejit_options.struct_size and
sagejit_emulate_attention on host memory against a float64 attention written here."""
import ctypes
import math
import random
import struct

import sagejit
from sagejit._library import Options


def _bf16_bits(value):
    """Round-to-nearest-even float32 -> bf16 bits."""
    bits = struct.unpack("<I", struct.pack("<f", value))[0]
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) & 0xFFFF


def _bf16_value(bits):
    return struct.unpack("<f", struct.pack("<I", bits << 16))[0]


def _host_tensor(dense_tensor, shape, values):
    """A dense HND bf16 tensor in a ctypes array; returns (Tensor, array)."""
    storage = (ctypes.c_uint16 * len(values))(*[_bf16_bits(v) for v in values])
    return dense_tensor(ctypes.cast(storage, ctypes.c_void_p).value, shape), storage


def test_default_options_carry_their_size_and_a_zero_size_is_named(lib, dense_tensor):
    assert lib.sagejit_default_options().struct_size == ctypes.sizeof(Options)
    shape = (1, 1, 4, 64)
    q, q_data = _host_tensor(dense_tensor, shape, [0.0] * 256)
    options = Options()  # struct_size 0: never initialised from sagejit_default_options()
    status = lib.sagejit_emulate_attention(ctypes.byref(q), ctypes.byref(q), ctypes.byref(q), ctypes.byref(q),
                                           ctypes.byref(options), None)
    assert status == 1
    assert "options.struct_size is 0" in sagejit._library.last_error()


def test_emulate_attention_on_host_memory_matches_float64_attention(lib, dense_tensor):
    rng = random.Random()
    seed = rng.randrange(1 << 30)
    rng.seed(seed)
    heads, seq_q, seq_kv, dim = 2, rng.randint(1, 40), rng.randint(1, 40), 64
    q_values = [rng.gauss(0, 1) for _ in range(heads * seq_q * dim)]
    k_values = [rng.gauss(0, 1) for _ in range(heads * seq_kv * dim)]
    v_values = [rng.gauss(0, 1) for _ in range(heads * seq_kv * dim)]
    q, q_data = _host_tensor(dense_tensor, (1, heads, seq_q, dim), q_values)
    k, k_data = _host_tensor(dense_tensor, (1, heads, seq_kv, dim), k_values)
    v, v_data = _host_tensor(dense_tensor, (1, heads, seq_kv, dim), v_values)
    out, out_data = _host_tensor(dense_tensor, (1, heads, seq_q, dim), [float("nan")] * (heads * seq_q * dim))
    lse = (ctypes.c_float * (heads * seq_q))()
    options = lib.sagejit_default_options()
    options.lse = ctypes.cast(lse, ctypes.c_void_p).value
    status = lib.sagejit_emulate_attention(ctypes.byref(q), ctypes.byref(k), ctypes.byref(v), ctypes.byref(out),
                                           ctypes.byref(options), b"sm_90")
    assert status == 0, sagejit._library.last_error()

    # float64 attention of the bf16-rounded inputs.
    qr = [_bf16_value(b) for b in q_data]
    kr = [_bf16_value(b) for b in k_data]
    vr = [_bf16_value(b) for b in v_data]
    scale = 1.0 / math.sqrt(dim)
    dot = num = den = 0.0
    for h in range(heads):
        for i in range(seq_q):
            qi = qr[(h * seq_q + i) * dim:(h * seq_q + i + 1) * dim]
            scores = [scale * sum(a * b for a, b in zip(qi, kr[(h * seq_kv + j) * dim:(h * seq_kv + j + 1) * dim]))
                      for j in range(seq_kv)]
            top = max(scores)
            weights = [math.exp(s - top) for s in scores]
            total = sum(weights)
            assert abs(lse[h * seq_q + i] - (top + math.log(total))) < 0.05, f"seed {seed}"
            for d in range(dim):
                ref = sum(w * vr[(h * seq_kv + j) * dim + d] for j, w in enumerate(weights)) / total
                got = _bf16_value(out_data[(h * seq_q + i) * dim + d])
                dot += got * ref
                num += got * got
                den += ref * ref
    cosine = dot / math.sqrt(num * den)
    assert cosine > 0.99, f"cosine {cosine} (seed {seed})"


def test_emulate_attention_names_an_unknown_target(lib, dense_tensor):
    shape = (1, 1, 4, 64)
    q, q_data = _host_tensor(dense_tensor, shape, [0.5] * 256)
    out, out_data = _host_tensor(dense_tensor, shape, [0.0] * 256)
    status = lib.sagejit_emulate_attention(ctypes.byref(q), ctypes.byref(q), ctypes.byref(q), ctypes.byref(out), None,
                                           b"gfx9999")
    assert status == 1
    message = sagejit._library.last_error()
    assert 'target "gfx9999"' in message and "gfx1201" in message
