#!/usr/bin/env bash
# The integrations' runs on the H200 machines (issue 15), results under $OUT (or ./out):
#   bench/h200_integrations.sh tests models report   # nvidia-h200 (any subset, in that order):
#       tests:  pytest of the integrations (GPU tests, and the CPU ones through the emulator)
#       models: bench/run_diffusers_benchmark.py (Flux, Wan: forward times, accuracy vs native)
#       coverage: bench/run_pipeline_coverage.py (HunyuanVideo, LTX, Lumina 2, CogVideoX, SD3 under enable():
#                 calls routed / fallen back, accuracy and forward times vs native)
#       report: python -m sagejit bench (the JSON report for an issue)
#   bench/h200_integrations.sh cp                    # nvidia-h200-x2: context parallel, 2 GPUs vs 1
# Needs carried: .devdeps (the build's dependencies) and .whl (diffusers' wheel:
#   pip download --no-deps --only-binary=:all: --python-version 3.12 -d .whl diffusers==0.42.1).
set -euo pipefail
[[ $# -ge 1 ]] || { echo "usage: $0 {tests|models|coverage|report|cp}..." >&2; exit 2; }
out=${OUT:-$PWD/out}
mkdir -p "$out"
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH="$PWD/python:/tmp/site"
source "$(dirname "$0")/h200_build.sh"
sj_build . build-h200 "$PWD/.devdeps" --target sagejit sagejit-info sagejit-selftest >"$out/cmake.log" 2>&1
export SAGEJIT_LIBRARY="$PWD/build-h200/runtime/libsagejit.so"
python3 -c 'import torch, diffusers; print("torch", torch.__version__, "diffusers", diffusers.__version__, "GPUs", torch.cuda.device_count())'
for mode in "$@"; do
  case $mode in
    tests)
      (cd python && python3 -m pytest -q -p no:cacheprovider -s tests/test_integrations_gpu.py \
         tests/test_integrations_cpu.py tests/test_diffusers_cpu.py tests/test_diffusers_enable_cpu.py \
         tests/test_comfyui_node.py tests/test_bench_cpu.py) \
        2>&1 | tee "$out/integrations-tests.log" | grep -v "experimental\|kept in float32" | tail -40 \
        || echo "tests: exit status $?"
      ;;
    models)
      python3 bench/run_diffusers_benchmark.py --json "$out/diffusers-bench.json" 2>&1 \
        | grep -v "experimental\|kept in float32" | tee "$out/diffusers-bench.log" | tail -8 || echo "models: exit status $?"
      ;;
    coverage)
      python3 bench/run_pipeline_coverage.py --json "$out/pipeline-coverage.json" 2>&1 \
        | grep -v "experimental\|kept in float32" | tee "$out/pipeline-coverage.log" | tail -9 \
        || echo "coverage: exit status $?"
      ;;
    report)
      python3 -m sagejit bench --json "$out/sagejit-bench-report.json" 2>&1 | tee "$out/sagejit-bench.log" | tail -40 \
        || echo "report: exit status $?"
      ;;
    cp)
      for backend in sagejit _native_cudnn; do
        torchrun --nproc-per-node 2 bench/run_context_parallel.py --size bench --backend "$backend" \
          --json "$out/context-parallel-$backend.json" 2>&1 | tee "$out/context-parallel-$backend.log" | grep '^{' \
          || echo "cp $backend: exit status $?; tail of its log:" && tail -5 "$out/context-parallel-$backend.log"
      done
      ;;
    *) echo "unknown mode $mode: tests, models, coverage, report or cp" >&2; exit 2 ;;
  esac
done
