"""Host cost and first-call latency of the Python path, side by side in one process.

    python3 bench/python_op_host.py [--old-python DIR --old-library LIB] [--json OUT]

Per-call host overhead: median wall time of the issuing thread per call (time.perf_counter_ns over
2000 calls, no synchronisation inside the loop; the GPU work of such a small call is shorter than its
host cost, so this is the host cost) at 1x2x128x128 bf16, for
sagejit.sageattn, torch.ops.sagejit.sageattn called directly, torch SDPA, and, when --old-python
gives the package of an older sagejit (with its own --old-library), that version's sageattn.
First-call latency: a new process's first sageattn with an empty cache (compile) and with the cache
the first one filled (load from disk), measured in those processes around the call with a sync.
"""
import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import torch
import torch.nn.functional as F


def per_call_us(fn, calls=2000, rounds=7):
    for _ in range(200):
        fn()
    torch.cuda.synchronize()
    medians = []
    for _ in range(rounds):
        start = time.perf_counter_ns()
        for _ in range(calls):
            fn()
        medians.append((time.perf_counter_ns() - start) / calls / 1000)
        torch.cuda.synchronize()  # outside the timed loop: drain what was queued
    return statistics.median(medians)


def load_old_package(directory, library):
    os.environ["SAGEJIT_LIBRARY"] = library
    spec = importlib.util.spec_from_file_location("sagejit_old", os.path.join(directory, "__init__.py"),
                                                  submodule_search_locations=[directory])
    module = importlib.util.module_from_spec(spec)
    sys.modules["sagejit_old"] = module
    spec.loader.exec_module(module)
    module.library()
    del os.environ["SAGEJIT_LIBRARY"]
    return module


FIRST_CALL = """
import time, torch, sagejit
q, k, v = (torch.randn(1, 24, 4608, 128, device="cuda", dtype=torch.bfloat16) for _ in range(3))
torch.cuda.synchronize()
start = time.perf_counter()
sagejit.sageattn(q, k, v)
torch.cuda.synchronize()
print(f"{(time.perf_counter() - start) * 1000:.1f}")
"""


def first_call_ms(cache_dir):
    env = dict(os.environ, SAGEJIT_CACHE_DIR=cache_dir)
    out = subprocess.run([sys.executable, "-c", FIRST_CALL], capture_output=True, text=True, env=env, check=True)
    return float(out.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--old-python", help="directory of an older sagejit Python package")
    parser.add_argument("--old-library", help="that version's libsagejit.so")
    parser.add_argument("--json", help="write the figures here")
    args = parser.parse_args()

    old = load_old_package(args.old_python, args.old_library) if args.old_python else None
    import sagejit
    from sagejit import _op

    q, k, v = (torch.randn(1, 2, 128, 128, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    op = torch.ops.sagejit.sageattn.default
    rows = {
        "sagejit.sageattn": lambda: sagejit.sageattn(q, k, v),
        "torch.ops.sagejit.sageattn": lambda: op(q, k, v, 0, False, None, True, False),
        "the op's CUDA kernel (no dispatcher)": lambda: _op._gpu_kernel(q, k, v, 0, False, None, True, False),
        "torch SDPA (default backend)": lambda: F.scaled_dot_product_attention(q, k, v),
    }
    if old is not None:
        rows["previous sagejit.sageattn"] = lambda: old.sageattn(q, k, v)
    with torch.no_grad():
        figures = {name: per_call_us(fn) for name, fn in rows.items()}
    print("host time per call, 1x2x128x128 bf16, no sync in the loop (median of 7 x 2000 calls):")
    for name, value in figures.items():
        print(f"  {name:32s} {value:8.1f} us")
    with tempfile.TemporaryDirectory() as cache:
        cold = first_call_ms(os.path.join(cache, "c"))
        warm = first_call_ms(os.path.join(cache, "c"))
    print(f"first call in a new process, 1x24x4608x128: cold cache {cold:.0f} ms, warm disk cache {warm:.0f} ms")
    figures.update({"first_call_cold_ms": cold, "first_call_warm_disk_ms": warm,
                    "device": torch.cuda.get_device_name(), "torch": torch.__version__})
    if args.json:
        with open(args.json, "w") as out:
            json.dump(figures, out, indent=1)


if __name__ == "__main__":
    main()
