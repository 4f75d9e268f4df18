#!/usr/bin/env python3
"""Times PyTorch SDPA (flash, cuDNN; pinned with torch.nn.attention.sdpa_kernel) on the shapes of the
sagejit benchmark, merges them with bench_attention's JSON, prints a TOPS table with ratios to every
anchor, and writes the combined JSON. Medians of device events over rotating input sets; accuracy of
sampled rows of two heads against an fp64 reference, as bench_attention does for sagejit."""
import argparse
import json
import math
import statistics
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

BACKENDS = {"sdpa_flash_bf16": SDPBackend.FLASH_ATTENTION, "sdpa_cudnn_bf16": SDPBackend.CUDNN_ATTENTION}
# SageAttention's kernels on this H200 (TOPS, docs/ANCHORS.md), by anchors-file shape name.
SAGE_ANCHORS = ("sage_sm80_int8_fp16pv", "sage_sm89_int8_fp8pv_f32f16", "sage_sm90_int8_fp8", "sage_triton_int8_fp16")


def tops(shape, ms):
    flops = 4.0 * shape["batch"] * shape["heads"] * shape["seq"] ** 2 * shape["head_dim"]
    return flops * (0.5 if shape["causal"] else 1.0) / (ms * 1e-3) / 1e12


def time_sdpa(shape, backend, iterations, warmup, sample_rows):
    b, h, n, d = shape["batch"], shape["heads"], shape["seq"], shape["head_dim"]
    elements = b * h * n * d
    sets = 2 if elements * 2 * 3 >= 256 << 20 else 4
    gen = torch.Generator(device="cuda").manual_seed(1)
    inputs = [[torch.randn(b, h, n, d, device="cuda", dtype=torch.bfloat16, generator=gen) for _ in range(3)]
              for _ in range(sets)]
    with sdpa_kernel([backend]):
        run = lambda i: F.scaled_dot_product_attention(*inputs[i % sets], is_causal=shape["causal"])
        for i in range(1 + warmup):
            run(i)
        times = []
        for i in range(iterations):
            start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            run(i + 1)
            stop.record()
            stop.synchronize()
            times.append(start.elapsed_time(stop))
        q, k, v = inputs[0]
        out = run(0)
    # Accuracy: the same sampled rows as bench_attention (heads 0 and H-1, row (i*7919+13) % N).
    rows = torch.tensor([(i * 7919 + 13) % n for i in range(sample_rows)], device="cuda")
    a_all, r_all = [], []
    for head in (0, h - 1):
        qs = q[0, head, rows].double()
        scores = qs @ k[0, head].double().T / math.sqrt(d)
        if shape["causal"]:
            mask = torch.arange(n, device="cuda")[None, :] > rows[:, None]
            scores = scores.masked_fill(mask, float("-inf"))
        ref = torch.softmax(scores, dim=-1) @ v[0, head].double()
        a_all.append(out[0, head, rows].double())
        r_all.append(ref)
    a, r = torch.cat(a_all).flatten(), torch.cat(r_all).flatten()
    cos = float((a @ r) / (a.norm() * r.norm()))
    rel_l1 = float((a - r).abs().sum() / r.abs().sum())
    ms = statistics.median(times)
    del inputs
    torch.cuda.empty_cache()
    return {"ms": ms, "min_ms": min(times), "tops": tops(shape, ms), "cos": cos, "rel_l1": rel_l1,
            "accuracy_rows": 2 * sample_rows}


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sagejit-json", required=True, help="stdout of bench_attention")
    parser.add_argument("--anchors", default=None, help="h200-baselines.json (optional)")
    parser.add_argument("--out", required=True)
    parser.add_argument("--iterations", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--sample-rows", type=int, default=16)
    parser.add_argument("--command", default="", help="the command line that produced the run (recorded)")
    args = parser.parse_args()

    doc = json.load(open(args.sagejit_json))
    anchors = {}
    if args.anchors:
        for entry in json.load(open(args.anchors)):
            anchors[(entry["shape"], entry["impl"])] = entry["tflops"]
    shapes = {}
    for r in doc["results"]:
        shapes.setdefault(r["shape"], {k: r[k] for k in ("shape", "batch", "heads", "seq", "head_dim", "causal")})
    for shape in shapes.values():
        for impl, backend in BACKENDS.items():
            record = dict(shape, impl=impl)
            try:
                record.update(time_sdpa(shape, backend, args.iterations, args.warmup, args.sample_rows))
            except Exception as error:  # a backend that does not support the shape: say so, go on
                record["error"] = str(error).splitlines()[0][:200]
            print(json.dumps(record), file=sys.stderr)
            doc["results"].append(record)

    doc["torch"] = torch.__version__
    doc["command"] = args.command
    by_shape = {}
    for r in doc["results"]:
        by_shape.setdefault(r["shape"], {})[r["impl"]] = r
    header = f"{'shape':24} {'impl':20} {'ms':>8} {'TOPS':>7} {'cos':>8} {'relL1':>7} {'/flash':>7} {'/cuDNN':>7}"
    header += "".join(f" {'/' + a.replace('sage_', '').replace('_int8', '')[:12]:>13}" for a in SAGE_ANCHORS)
    lines = [header]
    for name, impls in by_shape.items():
        flash = impls.get("sdpa_flash_bf16", {}).get("tops")
        cudnn = impls.get("sdpa_cudnn_bf16", {}).get("tops")
        for impl, r in impls.items():
            if "tops" not in r:
                lines.append(f"{name:24} {impl:20} error: {r.get('error', '?')[:80]}")
                continue
            ratio = lambda ref: f"{r['tops'] / ref:7.2f}" if ref else f"{'-':>7}"
            line = f"{name:24} {impl:20} {r['ms']:8.3f} {r['tops']:7.1f} {r.get('cos', float('nan')):8.5f} "
            line += f"{r.get('rel_l1', float('nan')):7.4f} {ratio(flash)} {ratio(cudnn)}"
            for a in SAGE_ANCHORS:
                ref = anchors.get((name, a))
                line += f" {r['tops'] / ref:13.2f}" if ref else f" {'-':>13}"
            r["ratios"] = {k: r["tops"] / v for k, v in
                           [("sdpa_flash", flash), ("sdpa_cudnn", cudnn)] + [(a, anchors.get((name, a))) for a in SAGE_ANCHORS]
                           if v}
            lines.append(line)
    table = "\n".join(lines)
    print(table)
    doc["table"] = table
    json.dump(doc, open(args.out, "w"), indent=1)


if __name__ == "__main__":
    main()
