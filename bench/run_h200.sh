#!/usr/bin/env bash
# Runs the sagejit H200 benchmark on the GPU machine: bench_attention (sagejit, via the runtime and
# NVRTC) then bench/sdpa_compare.py (PyTorch SDPA flash + cuDNN, merge, table). Build bench_attention
# first (cmake --build <dir> --target bench_attention) and pass its path.
#   bench/run_h200.sh <bench_attention> <output.json> [extra bench_attention args...]
set -euo pipefail
bench=${1:?path of bench_attention}
out=${2:?output JSON path}
shift 2
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
command="bench/run_h200.sh $bench $out $*"
# Candidate configs of each family (mma.sync fp8 PV, mma.sync fp16 PV, wgmma), timed on video-16k-d128; the best of each family is then run
# on every shape.
tune_args=()
for pv in 0 1; do
  for cfg in "warps=4,rows_per_warp=32,block_n=64,stages=2" "warps=4,rows_per_warp=32,block_n=32,stages=2" \
             "warps=4,rows_per_warp=16,block_n=128,stages=2" "warps=8,rows_per_warp=16,block_n=128,stages=2"; do
    tune_args+=(--tune-config "$cfg,pv_fp16=$pv")
  done
done
# The Hopper wgmma kernel (fp8 PV), its own family in the table.
for cfg in "warps=4,block_n=128,stages=2,min_blocks=3" "warps=4,block_n=128,stages=2,min_blocks=1" \
           "warps=8,block_n=128,stages=2,min_blocks=1" "warps=4,block_n=64,stages=2,min_blocks=3"; do
  tune_args+=(--tune-config "$cfg,rows_per_warp=16,pv_fp16=0,wgmma=1")
done
"$bench" --tune "${tune_args[@]}" "$@" >"$tmp/sagejit.json"
python3 "$here/sdpa_compare.py" --sagejit-json "$tmp/sagejit.json" --out "$out" \
  --anchors "${SAGEJIT_ANCHORS:-$here/results/h200-baselines.json}" --command "$command"
