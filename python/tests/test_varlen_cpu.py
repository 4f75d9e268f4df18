"""Packed varlen attention through the CPU emulator (docs/NUMERICS.md "Varlen"): sagejit.sageattn_varlen on
random packed sequences (empty ones, GQA, causal, zero-padded and 256 head dims) against torch SDPA in fp64
per sequence, the LSE in [Hq, total_q]; torch.compile(fullgraph=True) traces the op; misuse raises naming
the argument."""
import math
import random

import pytest

torch = pytest.importorskip("torch")

import torch.nn.functional as F  # noqa: E402

import sagejit  # noqa: E402
from sagejit import SagejitError, UnsupportedCall, sageattn_varlen  # noqa: E402

MIN_COS = 0.998

pytestmark = pytest.mark.usefixtures("lib")  # conftest: skipped, saying why, without the library


def cosine(a, b):
    return F.cosine_similarity(a.double().flatten(), b.double().flatten(), dim=0).item()


def packed_case(rng, generator, sequences, max_len, head_dim, heads_q, heads_kv, dtype):
    lengths_q = [rng.randint(1, max_len) for _ in range(sequences)]
    lengths_k = [rng.randint(1, max_len) for _ in range(sequences)]
    if sequences > 1:
        lengths_q[rng.randrange(sequences)] = 0  # an empty sequence
    cu_q = torch.tensor([0] + list(torch.tensor(lengths_q).cumsum(0)), dtype=torch.int32)
    cu_k = torch.tensor([0] + list(torch.tensor(lengths_k).cumsum(0)), dtype=torch.int32)
    q = torch.randn(int(cu_q[-1]), heads_q, head_dim, generator=generator).to(dtype)
    k = (torch.randn(int(cu_k[-1]), heads_kv, head_dim, generator=generator) + 3 * torch.randn(head_dim, generator=generator)).to(dtype)
    v = torch.randn(int(cu_k[-1]), heads_kv, head_dim, generator=generator).to(dtype)
    return q, k, v, cu_q, cu_k, lengths_q, lengths_k


def reference(q, k, v, causal):
    """fp64 attention of one sequence, [N, H, D] in and out; GQA by repeating k and v; with its LSE [H, N]."""
    qh, kh, vh = (t.double().transpose(0, 1) for t in (q, k, v))
    group = qh.shape[0] // kh.shape[0]
    kh, vh = kh.repeat_interleave(group, dim=0), vh.repeat_interleave(group, dim=0)
    scores = qh @ kh.transpose(1, 2) / math.sqrt(q.shape[-1])
    if causal:
        scores = scores.masked_fill(~torch.ones(scores.shape[1:], dtype=torch.bool).tril(), float("-inf"))
    return (torch.softmax(scores, -1) @ vh).transpose(0, 1), torch.logsumexp(scores, -1)


@pytest.mark.parametrize("head_dim", [40, 64, 256])
def test_each_sequence_is_its_own_attention(seed, head_dim):
    rng, generator = random.Random(seed), torch.Generator().manual_seed(seed)
    for trial in range(2):
        heads_kv = rng.randint(1, 2)
        heads_q = heads_kv * rng.randint(1, 2)
        dtype = rng.choice([torch.bfloat16, torch.float16])
        causal = trial == 1
        q, k, v, cu_q, cu_k, lengths_q, lengths_k = packed_case(rng, generator, rng.randint(1, 4), 160, head_dim,
                                                                heads_q, heads_kv, dtype)
        out, lse = sageattn_varlen(q, k, v, cu_q, cu_k, max(lengths_q), max(lengths_k), is_causal=causal,
                                   return_lse=True)
        assert out.shape == q.shape and out.dtype == dtype
        assert lse.shape == (heads_q, q.shape[0]) and lse.dtype == torch.float32
        for b in range(len(lengths_q)):
            rows = slice(int(cu_q[b]), int(cu_q[b + 1]))
            keys = slice(int(cu_k[b]), int(cu_k[b + 1]))
            if lengths_q[b] == 0:
                continue
            want, want_lse = reference(q[rows], k[keys], v[keys], causal)
            assert cosine(out[rows], want) >= MIN_COS, (b, lengths_q[b], lengths_k[b])
            assert (lse[:, rows].double() - want_lse).abs().max().item() < 0.05


def test_matches_the_dense_call_of_one_sequence(seed):
    """One sequence: the varlen call is the dense call of the same tensors, within the masked kernels' noise."""
    generator = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(1, 200, 2, 64, generator=generator).to(torch.bfloat16) for _ in range(3))
    dense = sagejit.sageattn(q, k, v, tensor_layout="NHD")
    cu = torch.tensor([0, 200], dtype=torch.int32)
    varlen = sageattn_varlen(q[0], k[0], v[0], cu, cu, 200, 200)
    assert cosine(varlen, dense[0]) >= 0.9999


def test_traces_under_torch_compile_fullgraph(seed):
    generator = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(90, 2, 64, generator=generator).to(torch.float16) for _ in range(3))
    cu = torch.tensor([0, 30, 90], dtype=torch.int32)
    compiled = torch.compile(lambda q, k, v: sageattn_varlen(q, k, v, cu, cu, 60, 60), fullgraph=True, backend="eager")
    assert torch.equal(compiled(q, k, v), sageattn_varlen(q, k, v, cu, cu, 60, 60))


def test_misuse_names_the_argument():
    q = torch.randn(10, 2, 64).to(torch.bfloat16)
    cu = torch.tensor([0, 4, 10], dtype=torch.int32)
    with pytest.raises(SagejitError, match="packed 3-D"):
        sageattn_varlen(q[None], q[None], q[None], cu, cu, 6, 6)
    with pytest.raises(SagejitError, match="cu_seqlens_k is torch.int64"):
        sageattn_varlen(q, q, q, cu, cu.long(), 6, 6)
    with pytest.raises(SagejitError, match="max_seqlen_q"):
        sageattn_varlen(q, q, q, cu, cu, torch.tensor(6), 6)
    with pytest.raises(SagejitError, match="max_seqlen_k 11 is not in"):
        sageattn_varlen(q, q, q, cu, cu, 6, 11)
    with pytest.raises(SagejitError, match="both are batch"):
        sageattn_varlen(q, q, q, cu, cu[:2], 6, 6)
    with pytest.raises(UnsupportedCall, match="gradient"):
        sageattn_varlen(q.float().requires_grad_(True).to(torch.bfloat16), q, q, cu, cu, 6, 6)
