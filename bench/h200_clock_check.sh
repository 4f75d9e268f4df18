#!/usr/bin/env bash
# Do the two timers of issue 23 disagree because of the clock? (bench_attention's short bursts vs the
# anchor table's do_bench, 600 ms of back-to-back calls.) Runs each on the same shapes while
# nvidia-smi samples the SM clock, power and throttle reasons every 100 ms, and prints per phase the
# TOPS with the median clock and power of that phase.
#   bench/h200_clock_check.sh <bench_attention> <out-dir> <shape>...
# Needs libsagejit for the Python path: $SAGEJIT_LIBRARY (the anchor table's sagejit column).
set -uo pipefail
bench=$1 out=$2
shift 2
shapes=("$@")
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,clocks_throttle_reasons.active --format=csv,noheader,nounits \
  -lms 100 >"$out/clock-samples.csv" &
sampler=$!
phase() { echo "$(date +%s.%N) $*" >>"$out/phases.txt"; }
bench_args=()
for s in "${shapes[@]}"; do bench_args+=(--shape "$s"); done
: >"$out/phases.txt"
phase begin burst
"$bench" "${bench_args[@]}" --config table --warmup 2 --iterations 10 >"$out/burst.json" 2>/dev/null
phase end burst
sleep 2
phase begin sustained
"$bench" "${bench_args[@]}" --config table --warmup 100 --iterations 200 >"$out/sustained.json" 2>/dev/null
phase end sustained
sleep 2
phase begin anchor
PYTHONPATH="$here/../python${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1 python3 "$here/anchor_table.py" \
  --out "$out/anchor" --shapes "${shapes[@]}" >"$out/anchor.log" 2>&1
phase end anchor
kill "$sampler"
python3 - "$out" <<'PY'
import csv, datetime, json, statistics, sys
out = sys.argv[1]
phases = {}
for line in open(f"{out}/phases.txt"):
    t, edge, name = line.split()
    phases.setdefault(name, {})[edge] = float(t)
samples = []
for row in csv.reader(open(f"{out}/clock-samples.csv")):
    try:
        t = datetime.datetime.strptime(row[0].strip(), "%Y/%m/%d %H:%M:%S.%f").timestamp()
        samples.append((t, float(row[1]), float(row[2]), row[3].strip()))
    except (ValueError, IndexError):
        pass
print("| phase | SM clock MHz (median / min) | power W (median / max) | throttle reasons seen |\n|---|---|---|---|")
for name, p in phases.items():
    inside = [s for s in samples if p["begin"] <= s[0] <= p["end"] and s[2] > 150]  # under load
    if not inside:
        print(f"| {name} | no samples under load | | |")
        continue
    clocks, power = [s[1] for s in inside], [s[2] for s in inside]
    print(f"| {name} | {statistics.median(clocks):.0f} / {min(clocks):.0f} | {statistics.median(power):.0f} / "
          f"{max(power):.0f} | {' '.join(sorted(set(s[3] for s in inside)))} |")
print("\n| shape | burst TOPS | sustained TOPS | anchor-table sagejit TOPS | anchor-table cuDNN TOPS |\n|---|---|---|---|---|")
def tops(path):
    try:
        return {r["shape"]: r.get("tops") for r in json.load(open(path))["results"]}
    except (OSError, ValueError, KeyError):
        return {}
burst, sustained = tops(f"{out}/burst.json"), tops(f"{out}/sustained.json")
try:
    anchor = {r["shape"]: r for r in json.load(open(f"{out}/anchor/anchor-table.json"))["rows"]}
except (OSError, ValueError, KeyError):
    anchor = {}
for shape in burst:
    a = anchor.get(shape, {})
    cell = lambda v: f"{v:.0f}" if isinstance(v, (int, float)) else "n/a"
    print(f"| {shape} | {cell(burst.get(shape))} | {cell(sustained.get(shape))} | "
          f"{cell(a.get('sagejit', {}).get('tops'))} | {cell(a.get('sdpa_cudnn', {}).get('tops'))} |")
PY
