"""The torch op on a CUDA/ROCm GPU: torch.compile(fullgraph=True) with inductor and with
mode="reduce-overhead" (CUDA graphs), graph capture of a warm call and of a process's first call,
four threads on four streams, and sageattn's eager call beside the op (one allocation, the op's
results, a dispatch mode still sees the op). Skipped without a GPU."""
import os
import subprocess
import sys
import threading

import pytest

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA/ROCm device")

import sagejit  # noqa: E402
from sagejit import sageattn  # noqa: E402
from test_op_cpu import python_cwd  # noqa: E402


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


@pytest.mark.parametrize("return_lse", [False, True])
def test_eager_call_is_one_allocation_with_the_ops_results(seed, return_lse):
    # 300 tokens (padded to 384): a workspace just over twice the output, under 16 MiB.
    q, k, v = _inputs(seed, shape=(2, 4, 300, 128))
    with torch.no_grad():
        expected = torch.ops.sagejit.sageattn(q, k, v, 0, True, None, True, return_lse)
        sageattn(q, k, v, is_causal=True, return_lse=return_lse)  # the signature's first call
        before = _allocations()
        got = sageattn(q, k, v, is_causal=True, return_lse=return_lse)
        allocated = _allocations() - before
    assert allocated == 1  # output, LSE and workspace in one block
    out, lse = got if return_lse else (got, None)
    assert torch.equal(out, expected[0])
    assert out.shape == q.shape and out.dtype == q.dtype and out.is_contiguous()
    if return_lse:
        assert lse.shape == (2, 4, 300) and lse.dtype == torch.float32 and lse.is_contiguous()
        assert torch.equal(lse, expected[1])
    # The output and LSE do not overlap each other or the workspace: writing one leaves the other.
    if return_lse:
        saved = lse.clone()
        out.fill_(7)
        assert torch.equal(lse, saved)


def test_eager_call_of_a_large_workspace_allocates_it_apart(seed):
    # Short queries, long keys: the workspace (> 16 MiB) is many times the output, so it is not kept with it.
    q = _inputs(seed, shape=(1, 8, 64, 128))[0]
    k, v = _inputs(seed + 1, shape=(1, 8, 32768, 128))[:2]
    with torch.no_grad():
        expected = torch.ops.sagejit.sageattn(q, k, v, 0, False, None, True, False)[0]
        sageattn(q, k, v)
        torch.cuda.synchronize()
        before = _allocations()
        out = sageattn(q, k, v)
        allocated = _allocations() - before
    assert allocated == 2
    assert out.untyped_storage().nbytes() < 4 * out.numel() * out.element_size()
    assert torch.equal(out, expected)


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
