"""The torch op on a CUDA/ROCm GPU: torch.compile(fullgraph=True) with inductor and with
mode="reduce-overhead" (CUDA graphs), graph capture of a warm call and of a process's first call,
four threads on four streams, and sageattn's eager call beside the op (one allocation within the
workspace bounds, the workspace apart past either, the op's results, a dispatch mode still sees the op,
refusals unchanged after a repeated call). Skipped without a GPU."""
import os
import subprocess
import sys
import threading

import pytest

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA/ROCm device")

import sagejit  # noqa: E402
from sagejit import sageattn  # noqa: E402
from sagejit import _op  # noqa: E402
from test_op_cpu import python_cwd  # noqa: E402
from test_op_repeated_cpu import assert_refusals_unchanged_by_a_warm_signature, base_inputs  # noqa: E402


def _inputs(seed, shape=(1, 4, 512, 128), dtype=torch.bfloat16):
    generator = torch.Generator(device="cuda").manual_seed(seed)
    return [torch.randn(shape, generator=generator, device="cuda", dtype=dtype) for _ in range(3)]


def _block(q, k, v):
    out, lse = sageattn(q * 1.0, k, v, is_causal=True, return_lse=True)
    return out + 1, lse


def test_fullgraph_inductor(seed):
    torch._dynamo.reset()
    q, k, v = _inputs(seed)
    with torch.no_grad():
        eager = _block(q, k, v)
        compiled = torch.compile(_block, fullgraph=True)(q, k, v)
    assert torch.equal(compiled[0], eager[0]) and torch.equal(compiled[1], eager[1])


def test_reduce_overhead_cuda_graphs(seed):
    torch._dynamo.reset()
    compiled = torch.compile(_block, fullgraph=True, mode="reduce-overhead")
    with torch.no_grad():
        for step in range(4):  # warm-up runs, then recorded, then replayed
            q, k, v = _inputs(seed + step)
            got = [t.clone() for t in compiled(q, k, v)]
            expected = _block(q, k, v)
            assert torch.equal(got[0], expected[0]) and torch.equal(got[1], expected[1]), step


def test_graph_capture_of_a_warm_call(seed):
    q, k, v = _inputs(seed)
    sageattn(q, k, v)  # warm: kernels loaded
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = sageattn(q, k, v)
    for step in range(3):
        fresh = _inputs(seed + 100 + step)
        for target, source in zip((q, k, v), fresh):
            target.copy_(source)
        graph.replay()
        torch.cuda.synchronize()
        assert torch.equal(out, sageattn(*fresh)), step


def test_graph_capture_of_a_first_call(tmp_path, seed):
    """A new process whose very first sageattn is inside a capture (cold cache: the compile happens
    during capture), then replayed with new inputs."""
    code = f"""
import torch, sagejit
g = torch.Generator(device="cuda").manual_seed({seed})
q, k, v = (torch.randn(1, 2, 384, 64, generator=g, device="cuda", dtype=torch.float16) for _ in range(3))
graph = torch.cuda.CUDAGraph()
with torch.cuda.graph(graph):
    out = sagejit.sageattn(q, k, v, tensor_layout="HND")
for step in range(2):
    for t in (q, k, v):
        t.copy_(torch.randn(t.shape, generator=g, device="cuda", dtype=t.dtype))
    graph.replay()
    torch.cuda.synchronize()
    assert torch.equal(out, sagejit.sageattn(q, k, v)), step
print("first-call capture ok")
"""
    env = dict(os.environ, SAGEJIT_CACHE_DIR=str(tmp_path / "cache"))
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=python_cwd())
    assert result.returncode == 0 and "first-call capture ok" in result.stdout, result.stdout + result.stderr


def test_four_threads_on_four_streams(seed):
    problems = [_inputs(seed + i, shape=(1, 2, 256 * (i + 1), 64 * (1 + i % 2))) for i in range(4)]
    expected = [sageattn(*p) for p in problems]
    torch.cuda.synchronize()
    results, errors = [None] * 4, []

    def work(i):
        try:
            stream = torch.cuda.Stream()
            with torch.cuda.stream(stream):
                for _ in range(20):
                    results[i] = sageattn(*problems[i])
            stream.synchronize()
        except Exception as error:  # reported by the main thread
            errors.append(error)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors
    for got, want in zip(results, expected):
        assert torch.equal(got, want)


def _allocations():
    """Blocks torch's caching allocator has handed out so far on this device."""
    return torch.cuda.memory_stats()["allocation.all.allocated"]


def _workspace_and_out_bytes(q, k, v, causal, return_lse):
    signature = _op._signature(q, k, v, 0, causal, None, True, return_lse, gpu=True)
    return signature.workspace_bytes, q.numel() * q.element_size()


@pytest.mark.parametrize("return_lse", [False, True])
def test_eager_call_is_one_allocation_with_the_ops_results(seed, return_lse):
    # Keys half the queries: a workspace well under twice the output and under 4 MiB on every target
    # (fp8 or fp16 V), so it rides in the output's block (_op.workspace_rides_in_block).
    q = _inputs(seed, shape=(2, 4, 256, 128))[0]
    k, v = _inputs(seed + 1, shape=(2, 4, 128, 128))[:2]
    with torch.no_grad():
        workspace, out_bytes = _workspace_and_out_bytes(q, k, v, True, return_lse)
        assert _op.workspace_rides_in_block(workspace, out_bytes), (workspace, out_bytes)
        expected = torch.ops.sagejit.sageattn(q, k, v, 0, True, None, True, return_lse)
        sageattn(q, k, v, is_causal=True, return_lse=return_lse)  # the signature's first call
        before = _allocations()
        got = sageattn(q, k, v, is_causal=True, return_lse=return_lse)  # a repeated call (attend_repeated)
        allocated = _allocations() - before
    assert allocated == 1  # output, LSE and workspace in one block
    out, lse = got if return_lse else (got, None)
    assert torch.equal(out, expected[0])
    assert out.shape == q.shape and out.dtype == q.dtype and out.is_contiguous()
    assert out.untyped_storage().nbytes() >= out_bytes + workspace
    if return_lse:
        assert lse.shape == (2, 4, 256) and lse.dtype == torch.float32 and lse.is_contiguous()
        assert torch.equal(lse, expected[1])
    # The output and LSE do not overlap each other or the workspace: writing one leaves the other.
    if return_lse:
        saved = lse.clone()
        out.fill_(7)
        assert torch.equal(lse, saved)


@pytest.mark.parametrize("q_shape, kv_shape, over", [
    ((1, 2, 64, 128), (1, 2, 1024, 128), "ratio"),     # short queries, long keys: many times the output, < 4 MiB
    ((1, 8, 2048, 128), (1, 8, 2048, 128), "bytes"),  # self-attention: 1.5-2x the output, over 4 MiB
    ((1, 8, 64, 128), (1, 8, 32768, 128), "both"),
])
def test_eager_call_of_a_workspace_over_a_bound_allocates_it_apart(seed, q_shape, kv_shape, over):
    """An output keeps no workspace alive past either bound: its storage is the output alone."""
    q = _inputs(seed, shape=q_shape)[0]
    k, v = _inputs(seed + 1, shape=kv_shape)[:2]
    with torch.no_grad():
        workspace, out_bytes = _workspace_and_out_bytes(q, k, v, False, False)
        over_ratio = workspace > _op._WORKSPACE_IN_BLOCK_MAX_RATIO * out_bytes
        over_bytes = workspace > _op._WORKSPACE_IN_BLOCK_MAX_BYTES
        premise = {"ratio": (True, False), "bytes": (False, True), "both": (True, True)}[over]
        assert (over_ratio, over_bytes) == premise, (workspace, out_bytes)
        expected = torch.ops.sagejit.sageattn(q, k, v, 0, False, None, True, False)[0]
        sageattn(q, k, v)
        torch.cuda.synchronize()
        before = _allocations()
        out = sageattn(q, k, v)
        allocated = _allocations() - before
    assert allocated == 2
    assert out.untyped_storage().nbytes() == out_bytes
    assert torch.equal(out, expected)


def test_refused_calls_raise_the_same_after_their_signature_ran_on_the_gpu(seed):
    assert_refusals_unchanged_by_a_warm_signature(*base_inputs(seed, "cuda"))


def test_a_dispatch_mode_still_sees_the_op(seed):
    from torch.utils._python_dispatch import TorchDispatchMode

    class Recorder(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.ops = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.ops.append(str(func))
            return func(*args, **(kwargs or {}))

    q, k, v = _inputs(seed, shape=(1, 2, 128, 64))
    with torch.no_grad():
        expected = sageattn(q, k, v)
        with Recorder() as recorder:
            got = sageattn(q, k, v)
    assert "sagejit.sageattn.default" in recorder.ops
    assert torch.equal(got, expected)


def test_cpu_and_gpu_ops_agree(seed):
    """The CPU op emulates the GPU's kernels: on this GPU's arch their outputs agree closely."""
    q, k, v = _inputs(seed, shape=(1, 2, 200, 128))
    gpu = sageattn(q, k, v)
    cpu = sageattn(q.cpu(), k.cpu(), v.cpu())
    cos = torch.nn.functional.cosine_similarity(gpu.double().flatten().cpu(), cpu.double().flatten(), dim=0)
    assert cos.item() > 0.999
    assert sagejit.supports(q, k, v)
