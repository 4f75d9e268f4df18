"""sagejit.sageattn_varlen on a GPU (docs/NUMERICS.md "Varlen"): random packed sequences (empty ones, GQA,
causal, head dims 64/128/256) against torch SDPA in fp64 per sequence, the LSE in [Hq, total_q]; the same
call traced by torch.compile(fullgraph=True) and captured in a CUDA graph. Skips without a GPU."""
import random

import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA/ROCm device", allow_module_level=True)

from sagejit import sageattn_varlen  # noqa: E402

from test_varlen_cpu import MIN_COS, cosine, packed_case, reference  # noqa: E402


@pytest.mark.parametrize("head_dim", [64, 128, 256])
def test_each_sequence_is_its_own_attention(seed, head_dim):
    rng, generator = random.Random(seed), torch.Generator().manual_seed(seed)
    for causal in (False, True):
        heads_kv = rng.randint(1, 2)
        q, k, v, cu_q, cu_k, lengths_q, lengths_k = packed_case(rng, generator, rng.randint(1, 6), 1500, head_dim,
                                                                heads_kv * rng.randint(1, 3), heads_kv,
                                                                rng.choice([torch.bfloat16, torch.float16]))
        gpu = [t.cuda() for t in (q, k, v, cu_q, cu_k)]
        out, lse = sageattn_varlen(*gpu, max(lengths_q), max(lengths_k), is_causal=causal, return_lse=True)
        out, lse = out.cpu(), lse.cpu()
        for b in range(len(lengths_q)):
            if lengths_q[b] == 0:
                continue
            rows, keys = slice(int(cu_q[b]), int(cu_q[b + 1])), slice(int(cu_k[b]), int(cu_k[b + 1]))
            want, want_lse = reference(q[rows], k[keys], v[keys], causal)
            assert cosine(out[rows], want) >= MIN_COS, (b, lengths_q[b], lengths_k[b])
            assert (lse[:, rows].double() - want_lse).abs().max().item() < 0.05


def test_compiled_and_graph_captured(seed):
    generator = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(700, 4, 128, generator=generator).to(torch.bfloat16).cuda() for _ in range(3))
    cu = torch.tensor([0, 300, 301, 700], dtype=torch.int32, device="cuda")
    eager = sageattn_varlen(q, k, v, cu, cu, 399, 399)
    compiled = torch.compile(lambda q, k, v: sageattn_varlen(q, k, v, cu, cu, 399, 399), fullgraph=True)
    assert cosine(compiled(q, k, v), eager) >= 0.99999
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        sageattn_varlen(q, k, v, cu, cu, 399, 399)  # warm-up on the capturing stream
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, stream=stream):
            captured = sageattn_varlen(q, k, v, cu, cu, 399, 399)
    graph.replay()
    torch.cuda.synchronize()
    assert torch.equal(captured, eager)
