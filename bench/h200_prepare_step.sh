#!/usr/bin/env bash
# A prepare-kernel change on the GPU machine, in one run: the exhaustive check of the packed code
# forms (bench/h200_packed_codes_check.cu), the GPU tests and compute-sanitizer (memcheck, racecheck)
# of the after tree, Nsight Compute of both trees' prepare kernels, and bench_attention end to end
# (prepare + attention) of both trees alternating on the same shapes, configs and inputs.
#   bench/h200_prepare_step.sh <before-src> <after-src> <deps-prefix> <out-dir>
# Optional: SAGE=<sageattention-src> also builds SageAttention's sm90 extensions there (for a later
# bench/h200_anchor_table.sh) in parallel with the sagejit builds. <deps-prefix>: bench/h200_build.sh.
set -uo pipefail
before=$(realpath "$1") after=$(realpath "$2") deps=$(realpath "$3") out=$(realpath -m "$4")
mkdir -p "$out"
source "$after/bench/h200_build.sh"
gpu_tests=(test_gpu_api test_gpu_attention test_gpu_device test_gpu_graph_capture test_gpu_jit_probe test_gpu_nonfinite
           test_gpu_prepare)
sj_build "$before" /tmp/sj-before "$deps" -DSAGEJIT_BUILD_TESTS=OFF -DSAGEJIT_BUILD_TOOLS=OFF --target bench_attention >"$out/build-before.log" 2>&1 &
b1=$!
sj_build "$after" /tmp/sj-after "$deps" --target sagejit bench_attention "${gpu_tests[@]}" >"$out/build-after.log" 2>&1 &
b2=$!
if [[ -n ${SAGE:-} ]]; then
  (cd "$SAGE" && nice bash ./build_sageattention.sh "$SAGE") >"$out/sage-build.log" 2>&1 &
fi
nvcc -arch=sm_90 -std=c++17 -I "$after/kernel_src" "$after/bench/h200_packed_codes_check.cu" -o /tmp/packed_codes_check &&
  /tmp/packed_codes_check >"$out/packed-codes-check.log" 2>&1
echo "packed codes check rc=$? ($(tail -1 "$out/packed-codes-check.log"))"
wait $b1; echo "build before rc=$?"; wait $b2; echo "build after rc=$?"

shapes=(--shape flux-4608-d128 --shape video-16k-d128 --shape wan-32k-d128 --shape vae-8k-d64
        --shape llm-4k-d128-causal --shape video-16k-d128-causal --shape small-1k-d128)
config=(--config "warps=4,rows_per_warp=16,block_n=128,stages=2,pv_fp16=0,min_blocks=3,wgmma=1,tma=0")
sj_bench_rounds "$out" 2 20 "${config[@]}" "${shapes[@]}"
for tree in before after; do
  for shape in video-16k-d128 small-1k-d128; do
    ncu --clock-control none -k regex:sj_prepare -c 3 --section SpeedOfLight --section ComputeWorkloadAnalysis \
      --section MemoryWorkloadAnalysis --section InstructionStats --section Occupancy \
      /tmp/sj-$tree/bench/bench_attention "${config[@]}" --shape $shape --iterations 1 --warmup 0 \
      >"$out/ncu-prepare-$tree-$shape.txt" 2>&1
    echo "ncu $tree $shape rc=$?"
  done
done

for tool in memcheck racecheck; do
  compute-sanitizer --tool $tool --error-exitcode 1 /tmp/sj-after/tests/test_gpu_prepare >"$out/sanitizer-$tool-prepare.log" 2>&1
  echo "compute-sanitizer $tool test_gpu_prepare rc=$? ($(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$out/sanitizer-$tool-prepare.log"))"
done
# The GPU tests last: their many NVRTC compiles take the longest. DEADLINE_S (seconds since the start)
# caps them, so that a lease's limit leaves time for the summary below.
left=$(( ${DEADLINE_S:-100000} - SECONDS - 15 )); (( left < 30 )) && left=30
(cd /tmp/sj-after && timeout "$left" ctest -L gpu -V -j 2) >"$out/gpu-tests-after.log" 2>&1
echo "after: ctest -L gpu rc=$? ($(grep -E 'tests passed' "$out/gpu-tests-after.log"))"
wait
python3 - "$out" <<'PY'
import json, statistics, sys
out = sys.argv[1]
rows = {}
for tree in ("before", "after"):
    for rnd in (1, 2):
        try:
            results = json.load(open(f"{out}/bench-{tree}-{rnd}.json"))["results"]
        except Exception as error:
            print(tree, rnd, "no results:", error); continue
        for r in results:
            rows.setdefault(r["shape"], {}).setdefault(tree, []).append(r.get("tops") or 0.0)
print("| shape | before TOPS (2 rounds) | after TOPS (2 rounds) | after/before (medians) |")
print("|---|---|---|---|")
for shape, v in rows.items():
    b, a = v.get("before", [0.0]), v.get("after", [0.0])
    ratio = statistics.median(a) / statistics.median(b) if statistics.median(b) else float("nan")
    print(f"| {shape} | {' / '.join(f'{x:.1f}' for x in b)} | {' / '.join(f'{x:.1f}' for x in a)} | {ratio:.3f} |")
PY
for f in "$out"/ncu-prepare-*.txt; do
  echo "== $(basename "$f")"; grep -E "^  sj_prepare|Duration|Executed Instructions  |DRAM Throughput|Compute \(SM\) Throughput" "$f"
done
