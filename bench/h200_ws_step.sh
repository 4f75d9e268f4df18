#!/usr/bin/env bash
# The warp-specialized sm_90 kernel (ws=1) on the GPU machine, in one run of one tree: the GPU
# attention tests, bench_attention of the one-warpgroup kernel as shipped against ws configs on the
# same shapes and inputs (two rounds, alternating configs inside each bench process), then
# compute-sanitizer memcheck and racecheck on the sanitizer-sized case, and optionally Nsight Compute
# of one 16k call per kernel (NCU=1).
#   bench/h200_ws_step.sh <src> <deps-prefix> <out-dir> [ws config ...]
# <deps-prefix>: bench/h200_build.sh. Steps are time-boxed (STEP_TIMEOUT seconds, default 240);
# TEST_FILTER=<doctest -tc pattern> runs only those test cases, TESTS=0 / SANITIZE=0 skip those steps.
set -uo pipefail
src=$(realpath "$1") deps=$(realpath "$2") out=$(realpath -m "$3")
shift 3
mkdir -p "$out"
source "$src/bench/h200_build.sh"
limit=${STEP_TIMEOUT:-240}
SECONDS=0
sj_build "$src" /tmp/sj-ws "$deps" --target sagejit bench_attention test_gpu_attention >"$out/build.log" 2>&1
echo "build rc=$? (${SECONDS}s)"

if [[ ${TESTS:-1} == 1 ]]; then
  (cd /tmp/sj-ws && timeout "$limit" tests/test_gpu_attention ${TEST_FILTER:+"-tc=$TEST_FILTER"}) >"$out/gpu-attention.log" 2>&1
  echo "test_gpu_attention rc=$? ($(grep -E '^\[doctest\] (test cases|assertions)' "$out/gpu-attention.log" | tr '\n' ' ')) (${SECONDS}s)"
fi

shipped="warps=4,rows_per_warp=16,block_n=128,stages=2,pv_fp16=0,min_blocks=3,wgmma=1,tma=1"
configs=(--config "$shipped")
for ws in "${@:-warps=8,rows_per_warp=16,block_n=128,stages=3,pv_fp16=0,min_blocks=1,wgmma=1,tma=1,ws=1}"; do
  configs+=(--config "$ws")
done
shapes=(--shape ${SHAPES:-flux-4608-d128 video-16k-d128 wan-32k-d128 vae-8k-d64 llm-4k-d128-causal video-16k-d128-causal})
for round in $(seq 1 "${ROUNDS:-2}"); do
  timeout "$limit" /tmp/sj-ws/bench/bench_attention "${configs[@]}" ${shapes[@]} --iterations 10 \
    >"$out/bench-$round.json" 2>"$out/bench-$round.err"
  echo "bench round $round rc=$? (${SECONDS}s)"
done
python3 - "$out" "${ROUNDS:-2}" <<'PY'
import json, sys, statistics
out, rounds = sys.argv[1], int(sys.argv[2])
rows, configs = {}, []
for rnd in range(1, rounds + 1):
    try:
        results = json.load(open(f"{out}/bench-{rnd}.json"))["results"]
    except Exception as error:  # a time-boxed round leaves no JSON
        print(f"round {rnd}: {error}")
        continue
    for r in results:
        if r["config"] not in configs: configs.append(r["config"])
        rows.setdefault(r["shape"], {}).setdefault(r["config"], []).append(r.get("tops") or 0)
print("configs:", *[f"c{i}={c}" for i, c in enumerate(configs)], sep="\n  ")
print("| shape | " + " | ".join(f"c{i} TOPS" for i in range(len(configs))) + " | best ws / c0 |")
print("|---|" + "---|" * (len(configs) + 1))
for shape, by in rows.items():
    med = [statistics.median(by[c]) if c in by else 0 for c in configs]
    print(f"| {shape} | " + " | ".join(f"{m:.0f} ({'/'.join(f'{x:.0f}' for x in by.get(c, []))})" for m, c in zip(med, configs))
          + f" | {max(med[1:]) / med[0]:.3f} |")
PY

if [[ ${SANITIZE:-1} == 1 ]]; then
  for tool in memcheck racecheck; do
    (cd /tmp/sj-ws && timeout "$limit" compute-sanitizer --tool $tool --error-exitcode 1 tests/test_gpu_attention \
      -tc='*sanitizer*') >"$out/sanitizer-$tool.log" 2>&1
    echo "compute-sanitizer $tool rc=$? ($(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$out/sanitizer-$tool.log")) (${SECONDS}s)"
  done
fi

if [[ ${NCU:-0} == 1 ]]; then
  ncu_idx=" ${NCU_IDX:-0 1} "
  i=0
  for c in "${configs[@]}"; do
    [[ $c == --config ]] && continue
    name=c$i; i=$((i + 1))
    [[ $ncu_idx == *" ${name#c} "* ]] || continue
    timeout "$limit" ncu --clock-control none -k regex:sj_attention -c 1 --section SpeedOfLight --section Occupancy \
      --section WarpStateStats --section InstructionStats --section ComputeWorkloadAnalysis \
      --metrics sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_tensor_op_gmma.sum \
      /tmp/sj-ws/bench/bench_attention --config "$c" --shape video-16k-d128 --iterations 1 --warmup 0 \
      >"$out/ncu-$name.txt" 2>&1
    echo "ncu $name rc=$? (${SECONDS}s)"
  done
fi
# Few files come back: the logs in one archive.
tar -czf /tmp/sj-ws-logs.tgz -C "$out" . && find "$out" -type f -delete && mv /tmp/sj-ws-logs.tgz "$out/logs.tgz"
