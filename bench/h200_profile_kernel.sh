#!/usr/bin/env bash
# Where a kernel's warps wait, per SASS instruction (issue 23), and what each kernel of a call costs.
#   bench/h200_profile_kernel.sh <bench_attention> <out-dir> <name> <shape> <config>
# Nsight Compute on the first sj_attention_sm90 launch of one bench_attention call (--clock-control none):
# <name>.ncu-rep, <name>.txt (speed of light, warp states, scheduler, occupancy, compute workload) and
# <name>-sass.csv (the source page: per SASS instruction, its warp-stall samples by reason).
# TIMELINE=1: also <name>-kernels.txt, the duration of every kernel launch of that call (one metric,
# one pass each: prepare's launches and the attention kernel side by side).
set -uo pipefail
bench=$1 out=$2 name=$3 shape=$4 config=$5
mkdir -p "$out"
args=(--shape "$shape" --config "$config" --iterations 1)
ncu --clock-control none -k regex:sj_attention_sm90 -c 1 --section SpeedOfLight --section WarpStateStats \
  --section SchedulerStats --section Occupancy --section ComputeWorkloadAnalysis --section SourceCounters \
  --import-source no -f -o "$out/$name" "$bench" "${args[@]}" >"$out/$name-run.log" 2>&1
echo "ncu $name rc=$?"
ncu --import "$out/$name.ncu-rep" --print-details all >"$out/$name.txt" 2>&1
ncu --import "$out/$name.ncu-rep" --page source --print-source sass --csv >"$out/$name-sass.csv" 2>&1
echo "source page rc=$? ($(wc -l <"$out/$name-sass.csv") lines)"
if [[ -n ${TIMELINE:-} ]]; then
  ncu --clock-control none --metrics gpu__time_duration.sum -c 60 "$bench" "${args[@]}" >"$out/$name-kernels.txt" 2>&1
  echo "timeline rc=$?"
fi
