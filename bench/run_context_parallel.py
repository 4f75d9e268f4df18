"""Context parallelism on diffusers' own engine with the sagejit backend: every rank computes the 1-device
output of a real transformer, then the same call with `enable_parallelism(ContextParallelConfig(...))` (ring
or Ulysses over all ranks, diffusers distributing, sagejit computing each local attention and its LSE), and
rank 0 reports agreement (cosine, PSNR, max abs difference) and the time of both (median of timed calls).

    torchrun --nproc-per-node 2 bench/run_context_parallel.py --size bench --mode ring ulysses
    # CPU, gloo, the emulator (what CI runs, tiny size):
    torchrun --nproc-per-node 2 bench/run_context_parallel.py --device cpu --size tiny
    # through sagejit.integrations.diffusers.enable(model) instead of set_attention_backend("sagejit"):
    torchrun --nproc-per-node 2 bench/run_context_parallel.py --backend enable

Prints one JSON line per (model, mode) on rank 0 and writes them to --json when given.
"""
import argparse
import json
import os
import statistics
import sys
import time

import torch
import torch.distributed as dist

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # diffusers_models beside this script
if os.environ.get("SAGEJIT_TEST_INSTALLED") != "1":  # this checkout's python/sagejit, as the tests do
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "python"))

import diffusers_models as dm  # noqa: E402

ENABLE = "enable"  # --backend enable: sagejit_diffusers.enable(model)


def _median_ms(fn, device, iterations, warmup):
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(iterations):
        if device.type == "cuda":
            dist.barrier()
            start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            stop.record()
            torch.cuda.synchronize()
            times.append(start.elapsed_time(stop))
        else:
            dist.barrier()
            begin = time.perf_counter()
            fn()
            times.append((time.perf_counter() - begin) * 1e3)
    return statistics.median(times)


def _allow_cpu_mesh():
    # diffusers builds the mesh on torch's accelerator and picks device rank % device_count; a CPU-only torch
    # reports 0 devices. One CPU "device" per rank is what gloo runs on.
    if torch._C._get_accelerator().type == "cpu" and torch.accelerator.device_count() == 0:
        torch.accelerator.device_count = lambda: 1


def _mend_diffusers_logger():
    # diffusers 0.42.1's context-parallel hook calls logger.warning_once, which its logger lacks, whenever an
    # input is left unsplit (Wan's 1-D timestep): an AttributeError instead of a warning.
    from diffusers.hooks import context_parallel

    if not hasattr(context_parallel.logger, "warning_once"):
        context_parallel.logger.warning_once = context_parallel.logger.warning


def run(args):
    from diffusers import ContextParallelConfig

    import sagejit.integrations.diffusers as sagejit_diffusers

    _mend_diffusers_logger()
    rank, world = dist.get_rank(), dist.get_world_size()
    device = torch.device("cuda", rank % torch.cuda.device_count()) if args.device == "cuda" else torch.device("cpu")
    if device.type == "cuda":
        torch.cuda.set_device(device)
    else:
        sagejit_diffusers.configure(emulate_on_cpu=True)
    sagejit_diffusers.configure(strict=True)  # a fallback would not be sagejit's result: fail instead
    dtype = torch.bfloat16
    results = []
    for model_name in args.models:
        for mode in args.mode:
            c = dm.case(model_name, args.size)
            model = dm.build(c, device, dtype, args.seed)
            for parameter in model.parameters():  # identical weights on every rank, whatever the device's RNG
                dist.broadcast(parameter.data, src=0)
            report = None
            if args.backend == ENABLE:  # the one-line path: sagejit_diffusers.enable(model)
                report = sagejit_diffusers.enable(model)
            else:
                model.set_attention_backend(args.backend)
            latent, cond = dm.model_inputs(c, device, dtype, args.seed)

            def call():
                with torch.no_grad():
                    return dm.forward(model, c, latent, 0.5, cond)

            single = call()
            single_ms = _median_ms(call, device, args.iterations, args.warmup)
            degrees = dict(ring_degree=world) if mode == "ring" else dict(ulysses_degree=world)
            model.enable_parallelism(config=ContextParallelConfig(**degrees))
            parallel = call()
            parallel_ms = _median_ms(call, device, args.iterations, args.warmup)
            agreement = dict(cosine=dm.cosine(parallel, single), psnr_db=dm.psnr(parallel, single),
                             max_abs_diff=float((parallel.float() - single.float()).abs().max()))
            result = dict(model=model_name, size=args.size, mode=mode, world_size=world, device=str(device),
                          backend=args.backend, tokens=c.tokens(), head_dim=c.head_dim(), single_ms=single_ms,
                          parallel_ms=parallel_ms, speedup=single_ms / parallel_ms, **agreement,
                          sagejit_counters=sagejit_diffusers.counters())
            if report is not None:
                result["enable_report"] = report.totals()
            results.append(result)
            if rank == 0:
                print(json.dumps(result), flush=True)
            del model
            if device.type == "cuda":
                torch.cuda.empty_cache()
    return results


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    parser.add_argument("--size", choices=["tiny", "bench"], default="bench")
    parser.add_argument("--models", nargs="+", choices=dm.MODELS, default=list(dm.MODELS))
    parser.add_argument("--mode", nargs="+", choices=["ring", "ulysses"], default=["ring", "ulysses"])
    parser.add_argument("--backend", default="sagejit",
                        help=f"diffusers attention backend (e.g. native to compare), or {ENABLE!r}: "
                             "sagejit.integrations.diffusers.enable(model) instead of set_attention_backend")
    parser.add_argument("--seed", type=int, default=1234)
    parser.add_argument("--iterations", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--json", help="write the results (rank 0) to this file")
    args = parser.parse_args()
    if args.device == "cpu":
        args.iterations, args.warmup = min(args.iterations, 1), 0
        _allow_cpu_mesh()
    dist.init_process_group("nccl" if args.device == "cuda" else "gloo")
    try:
        results = run(args)
        if args.json and dist.get_rank() == 0:
            with open(args.json, "w") as f:
                json.dump(results, f, indent=1)
    finally:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
