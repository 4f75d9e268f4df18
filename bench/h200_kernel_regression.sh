#!/usr/bin/env bash
# Kernel speed of two source trees side by side in one run (bench_attention, the shipped sm_90 wgmma
# config, same shapes and inputs, trees alternated): bench/h200_kernel_regression.sh <before> <after> <deps>
set -uo pipefail
deps=$(realpath "$3")
for t in before after; do
  src=$1; [[ $t == after ]] && src=$2
  (cmake -S "$src" -B /tmp/kr-$t -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$deps/usr" \
     -DCMAKE_INCLUDE_PATH="$deps/usr/include" >/dev/null && cmake --build /tmp/kr-$t -j 8 --target bench_attention >/dev/null) &
done
wait
for round in 1 2; do
  for t in before after; do
    /tmp/kr-$t/bench/bench_attention --config "warps=4,rows_per_warp=16,block_n=128,stages=2,pv_fp16=0,min_blocks=3,wgmma=1" \
      --shape flux-4608-d128 --shape video-16k-d128 --shape vae-8k-d64 --iterations 10 2>/dev/null |
      python3 -c "import json,sys; d=json.load(sys.stdin); print('$t round $round:', ', '.join(f\"{r['shape']} {r['tops']:.0f}\" for r in d['results']))"
  done
done
