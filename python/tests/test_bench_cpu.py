"""python -m sagejit.bench without a GPU: its parsing of sagejit-info's tables, its table, its refusal
(exit 3, a message) when torch sees no GPU. The measurements themselves run on a GPU (the H200 report)."""
import subprocess

import pytest

from sagejit import bench

INFO = """sagejit 0.1.0 (Release build, GNU 12.2.0)

== GPU runtimes and devices ==
runtime  state                version     library
-------  -------------------  ----------  -------------------------------------
CUDA     loaded, 1 device(s)  CUDA 13.0   /usr/lib/x86_64-linux-gnu/libcuda.so.1
HIP      not available        -           the HIP runtime library could not be loaded
No GPU found: kernels can still be precompiled (sagejit-precompile).

== Kernel compilers ==
compiler  state          identity     location
--------  -------------  -----------  --------------------------------
nvrtc     available      NVRTC 13.0   /usr/local/cuda/lib64/libnvrtc.so.13
hiprtc    not available  -            the hipRTC library could not be loaded
gfx1201 compiles with clang 22.1.8
"""


def test_parse_tables():
    tables = bench.parse_tables(INFO)
    (runtimes,) = tables["GPU runtimes and devices"]
    assert [r["runtime"] for r in runtimes] == ["CUDA", "HIP"]
    assert runtimes[0]["state"] == "loaded, 1 device(s)" and runtimes[0]["version"] == "CUDA 13.0"
    assert runtimes[1]["library"] == "the HIP runtime library could not be loaded"
    (compilers,) = tables["Kernel compilers"]
    assert [(c["compiler"], c["identity"]) for c in compilers] == [("nvrtc", "NVRTC 13.0"), ("hiprtc", "-")]


def test_parse_tables_of_the_real_program():
    program = bench.find_program("info")
    if program is None:
        pytest.skip("sagejit-info not built")
    tables = bench.parse_tables(subprocess.run([program], capture_output=True, text=True).stdout)
    assert {r["compiler"] for r in tables["Kernel compilers"][0]} == {"nvrtc", "hiprtc", "clang"}
    assert {r["runtime"] for r in tables["GPU runtimes and devices"][0]} == {"CUDA", "HIP"}


def test_table_compares_with_the_best_sdpa_backend():
    ok = dict(status="ok", cosine=0.9993, relative_l2=0.03)
    results = [dict(shape="s", method="sagejit", median_ms=1.0, tflops=500.0, **ok),
               dict(shape="s", method="sdpa-flash", median_ms=1.5, tflops=333.0, **ok),
               dict(shape="s", method="sdpa-cudnn", median_ms=1.2, tflops=416.0, **ok),
               dict(shape="s", method="sdpa-math", status="skipped: the math backend's scores do not fit")]
    lines = bench.table(results).splitlines()
    assert "1.20x" in lines[2] and "1.00x" in lines[4] and "skipped" in lines[5]


def test_no_gpu_is_exit_3(monkeypatch, capsys):
    torch = pytest.importorskip("torch")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert bench.main(["--json", "/nonexistent/never-written.json"]) == 3
    assert "needs a CUDA or ROCm GPU" in capsys.readouterr().err


def test_shapes_count_flops():
    flux = next(s for s in bench.SHAPES if s.name == "flux-4608")
    assert flux.flops() == 4 * 24 * 4608 * 4608 * 128
    causal = next(s for s in bench.SHAPES if s.causal)
    assert causal.flops() == 2 * causal.batch * causal.heads * causal.tokens ** 2 * causal.head_dim


@pytest.mark.parametrize("causal", [False, True])
def test_accuracy_against_fp64_on_sampled_rows(seed, causal):
    torch = pytest.importorskip("torch")
    shape = bench.Shape("t", 1, 6, 300, 64, causal=causal)
    g = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(1, 6, 300, 64, generator=g, dtype=torch.float64) for _ in range(3))
    exact = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
    error = bench._accuracy(torch, shape, q, k, v, exact, seed)
    assert error["cosine"] > 1 - 1e-12 and error["max_abs_error"] < 1e-12
    wrong = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=not causal)
    assert bench._accuracy(torch, shape, q, k, v, wrong, seed)["relative_l2"] > 1e-3
