"""python -m sagejit.bench: sagejit against every torch SDPA backend this GPU offers, on the shapes diffusion
models run, with accuracy against fp64 and a JSON report to paste into an issue.

    python -m sagejit.bench                     # full run (a few minutes), writes sagejit-bench-report.json
    python -m sagejit.bench --quick             # fewer timed calls
    python -m sagejit.bench --json report.json --shapes flux-4608 causal-4k

The report holds: the device, driver, CUDA/ROCm runtime, hipRTC/NVRTC (from sagejit-info), torch, the
selftest verdict (the sagejit-selftest program when found, else a Python check of sageattn against fp64),
the config sagejit chose for each shape (its SAGEJIT_LOG=info lines), and per shape and method the median
time, TFLOP/s and the error against fp64 on sampled query rows.

Timing (the device notes' method): inputs rotate over several sets so that no call reads another's cached
inputs, warm-up calls first (they include sagejit's compile or cache load), then each call timed alone
between two device events; the median is reported with the spread (min, max).
"""
import argparse
import json
import math
import os
import platform
import re
import statistics
import subprocess
import sys
import time
from dataclasses import asdict, dataclass

from ._abi import KERNEL_DTYPES, TORCH_NAMES, DType

REPORT_VERSION = 1


@dataclass(frozen=True)
class Shape:
    name: str
    batch: int
    heads: int
    tokens: int
    head_dim: int
    causal: bool = False
    note: str = ""

    def flops(self):
        """Multiply-adds of QK^T and PV counted as 2 FLOPs each; half of them for causal."""
        full = 4.0 * self.batch * self.heads * self.tokens * self.tokens * self.head_dim
        return full / 2 if self.causal else full

    def text(self):
        return f"{self.batch}x{self.heads}x{self.tokens}x{self.head_dim}" + (" causal" if self.causal else "")


SHAPES = (
    Shape("flux-4608", 1, 24, 4608, 128, note="Flux.1 at 1024x1024: 4096 image + 512 text tokens"),
    Shape("16k", 1, 24, 16384, 128, note="video / 2k image"),
    Shape("32k", 1, 24, 32768, 128, note="Wan / HunyuanVideo 480p video"),
    Shape("8k-d64", 1, 24, 8192, 64, note="SD3 / SDXL-style head dim 64"),
    Shape("causal-4k", 1, 32, 4096, 128, causal=True, note="causal (autoregressive) prefill"),
    Shape("8k-d256", 1, 16, 8192, 256, note="head dim 256"),
    Shape("sd15-4k-d160", 2, 8, 4096, 160, note="SD 1.5's 160-channel heads (run zero-padded at 256)"),
)
_SDPA_BACKENDS = ("FLASH_ATTENTION", "EFFICIENT_ATTENTION", "CUDNN_ATTENTION", "MATH")
_SAMPLED_HEADS = 4
_SAMPLED_ROWS = 64
_INPUT_SETS = 3


# ---------------------------------------------------------------------------------------------- progress
class Progress:
    """One rewritten status line on a terminal (stderr); nothing otherwise."""

    def __init__(self, total):
        self.total, self.done = total, 0
        self.tty = sys.stderr.isatty()

    def step(self, text):
        self.done += 1
        if self.tty:
            sys.stderr.write(f"\r\033[K[{self.done}/{self.total}] {text}")
            sys.stderr.flush()

    def finish(self):
        if self.tty:
            sys.stderr.write("\r\033[K")
            sys.stderr.flush()


# ---------------------------------------------------------------------------------------------- environment
def _run(command, timeout, env=None):
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=env)
        return done.returncode, done.stdout, done.stderr
    except (OSError, subprocess.TimeoutExpired) as error:
        return None, "", str(error)


def find_program(command):
    """The path of sagejit-<command> shipped with this package (see _programs.py), or None."""
    from ._programs import find_program as find

    try:
        return find(command)
    except FileNotFoundError:
        return None


def parse_tables(text):
    """The fixed-width tables of sagejit-info: {section title: [table, ...]}, a table a list of row dicts (columns
    from the dashes line under the header; a row has blanks where each column starts)."""
    tables, section = {}, None
    lines = text.splitlines()
    for index, line in enumerate(lines):
        heading = re.match(r"^== (.+) ==$", line)
        if heading:
            section = heading.group(1)
            continue
        if section is None or index + 1 >= len(lines) or not re.fullmatch(r"-+( +-+)*", lines[index + 1] or "x"):
            continue
        spans = [m.span() for m in re.finditer(r"-+", lines[index + 1])]
        spans[-1] = (spans[-1][0], None)  # the last column runs to the end of the line
        names = [line[a:b].strip() for a, b in spans]
        rows = []
        for row in lines[index + 2:]:
            if not row.strip() or any(0 < a <= len(row) and row[a - 1] != " " for a, _ in spans):
                break
            rows.append({n: row[a:b].strip() for n, (a, b) in zip(names, spans)})
        tables.setdefault(section, []).append(rows)
    return tables


def _program_environment():
    from ._programs import _environment

    return _environment()


def _driver_version(torch):
    if torch.version.hip:
        try:
            with open("/sys/module/amdgpu/version") as f:
                return "amdgpu " + f.read().strip()
        except OSError:
            pass
        code, out, _ = _run(["rocm-smi", "--showdriverversion"], 30)
        match = re.search(r"Driver version:\s*(\S+)", out or "")
        return match.group(1) if code == 0 and match else "unknown"
    code, out, _ = _run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"], 30)
    return out.strip().splitlines()[0] if code == 0 and out.strip() else "unknown"


def environment(torch, device):
    from ._library import library

    properties = torch.cuda.get_device_properties(device)
    info = {
        "device": {"name": properties.name, "arch": getattr(properties, "gcnArchName", None)
                   or f"sm_{properties.major}{properties.minor}",
                   "multiprocessors": properties.multi_processor_count,
                   "memory_gib": round(properties.total_memory / 2**30, 1), "driver": _driver_version(torch)},
        "runtime": {"hip": torch.version.hip, "cuda": torch.version.cuda},
        "torch": torch.__version__, "python": platform.python_version(), "os": platform.platform(),
        "sagejit": {"version": library().sagejit_version().decode(), "library": library()._name},
    }
    program = find_program("info")
    if program:
        code, out, err = _run([program], 120, _program_environment())
        tables = parse_tables(out)
        runtimes = tables.get("GPU runtimes and devices", [])
        info["sagejit_info"] = {"program": program, "exit_code": code, "runtimes": runtimes[0] if runtimes else [],
                                "devices": runtimes[1] if len(runtimes) > 1 else [],
                                "compilers": (tables.get("Kernel compilers") or [[]])[0]}
        if code != 0:
            info["sagejit_info"]["stderr"] = err[-2000:]
    else:
        info["sagejit_info"] = {"program": None, "note": "sagejit-info not found with this package"}
    return info


def selftest(torch, device, full):
    """The selftest verdict: the sagejit-selftest program (--quick: one problem per feature, about a minute;
    the whole matrix when full), else a Python check."""
    program = find_program("selftest")
    if program:
        command = [program, "--no-timing", "--device", str(device.index or 0)] + ([] if full else ["--quick"])
        code, out, err = _run(command, 1800, _program_environment())
        verdict = next((line for line in reversed(out.splitlines()) if line.startswith("verdict:")), None)
        return {"program": program, "command": " ".join(command), "exit_code": code,
                "verdict": verdict or f"no verdict line (exit code {code})",
                "passed": code == 0, "output_tail": (out + err)[-3000:]}
    rows = []
    passed = True
    for shape in (Shape("py-1k", 2, 4, 1024, 128), Shape("py-1k-d64", 2, 4, 1000, 64),
                  Shape("py-causal", 1, 4, 777, 128, causal=True)):
        q, k, v = _inputs(torch, shape, device, torch.bfloat16, seed=7)
        out = _sagejit_call(shape)(q, k, v)
        error = _accuracy(torch, shape, q, k, v, out, seed=7)
        ok = error["cosine"] > 0.999 and math.isfinite(error["max_abs_error"])
        passed &= ok
        rows.append({"shape": shape.text(), "passed": ok, **error})
    return {"program": None, "note": "sagejit-selftest not found: Python check of sageattn against fp64",
            "verdict": "PASS" if passed else "FAIL", "passed": passed, "checks": rows}


def chosen_configs(shapes):
    """The tuning lines sagejit logs (SAGEJIT_LOG=info) for the first call of each shape, from a child process
    (the log level is read once per process)."""
    env = dict(os.environ, SAGEJIT_LOG="info")
    names = [s.name for s in shapes]
    code, out, err = _run([sys.executable, "-m", "sagejit.bench", "--probe-configs", *names], 900)
    configs, current = {}, None
    for line in err.splitlines():
        marker = re.match(r"^### shape (\S+)$", line)
        if marker:
            current = marker.group(1)
            configs[current] = []
        elif current and ("tuning:" in line or "config" in line):
            configs[current].append(re.sub(r"^\[sagejit[^\]]*\]\s*", "", line.strip()))
    if code != 0:
        configs["error"] = f"probe exited with {code}: {err[-1500:]}"
    return configs


# ---------------------------------------------------------------------------------------------- measuring
def _inputs(torch, shape, device, dtype, seed):
    g = torch.Generator(device=device).manual_seed(seed)
    size = (shape.batch, shape.heads, shape.tokens, shape.head_dim)
    return tuple(torch.randn(size, generator=g, device=device, dtype=torch.float32).to(dtype) for _ in range(3))


def _sagejit_call(shape):
    from .attention import sageattn

    return lambda q, k, v: sageattn(q, k, v, tensor_layout="HND", is_causal=shape.causal)


def _sdpa_call(torch, backend_name, shape):
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    backend = getattr(SDPBackend, backend_name)

    def call(q, k, v):
        with sdpa_kernel([backend]):
            return F.scaled_dot_product_attention(q, k, v, is_causal=shape.causal)
    return call


def _accuracy(torch, shape, q, k, v, out, seed):
    """Error of `out` against fp64 attention on sampled (batch, head, query row)s."""
    g = torch.Generator().manual_seed(seed + 1)
    heads = torch.randint(0, shape.heads, (_SAMPLED_HEADS,), generator=g).tolist()
    rows = torch.randint(0, shape.tokens, (_SAMPLED_ROWS,), generator=g).to(q.device)
    scale = 1.0 / math.sqrt(shape.head_dim)
    errors, ref_norm, diff_norm, dot, out_norm = [], 0.0, 0.0, 0.0, 0.0
    max_abs = 0.0
    for h in heads:
        b = h % shape.batch
        qs = q[b, h, rows].double()
        scores = qs @ k[b, h].double().T * scale
        if shape.causal:
            keys = torch.arange(shape.tokens, device=q.device)
            scores = scores.masked_fill(keys[None, :] > rows[:, None], -math.inf)
        ref = torch.softmax(scores, dim=-1) @ v[b, h].double()
        got = out[b, h, rows].double()
        diff = got - ref
        max_abs = max(max_abs, float(diff.abs().max()))
        ref_norm += float((ref * ref).sum())
        out_norm += float((got * got).sum())
        diff_norm += float((diff * diff).sum())
        dot += float((got * ref).sum())
        errors.append(float(diff.abs().sum() / ref.abs().sum()))
    return {"cosine": dot / math.sqrt(max(ref_norm * out_norm, 1e-300)),
            "relative_l2": math.sqrt(diff_norm / max(ref_norm, 1e-300)),
            "relative_l1": statistics.fmean(errors), "max_abs_error": max_abs,
            "sampled": f"{_SAMPLED_HEADS} heads x {_SAMPLED_ROWS} rows"}


def _time(torch, call, input_sets, warmup, repeats):
    for i in range(warmup):
        call(*input_sets[i % len(input_sets)])
    torch.cuda.synchronize()
    times = []
    for i in range(repeats):
        q, k, v = input_sets[i % len(input_sets)]
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        call(q, k, v)
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop))
    return {"median_ms": statistics.median(times), "min_ms": min(times), "max_ms": max(times), "calls": repeats}


def _math_fits(torch, shape, device):
    # The math backend materialises the fp32 scores and probabilities: skip what cannot fit in half the free memory.
    free, _ = torch.cuda.mem_get_info(device)
    return 3 * 4 * shape.batch * shape.heads * shape.tokens * shape.tokens < free / 2


def measure(torch, shape, device, dtype, warmup, repeats, progress):
    input_sets = [_inputs(torch, shape, device, dtype, seed=100 + i) for i in range(_INPUT_SETS)]
    methods = [("sagejit", _sagejit_call(shape))]
    methods += [(f"sdpa-{name.lower().replace('_attention', '')}", _sdpa_call(torch, name, shape))
                for name in _SDPA_BACKENDS]
    results = []
    for method, call in methods:
        progress.step(f"{shape.name} {method}")
        row = {"shape": shape.name, "method": method}
        if method == "sdpa-math" and not _math_fits(torch, shape, device):
            results.append({**row, "status": "skipped: the math backend's scores do not fit in memory"})
            continue
        try:
            out = call(*input_sets[0])
            torch.cuda.synchronize()
        except Exception as error:  # a backend this GPU / torch build / shape does not have
            results.append({**row, "status": f"not available: {str(error).splitlines()[0][:200]}"})
            torch.cuda.empty_cache()
            continue
        accuracy = _accuracy(torch, shape, *input_sets[0], out, seed=100)
        del out
        timing = _time(torch, call, input_sets, warmup, repeats)
        results.append({**row, "status": "ok", **timing, "tflops": shape.flops() / (timing["median_ms"] * 1e9),
                        **accuracy})
        torch.cuda.empty_cache()
    return results


# ---------------------------------------------------------------------------------------------- report
def table(results):
    header = ("shape", "method", "median ms", "TFLOP/s", "vs best SDPA", "cos vs fp64", "rel L2", "status")
    best_sdpa = {}
    for r in results:
        if r["status"] == "ok" and r["method"].startswith("sdpa-"):
            best_sdpa[r["shape"]] = min(best_sdpa.get(r["shape"], math.inf), r["median_ms"])
    rows = []
    for r in results:
        if r["status"] != "ok":
            rows.append((r["shape"], r["method"], "-", "-", "-", "-", "-", r["status"][:60]))
            continue
        best = best_sdpa.get(r["shape"])
        rows.append((r["shape"], r["method"], f"{r['median_ms']:.3f}", f"{r['tflops']:.0f}",
                     f"{best / r['median_ms']:.2f}x" if best else "-", f"{r['cosine']:.6f}",
                     f"{r['relative_l2']:.2e}", "ok"))
    widths = [max(len(str(x)) for x in column) for column in zip(header, *rows)]
    lines = ["  ".join(str(x).ljust(w) for x, w in zip(header, widths)), "  ".join("-" * w for w in widths)]
    lines += ["  ".join(str(x).ljust(w) for x, w in zip(row, widths)) for row in rows]
    return "\n".join(lines)


def probe_configs(names):
    """Child of chosen_configs(): one sagejit call per shape, a marker line on stderr before each."""
    import torch

    device = torch.device("cuda", torch.cuda.current_device())
    by_name = {s.name: s for s in SHAPES}
    for name in names:
        shape = by_name[name]
        sys.stderr.write(f"### shape {name}\n")
        sys.stderr.flush()
        q, k, v = _inputs(torch, shape, device, torch.bfloat16, seed=1)
        _sagejit_call(shape)(q, k, v)
        torch.cuda.synchronize()
        sys.stderr.flush()


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m sagejit.bench", description=__doc__.split("\n")[0])
    parser.add_argument("--json", default="sagejit-bench-report.json", help="report file (default: %(default)s)")
    parser.add_argument("--shapes", nargs="+", choices=[s.name for s in SHAPES], help="default: all")
    parser.add_argument("--quick", action="store_true", help="fewer timed calls")
    parser.add_argument("--full-selftest", action="store_true", help="sagejit-selftest's whole matrix (default --quick)")
    parser.add_argument("--no-selftest", action="store_true", help="skip the selftest")
    parser.add_argument("--dtype", choices=[dtype.name for dtype in KERNEL_DTYPES], default="bf16")
    parser.add_argument("--device", type=int, default=0)
    parser.add_argument("--probe-configs", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.probe_configs:
        probe_configs(args.probe_configs)
        return 0

    import torch

    if not torch.cuda.is_available():
        print("sagejit.bench needs a CUDA or ROCm GPU that torch can see (torch.cuda.is_available() is False)",
              file=sys.stderr)
        return 3
    device = torch.device("cuda", args.device)
    torch.cuda.set_device(device)
    dtype = getattr(torch, TORCH_NAMES[DType[args.dtype]])
    shapes = [s for s in SHAPES if not args.shapes or s.name in args.shapes]
    warmup, repeats = (3, 10) if args.quick else (5, 30)
    started = time.time()

    report = {"report_version": REPORT_VERSION, "command": " ".join(["python -m sagejit.bench", *(argv or sys.argv[1:])]),
              "environment": environment(torch, device)}
    print(f"device: {report['environment']['device']['name']} ({report['environment']['device']['arch']}), "
          f"driver {report['environment']['device']['driver']}", file=sys.stderr)
    if not args.no_selftest:
        print("selftest ...", file=sys.stderr)
        report["selftest"] = selftest(torch, device, args.full_selftest)
        print(f"selftest: {report['selftest']['verdict']}", file=sys.stderr)
    report["chosen_configs"] = chosen_configs(shapes)
    progress = Progress(len(shapes) * (1 + len(_SDPA_BACKENDS)))
    results = []
    for shape in shapes:
        results += measure(torch, shape, device, dtype, warmup, repeats, progress)
    progress.finish()
    report.update(shapes=[{**asdict(s), "text": s.text()} for s in shapes], dtype=args.dtype,
                  timing={"warmup_calls": warmup, "timed_calls": repeats, "input_sets": _INPUT_SETS,
                          "method": "median of per-call device-event times, inputs rotated"},
                  results=results, table=table(results), seconds=round(time.time() - started, 1))
    with open(args.json, "w") as f:
        json.dump(report, f, indent=1)
    print(report["table"])
    print(f"\nreport: {os.path.abspath(args.json)}  (paste it into an issue)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
