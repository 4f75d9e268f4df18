"""Real diffusers transformers (Flux, Wan; real widths, head dim 128, >= 4k tokens, random weights) on one GPU:
the transformer's forward time with diffusers' attention backends "sagejit", "native" (torch SDPA, torch's
choice of kernel), "_native_cudnn" and "_native_flash", and sagejit's final latent after a few Euler steps
against native's (cosine, PSNR).

    python bench/run_diffusers_benchmark.py --json diffusers-bench.json

Timing: warm-up calls first (sagejit compiles or loads its kernels there), then the median of timed forward
calls, each between two CUDA events; every backend runs the same inputs.
"""
import argparse
import json
import os
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # diffusers_models beside this script
if os.environ.get("SAGEJIT_TEST_INSTALLED") != "1":  # this checkout's python/sagejit, as the tests do
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "python"))

import diffusers_models as dm  # noqa: E402

BACKENDS = ("native", "_native_cudnn", "_native_flash", "sagejit")


def forward_ms(model, c, latent, cond, warmup, iterations):
    """Median, min and max ms of `iterations` forwards after `warmup` ones: CUDA events on a GPU, wall-clock
    time on a CPU (the emulator's: not a performance figure)."""
    with torch.no_grad():
        for _ in range(warmup):
            dm.forward(model, c, latent, 0.5, cond)
        if latent.is_cuda:
            torch.cuda.synchronize()
        times = []
        for _ in range(iterations):
            if not latent.is_cuda:
                start = time.perf_counter()
                dm.forward(model, c, latent, 0.5, cond)
                times.append((time.perf_counter() - start) * 1e3)
                continue
            start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            dm.forward(model, c, latent, 0.5, cond)
            stop.record()
            stop.synchronize()
            times.append(start.elapsed_time(stop))
    return {"median_ms": statistics.median(times), "min_ms": min(times), "max_ms": max(times)}


def run_model(model_name, size, steps, seed, warmup, iterations, backends=BACKENDS):
    """{backend: timing or error}, and sagejit's denoised latent vs native's; strict sagejit (no fallback)."""
    import sagejit.integrations.diffusers as sagejit_diffusers

    sagejit_diffusers.configure(strict=True)
    sagejit_diffusers.reset_counters()
    device, dtype = torch.device("cuda"), torch.bfloat16
    c = dm.case(model_name, size)
    model = dm.build(c, device, dtype, seed)
    latent, cond = dm.model_inputs(c, device, dtype, seed)
    result = {"model": model_name, "size": size, "tokens": c.tokens(), "head_dim": c.head_dim(),
              "heads": c.config["num_attention_heads"], "config": {k: v for k, v in c.config.items()},
              "timing": {}}
    for backend in backends:
        try:
            model.set_attention_backend(backend)
            result["timing"][backend] = forward_ms(model, c, latent, cond, warmup, iterations)
        except Exception as error:  # a backend this GPU / torch does not offer
            result["timing"][backend] = {"error": str(error).splitlines()[0][:300]}
    model.set_attention_backend("native")
    native = dm.denoise(model, c, steps, device, dtype, seed)
    model.set_attention_backend("sagejit")
    ours = dm.denoise(model, c, steps, device, dtype, seed)
    result["accuracy"] = {"steps": steps, "cosine": dm.cosine(ours, native), "psnr_db": dm.psnr(ours, native)}
    result["sagejit_counters"] = sagejit_diffusers.counters()
    native_ms = result["timing"].get("native", {}).get("median_ms")
    ours_ms = result["timing"].get("sagejit", {}).get("median_ms")
    if native_ms and ours_ms:
        result["speedup_vs_native"] = native_ms / ours_ms
    cudnn_ms = result["timing"].get("_native_cudnn", {}).get("median_ms")
    if cudnn_ms and ours_ms:
        result["speedup_vs_cudnn"] = cudnn_ms / ours_ms
    del model
    torch.cuda.empty_cache()
    return result


def table(results):
    lines = [f"{'model':6} {'tokens':>7} " + " ".join(f"{b:>15}" for b in BACKENDS)
             + f" {'vs native':>9} {'vs cuDNN':>9} {'cosine':>9} {'PSNR dB':>8}"]
    for r in results:
        cells = []
        for b in BACKENDS:
            t = r["timing"].get(b, {})
            cells.append(f"{t['median_ms']:>12.2f} ms" if "median_ms" in t else f"{'n/a':>15}")
        lines.append(f"{r['model']:6} {r['tokens']:>7} " + " ".join(cells)
                     + f" {r.get('speedup_vs_native', float('nan')):>8.2f}x {r.get('speedup_vs_cudnn', float('nan')):>8.2f}x"
                     + f" {r['accuracy']['cosine']:>9.6f} {r['accuracy']['psnr_db']:>8.1f}")
    return "\n".join(lines)


def model_run_arguments(parser, models):
    """The options every diffusers model run takes (this script's and run_pipeline_coverage.py's)."""
    parser.add_argument("--models", nargs="+", choices=models, default=list(models))
    parser.add_argument("--size", choices=["tiny", "bench"], default="bench")
    parser.add_argument("--seed", type=int, default=1234)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--iterations", type=int, default=10)
    parser.add_argument("--json")
    return parser


def main():
    parser = model_run_arguments(argparse.ArgumentParser(description=__doc__.split("\n")[0]), dm.MODELS)
    parser.add_argument("--steps", type=int, default=4)
    args = parser.parse_args()
    results = []
    for model_name in args.models:
        results.append(run_model(model_name, args.size, args.steps, args.seed, args.warmup, args.iterations))
        print(json.dumps(results[-1]), flush=True)
    print(table(results))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__, "results": results}, f,
                      indent=1)


if __name__ == "__main__":
    main()
