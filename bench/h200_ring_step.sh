#!/usr/bin/env bash
# Issue 23: the wgmma issue order of three warpgroups (attention_sm90's config key "ring") on the GPU
# machine, in one short lease. Times the tuning table's configs beside three-warpgroup configs running
# free (ring 0) and taking turns (ring 1: QK and PV issues, 2: QK only) with bench/h200_config_compare.sh
# (one process, same inputs, device-event medians; the sanitizer-sized GPU cases first), then runs the
# wgmma and key-mask GPU tests, racecheck and memcheck on the sanitizer-sized attention case, and Nsight Compute on
# one 1x28x16384 call of some of them. Prints one line per stage; everything lands in <out-dir>.
#   bench/h200_ring_step.sh <deps-prefix> <out-dir>      (from the source tree's root)
# COMPARE_S: seconds for the build, the sanitizer-sized cases and the timing rounds (default 270).
set -uo pipefail
deps=$1 out=$2
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
three="block_n=128,min_blocks=1,pv_fp16=0,rows_per_warp=16,tma=1,warps=12,wgmma=1"
# RINGS: the ring values timed at stages 2 (default "0 1 2"), STAGES3_RINGS: at stages 3 (default "1"),
# NCU_RINGS: profiled (default "0 1").
configs=(table)
for ring in ${RINGS:-0 1 2}; do configs+=("$three,stages=2,ring=$ring"); done
for ring in ${STAGES3_RINGS-1}; do configs+=("$three,stages=3,ring=$ring"); done
BUDGET_S=${COMPARE_S:-270} "$here/h200_config_compare.sh" "$here/.." "$deps" "$out/compare" "${configs[@]}" \
  -- "test_gpu_attention:*sanitizer*" "test_gpu_key_mask:*sanitizer*"

SAGEJIT_LIBRARY_DIRS=$(find /opt /usr/local /usr/lib -name 'libnvrtc.so*' -printf '%h\n' 2>/dev/null | sort -u | paste -sd:)
export SAGEJIT_LIBRARY_DIRS SAGEJIT_CACHE_DIR=/tmp/sj-cache
stage() { echo "[$SECONDS s] $*"; }
summary() { grep -E '^\[doctest\] (test cases|assertions)|ERROR SUMMARY|RACECHECK SUMMARY' "$1" | tr '\n' ' '; }
(cd /tmp/sj && timeout 90 ./tests/test_gpu_attention -tc='*wgmma*') >"$out/test-wgmma.log" 2>&1
stage "test_gpu_attention wgmma rc=$? $(summary "$out/test-wgmma.log")"
(cd /tmp/sj && timeout 45 ./tests/test_gpu_key_mask) >"$out/test-key-mask.log" 2>&1
stage "test_gpu_key_mask rc=$? $(summary "$out/test-key-mask.log")"
for tool in racecheck memcheck; do
  (cd /tmp/sj && timeout 45 compute-sanitizer --tool $tool --error-exitcode 9 ./tests/test_gpu_attention \
    -tc='*sanitizer*') >"$out/$tool.log" 2>&1
  stage "$tool rc=$? $(summary "$out/$tool.log")"
done
for ring in ${NCU_RINGS:-0 1}; do
  timeout 45 ncu --clock-control none -k sj_attention_sm90 -c 1 --section SpeedOfLight --section WarpStateStats \
    --section ComputeWorkloadAnalysis --section SchedulerStats /tmp/sj/bench/bench_attention --shape video-16k-d128 \
    --config "$three,stages=2,ring=$ring" --iterations 1 >"$out/ncu-ring$ring.txt" 2>&1
  stage "ncu ring $ring rc=$?"
done
