"""Host cost per call and first-call latency of the Python path, side by side in one process.

    python3 bench/python_op_host.py [--label NAME] [--shape BxHxNxD ...] [--json OUT]

For each shape (bf16, HND; default 1x2x128x128 and 2x24x1024x128), under torch.no_grad(), rows
sagejit.sageattn, torch.ops.sagejit.sageattn called directly, torch SDPA (its default backend) and,
where it is importable, SageAttention's sageattn:
  host us/call  the issuing thread's wall time per call over rounds of --calls calls with no
                synchronisation inside a round (each round starts on an idle GPU, so the launch queue
                never pushes back), the median over --rounds rounds;
  GPU us/call   device events around --calls back-to-back calls queued behind torch.cuda._sleep (so
                the host's pace does not show), the median over rounds: the GPU time of the same calls.
                Host cost above GPU time: the shape is host-bound in eager mode.
Inputs rotate over four sets (more than the L2 at the larger shape). First call: a new process's
first sagejit.sageattn at the larger shape, timed in that process around the call with a sync,
library load included (and without it): from the disk cache --first-call-cache names (one this run or
an earlier one filled: memory empty, disk warm), else with an empty cache (compile) and then from the
disk cache that one filled. To compare two trees, run this once per tree in one session
(PYTHONPATH and SAGEJIT_LIBRARY naming each), as bench/h200_host_cost.sh does.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import torch
import torch.nn.functional as F

SLEEP_CYCLES = 50_000_000  # ~25 ms of torch.cuda._sleep on an H200: longer than queueing --calls calls


def host_us(fn, rounds, calls, warmup=50):
    for i in range(warmup):
        fn(i)
    torch.cuda.synchronize()
    per_call = []
    for _ in range(rounds):
        start = time.perf_counter_ns()
        for i in range(calls):
            fn(i)
        per_call.append((time.perf_counter_ns() - start) / calls / 1000)
        torch.cuda.synchronize()  # outside the timed loop: the next round starts on an idle GPU
    return statistics.median(per_call)


def gpu_us(fn, rounds, calls):
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    per_call = []
    for _ in range(rounds):
        torch.cuda._sleep(SLEEP_CYCLES)  # holds the GPU while the host queues the calls
        start.record()
        for i in range(calls):
            fn(i)
        stop.record()
        stop.synchronize()
        per_call.append(start.elapsed_time(stop) * 1000 / calls)
    return statistics.median(per_call)


FIRST_CALL = """
import json, sys, time, torch, sagejit
shape = tuple(int(x) for x in sys.argv[1].split("x"))
q, k, v = (torch.randn(shape, device="cuda", dtype=torch.bfloat16) for _ in range(3))
torch.cuda.synchronize()
start = time.perf_counter()
sagejit.library()
loaded = time.perf_counter()
sagejit.sageattn(q, k, v)
torch.cuda.synchronize()
done = time.perf_counter()
print(json.dumps({"with_library_load_ms": (done - start) * 1000, "call_ms": (done - loaded) * 1000}))
"""


def first_call(cache_dir, shape):
    env = dict(os.environ, SAGEJIT_CACHE_DIR=cache_dir)
    out = subprocess.run([sys.executable, "-c", FIRST_CALL, shape], capture_output=True, text=True, env=env)
    if out.returncode != 0:
        raise RuntimeError(f"first-call process failed: {out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def rows_for(shape, sageattention):
    import sagejit

    sets = [[torch.randn(shape, device="cuda", dtype=torch.bfloat16) for _ in range(3)] for _ in range(4)]
    op = torch.ops.sagejit.sageattn.default
    rows = {
        "sagejit.sageattn": lambda i: sagejit.sageattn(*sets[i % 4]),
        "torch.ops.sagejit.sageattn": lambda i: op(*sets[i % 4], 0, False, None, True, False),
        "torch SDPA (default backend)": lambda i: F.scaled_dot_product_attention(*sets[i % 4]),
    }
    if sageattention is not None:
        rows["SageAttention sageattn"] = lambda i: sageattention.sageattn(*sets[i % 4], tensor_layout="HND")
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--label", default="", help="a name for this tree in the output (before, after)")
    parser.add_argument("--shape", action="append", help="BxHxNxD, bf16 HND (repeatable)")
    parser.add_argument("--rounds", type=int, default=41)
    parser.add_argument("--calls", type=int, default=50)
    parser.add_argument("--no-first-call", action="store_true", help="skip the first-call processes")
    parser.add_argument("--first-call-cache", help="a code cache already holding the kernels (SAGEJIT_CACHE_DIR)")
    parser.add_argument("--json", help="write the figures here")
    args = parser.parse_args()
    shapes = args.shape or ["1x2x128x128", "2x24x1024x128"]

    import sagejit

    try:
        import sageattention
    except ImportError:
        sageattention = None
    report = {"label": args.label, "device": torch.cuda.get_device_name(), "torch": torch.__version__,
              "sagejit": sagejit.version(), "sagejit_file": sagejit.__file__, "rounds": args.rounds,
              "calls": args.calls, "shapes": {}}
    with torch.no_grad():
        for text in shapes:
            shape = tuple(int(x) for x in text.split("x"))
            figures = {}
            for name, fn in rows_for(shape, sageattention).items():
                figures[name] = {"host_us": host_us(fn, args.rounds, args.calls),
                                 "gpu_us": gpu_us(fn, max(5, args.rounds // 4), args.calls)}
            report["shapes"][text] = figures
            print(f"{args.label} {text} bf16 (median of {args.rounds} rounds x {args.calls} calls):")
            for name, f in figures.items():
                print(f"  {name:32s} host {f['host_us']:8.1f} us/call   GPU {f['gpu_us']:8.1f} us/call")
    if not args.no_first_call:
        shape = shapes[-1]
        if args.first_call_cache:
            cold = None
            warm = [first_call(args.first_call_cache, shape) for _ in range(3)]
        else:
            with tempfile.TemporaryDirectory() as cache:
                cold = first_call(os.path.join(cache, "c"), shape)
                warm = [first_call(os.path.join(cache, "c"), shape) for _ in range(3)]
        best = min(warm, key=lambda w: w["with_library_load_ms"])
        report["first_call"] = {"shape": shape, "cold_cache": cold, "warm_disk_cache": warm, "warm_best": best}
        print(f"{args.label} first call in a new process, {shape}: "
              + (f"cold cache {cold['with_library_load_ms']:.0f} ms; " if cold else "")
              + "from the disk cache " + ", ".join(f"{w['with_library_load_ms']:.1f}" for w in warm)
              + f" ms over 3 processes ({best['call_ms']:.1f} ms after the library load)")
    if args.json:
        with open(args.json, "w") as out:
            json.dump(report, out, indent=1)


if __name__ == "__main__":
    main()
