"""The Hopper anchor table of issue 23, in one process: sagejit's public Python path (default config),
SageAttention's sm90 kernel (sageattn_qk_int8_pv_fp8_cuda_sm90), SDPA flash and SDPA cuDNN on the same
inputs with the same timer (triton do_bench: L2 flushed before every call, median; inputs rotate over
several sets so that no call reads the previous call's cached inputs). bf16, HND.

    python3 bench/anchor_table.py --sage DIR --out DIR [--shapes NAME ...] [--command TEXT]
    python3 bench/anchor_table.py --profile video-16k-d128 [--sage DIR]   # one warm call each, for ncu

Writes anchor-table.md and anchor-table.json under --out. TOPS count 4*B*H*Nq*Nk*D, halved for causal.
Accuracy: cos and rel-L1 of 256 sampled query rows of heads 0-1 against an fp64 reference.

Power: back-to-back INT8/FP8 attention reaches an H100's 700 W cap within about a second, and the SM
clock then falls from 1.98 to 1.4-1.8 GHz (bench/results/h100-2026-12-06b-clock-check.md). So each
implementation starts from an idle GPU (--cooldown-s between them), and the JSON records the SM clock
and power that nvidia-smi saw while each one was timed (no clock figures without nvidia-smi).
"""
import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import threading
import time

import torch
import torch.nn.functional as F
import triton.testing as tt
from torch.nn.attention import SDPBackend, sdpa_kernel

SHAPES = {  # name: batch, heads, tokens, head_dim, causal
    "flux-4608-d128": (1, 24, 4608, 128, False),
    "video-16k-d128": (1, 28, 16384, 128, False),
    "wan-32k-d128": (1, 40, 32760, 128, False),
    "vae-8k-d64": (1, 16, 8192, 64, False),
    "llm-4k-d128-causal": (4, 32, 4096, 128, True),
    "video-16k-d128-causal": (1, 28, 16384, 128, True),
    "small-1k-d128": (2, 24, 1024, 128, False),
}
IMPLS = ["sdpa_flash", "sdpa_cudnn", "sage_sm90", "sagejit"]


def flops(batch, heads, tokens, head_dim, causal):
    f = 4.0 * batch * heads * tokens * tokens * head_dim
    return f / 2 if causal else f


def make_impls(sage_dir):
    impls = {}

    def sdpa(backend):
        def run(q, k, v, causal):
            with sdpa_kernel([backend]):
                return F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        return run

    impls["sdpa_flash"] = sdpa(SDPBackend.FLASH_ATTENTION)
    impls["sdpa_cudnn"] = sdpa(SDPBackend.CUDNN_ATTENTION)
    if sage_dir:
        sys.path.insert(0, sage_dir)
        import sageattention.core as sage_core  # built in place by build_sageattention.sh
        if not getattr(sage_core, "SM90_ENABLED", False):
            raise SystemExit(f"SageAttention at {sage_dir} has no sm90 extension")
        impls["sage_sm90"] = lambda q, k, v, c: sage_core.sageattn_qk_int8_pv_fp8_cuda_sm90(
            q, k, v, tensor_layout="HND", is_causal=c)
    import sagejit
    impls["sagejit"] = lambda q, k, v, c: sagejit.sageattn(q, k, v, tensor_layout="HND", is_causal=c)
    return impls


def reference_rows(q, k, v, causal, rows):
    """fp64 attention of the sampled query rows of heads 0-1 (batch 0)."""
    qs = q[0, :2, rows].double()
    scores = qs @ k[0, :2].double().transpose(-1, -2) / q.shape[-1] ** 0.5
    if causal:
        keys = torch.arange(k.shape[2], device=q.device)
        scores = scores.masked_fill(keys[None, None, :] > rows[None, :, None], float("-inf"))
    return torch.softmax(scores, dim=-1) @ v[0, :2].double()


def accuracy(out, ref, rows):
    o = out[0, :2, rows].double().flatten()
    r = ref.flatten()
    cos = torch.nn.functional.cosine_similarity(o, r, dim=0).item()
    rel = ((o - r).abs().sum() / r.abs().sum()).item()
    return cos, rel


class ClockSampler:
    """nvidia-smi's SM clock (MHz) and power (W) every 100 ms in a background thread; window(t0, t1)
    summarises the samples taken between two time.time() stamps (None without nvidia-smi). Each sample
    carries nvidia-smi's own timestamp: its output reaches the pipe in buffered bursts."""

    def __init__(self):
        self.samples, self.process = [], None
        try:
            self.process = subprocess.Popen(
                ["nvidia-smi", "--query-gpu=timestamp,clocks.sm,power.draw", "--format=csv,noheader,nounits",
                 "-lms", "100", "-i", str(torch.cuda.current_device())],
                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        except OSError:
            return
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.process.stdout:
            try:
                stamp, clock, power = (x.strip() for x in line.split(","))
                t = datetime.datetime.strptime(stamp, "%Y/%m/%d %H:%M:%S.%f").timestamp()  # local time, as time.time()
                self.samples.append((t, float(clock), float(power)))
            except ValueError:
                continue

    def window(self, t0, t1):
        inside = [s for s in list(self.samples) if t0 <= s[0] <= t1]
        if not inside:
            return None
        return {"sm_clock_mhz_median": statistics.median(s[1] for s in inside),
                "sm_clock_mhz_min": min(s[1] for s in inside), "power_w_max": max(s[2] for s in inside)}

    def stop(self):
        if self.process:
            self.process.terminate()


def input_sets(shape, count, generator):
    batch, heads, tokens, head_dim, _ = shape
    return [tuple(torch.randn(batch, heads, tokens, head_dim, device="cuda", dtype=torch.bfloat16, generator=generator)
                  for _ in range(3)) for _ in range(count)]


def rotating(fn, sets, causal):
    state = {"i": 0}

    def call():
        q, k, v = sets[state["i"] % len(sets)]
        state["i"] += 1
        return fn(q, k, v, causal)
    return call


def measure(args):
    impls = make_impls(args.sage)
    generator = torch.Generator(device="cuda").manual_seed(args.seed)
    rows_out = []
    sampler = ClockSampler()
    for name in args.shapes:
        shape = SHAPES[name]
        causal = shape[4]
        # Enough sets that the rotation spans well past the 50 MB L2 (do_bench also flushes it).
        bytes_per_set = 3 * shape[0] * shape[1] * shape[2] * shape[3] * 2
        sets = input_sets(shape, max(2, min(6, int(2e9 // bytes_per_set))), generator)
        rows = torch.randperm(shape[2], device="cuda", generator=generator)[:256]
        ref = reference_rows(*sets[0], causal, rows)
        entry = {"shape": name, "batch": shape[0], "heads": shape[1], "tokens": shape[2], "head_dim": shape[3],
                 "causal": causal}
        for impl in IMPLS:
            if impl not in impls:
                continue
            fn = impls[impl]
            out = fn(*sets[0], causal)  # warm-up (sagejit: compile or cache load), accuracy on set 0
            torch.cuda.synchronize()
            cos, rel = accuracy(out, ref, rows)
            time.sleep(args.cooldown_s)  # every implementation starts below the power cap
            t0 = time.time()
            ms = tt.do_bench(rotating(fn, sets, causal), warmup=args.warmup_ms, rep=args.rep_ms, return_mode="median")
            entry[impl] = {"ms": ms, "tops": flops(*shape) / (ms * 1e-3) / 1e12, "cos": cos, "rel_l1": rel}
            clocks = sampler.window(t0, time.time())
            if clocks:
                entry[impl].update(clocks)
            print(f"{name:24s} {impl:11s} {ms:9.4f} ms {entry[impl]['tops']:7.1f} TOPS cos {cos:.6f} rel-L1 {rel:.5f}",
                  flush=True)
        rows_out.append(entry)
        del sets, ref
        torch.cuda.empty_cache()
    sampler.stop()
    return rows_out


def table(rows):
    head = "| shape | SDPA flash | SDPA cuDNN | Sage sm90 | sagejit | sagejit / Sage | sagejit / cuDNN | cos sagejit / Sage |"
    lines = [head, "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        label = f"{r['batch']}×{r['heads']}×{r['tokens']}, D{r['head_dim']}{' causal' if r['causal'] else ''}"

        def tops(impl):
            return f"{r[impl]['tops']:.0f}" if impl in r else "-"

        def ratio(a, b):
            return f"{r[a]['tops'] / r[b]['tops']:.2f}" if a in r and b in r else "-"

        cos = f"{r['sagejit']['cos']:.5f} / {r['sage_sm90']['cos']:.5f}" if "sage_sm90" in r else f"{r['sagejit']['cos']:.5f}"
        lines.append(f"| {label} | {tops('sdpa_flash')} | {tops('sdpa_cudnn')} | {tops('sage_sm90')} | {tops('sagejit')} | "
                     f"{ratio('sagejit', 'sage_sm90')} | {ratio('sagejit', 'sdpa_cudnn')} | {cos} |")
    clocks = []
    for r in rows:
        timed = [f"{i} {r[i]['sm_clock_mhz_median']:.0f}" for i in IMPLS if "sm_clock_mhz_median" in r.get(i, {})]
        if timed:
            clocks.append(f"{r['tokens']}{' causal' if r['causal'] else ''}: " + ", ".join(timed))
    if clocks:
        lines += ["", "Median SM clock (MHz) while each was timed: " + "; ".join(clocks) + "."]
    return "\n".join(lines)


def profile(args):
    """One warm call of sagejit and Sage sm90 inside cudaProfilerStart/Stop (ncu --profile-from-start off)."""
    impls = make_impls(args.sage)
    shape = SHAPES[args.profile]
    generator = torch.Generator(device="cuda").manual_seed(args.seed)
    (q, k, v), = input_sets(shape, 1, generator)
    for impl in ("sagejit", "sage_sm90"):
        if impl in impls:
            impls[impl](q, k, v, shape[4])
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStart()
    for impl in ("sagejit", "sage_sm90"):
        if impl in impls:
            impls[impl](q, k, v, shape[4])
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStop()


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sage", help="SageAttention source dir with its built extensions (omit: no Sage column)")
    parser.add_argument("--out", default=os.environ.get("OUT", "."))
    parser.add_argument("--shapes", nargs="+", default=list(SHAPES), choices=list(SHAPES))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--warmup-ms", type=int, default=100)
    parser.add_argument("--rep-ms", type=int, default=500)
    parser.add_argument("--cooldown-s", type=float, default=3.0, help="idle seconds before timing each implementation")
    parser.add_argument("--command", default=" ".join(sys.argv))
    parser.add_argument("--profile", choices=list(SHAPES))
    args = parser.parse_args()
    if args.profile:
        profile(args)
        return
    rows = measure(args)
    here = os.path.dirname(os.path.abspath(__file__))
    # $SAGEJIT_REVISION names the tree when it was copied without its .git (the GPU machine's copy). A
    # tree whose files differ from its HEAD (a copy under an older .git, uncommitted edits) says so.
    revision = os.environ.get("SAGEJIT_REVISION")
    if not revision:
        git = ["git", "-C", here]
        revision = subprocess.run(git + ["rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
        dirty = subprocess.run(git + ["status", "--porcelain", "--untracked-files=no"], capture_output=True, text=True).stdout
        if revision and dirty.strip():
            revision += " with uncommitted changes"
    meta = {"command": args.command, "device": torch.cuda.get_device_name(), "torch": torch.__version__,
            "cuda": torch.version.cuda, "revision": revision or "unknown",
            "timer": f"triton.testing.do_bench median, L2 flushed, rotating inputs, {args.cooldown_s:g} s idle before each",
            "seed": args.seed}
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "anchor-table.json"), "w") as f:
        json.dump({"meta": meta, "rows": rows}, f, indent=1)
    text = (f"TOPS, bf16 HND, {meta['device']}, torch {meta['torch']} (CUDA {meta['cuda']}), sagejit {meta['revision']}; "
            f"{meta['timer']}.\nCommand: `{meta['command']}`\n\n{table(rows)}\n")
    with open(os.path.join(args.out, "anchor-table.md"), "w") as f:
        f.write(text)
    print(text)


if __name__ == "__main__":
    main()
