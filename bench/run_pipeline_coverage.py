"""Does every attention call of a diffusers transformer reach sagejit? Real transformer classes (HunyuanVideo,
LTX-Video, Lumina 2, CogVideoX, SD3; real widths, >= 4k tokens, random weights) on one GPU, each once with
diffusers' native attention and once under `sagejit.integrations.diffusers.enable(model)`: per forward, the
attention calls that reached sagejit and those that fell back (per reason, per module), the output against
native's (cosine, PSNR) and the forward times.

    python bench/run_pipeline_coverage.py --json pipeline-coverage.json [--models ltx sd3 ...]
    python bench/run_pipeline_coverage.py --device cpu --size tiny   # the same accounting on the emulator

Timing as bench/run_diffusers_benchmark.py: warm-up forwards first (sagejit compiles or loads its kernels
there), then the median of timed forwards between two CUDA events (on a CPU: wall-clock time, of the
emulator: not a performance figure); both runs take the same inputs.
"""
import argparse
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # diffusers_models beside this script
if os.environ.get("SAGEJIT_TEST_INSTALLED") != "1":  # this checkout's python/sagejit, as the tests do
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "python"))

import diffusers_models as dm  # noqa: E402
from run_diffusers_benchmark import forward_ms, model_run_arguments  # noqa: E402

COVERAGE_MODELS = dm.MASKED_MODELS + dm.SDPA_MODELS


def _one_forward(model, c, latent, cond):
    with torch.no_grad():
        return dm.forward(model, c, latent, 0.5, cond).float()


def run_model(model_name, size, seed, warmup, iterations, device="cuda"):
    import sagejit.integrations.diffusers as sagejit_diffusers

    sagejit_diffusers.configure(strict=False, emulate_on_cpu=device == "cpu")
    device, dtype = torch.device(device), torch.bfloat16
    c = dm.case(model_name, size)
    model = dm.build(c, device, dtype, seed)
    latent, cond = dm.model_inputs(c, device, dtype, seed)
    result = {"model": model_name, "size": size, "tokens": c.tokens(), "head_dim": c.head_dim(),
              "batch": c.batch, "padded_text_tokens": c.padded_text_tokens,
              "config": {k: v for k, v in c.config.items()}}
    native = _one_forward(model, c, latent, cond)
    result["native"] = forward_ms(model, c, latent, cond, warmup, iterations)
    with sagejit_diffusers.enable(model) as report:
        _one_forward(model, c, latent, cond)  # compiles or loads the kernels
        report.reset()
        ours = _one_forward(model, c, latent, cond)
        result["per_forward"] = report.totals()
        result["modules"] = {name: entry for name, entry in report.modules().items()
                             if entry["routed"] or entry["fallback"]}
        result["unseen_modules"] = report.unseen()
        result["sagejit"] = forward_ms(model, c, latent, cond, warmup, iterations)
    result["cosine"] = dm.cosine(ours, native)
    result["psnr_db"] = dm.psnr(ours, native)
    result["speedup_vs_native"] = result["native"]["median_ms"] / result["sagejit"]["median_ms"]
    if model_name in dm.MASKED_MODELS:  # they dispatch: diffusers' varlen-style backend reaches them too
        model.set_attention_backend(sagejit_diffusers.VARLEN_BACKEND_NAME)
        _one_forward(model, c, latent, cond)
        sagejit_diffusers.reset_counters()
        varlen = _one_forward(model, c, latent, cond)
        result["varlen_backend"] = {"per_forward": sagejit_diffusers.counters(),
                                    "cosine": dm.cosine(varlen, native), "psnr_db": dm.psnr(varlen, native),
                                    "timing": forward_ms(model, c, latent, cond, warmup, iterations)}
        model.set_attention_backend("native")
    del model
    if device.type == "cuda":
        torch.cuda.empty_cache()
    return result


def table(results):
    lines = ["| model | tokens | D | calls per forward: routed / fallback | fallback reasons | cosine | PSNR dB "
             "| native ms | sagejit ms | native / sagejit |", "|---|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        if "error" in r:
            lines.append(f"| {r['model']} | | | error: {r['error']} | | | | | | |")
            continue
        totals = r["per_forward"]
        reasons = "; ".join(f"{reason}: {count}" for reason, count in totals["fallback_reasons"].items()) or "-"
        lines.append(f"| {r['model']} | {r['tokens']} | {r['head_dim']} | {totals['routed']} / {totals['fallback']} "
                     f"| {reasons} | {r['cosine']:.6f} | {r['psnr_db']:.1f} | {r['native']['median_ms']:.2f} "
                     f"| {r['sagejit']['median_ms']:.2f} | {r['speedup_vs_native']:.2f}x |")
    varlen = [r for r in results if "varlen_backend" in r]
    if varlen:
        lines += ["", "diffusers backend \"sagejit_varlen\" (set_attention_backend) on the dispatching models:", "",
                  "| model | calls per forward: routed / fallback | fallback reasons | cosine | PSNR dB | ms |",
                  "|---|---|---|---|---|---|"]
        for r in varlen:
            v = r["varlen_backend"]
            counts = v["per_forward"]
            reasons = "; ".join(f"{k}: {n}" for k, n in counts["fallback_reasons"].items()) or "-"
            lines.append(f"| {r['model']} | {counts['routed']} / {counts['fallback']} | {reasons} | {v['cosine']:.6f} "
                         f"| {v['psnr_db']:.1f} | {v['timing']['median_ms']:.2f} |")
    return "\n".join(lines)


def main():
    parser = model_run_arguments(argparse.ArgumentParser(description=__doc__.split("\n")[0]), COVERAGE_MODELS)
    parser.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    args = parser.parse_args()
    results = []
    for model_name in args.models:
        try:
            results.append(run_model(model_name, args.size, args.seed, args.warmup, args.iterations, args.device))
        except Exception as error:  # reported in the table; the other models still run
            results.append({"model": model_name, "error": f"{type(error).__name__}: {str(error).splitlines()[0][:300]}"})
        print(json.dumps(results[-1]), flush=True)
    print(table(results))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": torch.cuda.get_device_name() if args.device == "cuda" else "cpu", "torch": torch.__version__, "results": results}, f,
                      indent=1)
    if any("error" in r for r in results):
        sys.exit(1)


if __name__ == "__main__":
    main()
