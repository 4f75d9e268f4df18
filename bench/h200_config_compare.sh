#!/usr/bin/env bash
# One kernel change on the GPU machine in one short lease (issue 23): builds the library, bench_attention
# and the named GPU tests once, runs the GPU tests (each with the time left of BUDGET_S seconds, default
# 420: the tests' share only), then times attention configs side by side (each bench_attention call
# limited to BENCH_TIMEOUT_S seconds, default 150, whatever the tests took): every round runs bench_attention once with every
# config on every shape (same process, same inputs, device-event medians), ROUNDS rounds (default 2).
#   bench/h200_config_compare.sh <source-tree> <deps-prefix> <out-dir> <config>... [-- <gpu-test>[:<doctest-filter>]...]
# <config>: "table" (the tuning table's per shape) or bench_attention's "key=value,..." form.
# <gpu-test>: memcheck:<test>[:<filter>] and racecheck:<test>[:<filter>] run it under compute-sanitizer.
# BEFORE=<source-tree>: also build that tree's bench_attention and time it in every round, just before
# <source-tree> (columns "before <config>"): a same-run comparison of two kernel sources.
# BEFORE_CONFIGS="<config>..." (default: the configs above): the configs BEFORE is timed with, for a tree
# whose bench_attention does not know a config form or key that <source-tree>'s does.
# TREES="<name>=<source-tree> ...": also build each of those whole trees' bench_attention and time it in
# every round (columns "<name> <config>"): like BEFORE, for more than two trees that differ in host code.
# VARIANTS="<name>=<kernel_src-dir> ...": also time <source-tree> with each directory in place of its
# kernel_src/ (columns "<name> <config>"): the library embeds the kernels, so each variant is one
# incremental rebuild of bench_attention (after the GPU tests, which keep <source-tree>'s kernels).
# NCU_SHAPES: also Nsight Compute kernel durations per shape and tree (kernels.md; see below).
# SHAPES (default: bench_attention's anchor shapes of issue 23), ITERATIONS (default 10), WARMUP (untimed
# calls before them, default 2: a burst; e.g. WARMUP=100 ITERATIONS=200 times configs under the power cap
# that back-to-back calls reach, as the anchor table's timer does: bench/results/h100-2026-12-06b-clock-check.md).
# Writes bench-<round>.json per round, one log per test, and compare.md: TOPS per shape and config
# (median of the rounds, each round in brackets) with each config's cos against fp64.
set -uo pipefail
src=$(realpath "$1") deps=$(realpath "$2") out=$3
shift 3
configs=() tests=()
while [[ $# -gt 0 && $1 != -- ]]; do configs+=("$1"); shift; done
[[ $# -gt 0 ]] && { shift; tests=("$@"); }
[[ ${#configs[@]} -gt 0 ]] || { echo "no config to time" >&2; exit 2; }
rounds=${ROUNDS:-2} iterations=${ITERATIONS:-10} warmup=${WARMUP:-2} budget=${BUDGET_S:-420}
bench_timeout=${BENCH_TIMEOUT_S:-150}
shapes=${SHAPES:-flux-4608-d128 video-16k-d128 wan-32k-d128 video-16k-d128-causal vae-8k-d64 llm-4k-d128-causal small-1k-d128}
mkdir -p "$out"
source "$(dirname "$0")/h200_build.sh"
# The tests' share: BUDGET_S counts from the first test, not from the script's start (the builds).
left() { local l=$((budget - (SECONDS - tests_start))); echo $((l > 1 ? l : 1)); }
stage() { echo "[$SECONDS s] $*"; }
# A test filter or config as a file-name part: other characters as '_', none trailing.
slug() { printf '%s' "$1" | tr -c 'A-Za-z0-9' '_' | sed 's/_*$//'; }

test_targets=()
for t in "${tests[@]}"; do
  case $t in memcheck:* | racecheck:*) t=${t#*:} ;; esac
  test_targets+=("${t%%:*}")
done
sj_build "$src" /tmp/sj "$deps" --target sagejit bench_attention "${test_targets[@]}" >"$out/build.log" 2>&1
stage "build rc=$? ($(grep -c '^\[' "$out/build.log") steps)"
# The whole trees beside <source-tree>, each built once into /tmp/sj-<name>: BEFORE (timed just before
# it in every round) and TREES (timed after it, with the variants).
extra_trees=() tree_names=()
[[ -n ${BEFORE:-} ]] && extra_trees+=("before=$BEFORE")
for t in ${TREES:-}; do extra_trees+=("$t"); done
for t in "${extra_trees[@]}"; do
  name=${t%%=*}
  sj_build "$(realpath "${t#*=}")" "/tmp/sj-$name" "$deps" --target bench_attention >"$out/build-$name.log" 2>&1
  rc=$?
  stage "build $name rc=$rc"
  [[ $rc == 0 && $name != before ]] && cp "/tmp/sj-$name/bench/bench_attention" "/tmp/bench_attention-$name" &&
    tree_names+=("$name")
done
SAGEJIT_LIBRARY_DIRS=$(find /opt /usr/local /usr/lib -name 'libnvrtc.so*' -printf '%h\n' 2>/dev/null | sort -u | paste -sd:)
export SAGEJIT_LIBRARY_DIRS SAGEJIT_CACHE_DIR=/tmp/sj-cache

tests_start=$SECONDS
for t in "${tests[@]}"; do
  name=${t%%:*} filter=
  [[ $t == *:* ]] && filter=${t#*:}
  log="$out/${name}${filter:+-$(slug "$filter")}.log"
  args=()
  [[ -n $filter ]] && args=(-tc="$filter")
  if [[ $name == memcheck || $name == racecheck ]]; then
    # memcheck:<test>:<filter> / racecheck:<test>:<filter>
    inner=${t#*:} test=${inner%%:*} tfilter=
    [[ $inner == *:* ]] && tfilter=${inner#*:}
    (cd /tmp/sj && timeout "$(left)" compute-sanitizer --tool "$name" --error-exitcode 9 "./tests/$test" \
      ${tfilter:+-tc="$tfilter"}) >"$log" 2>&1
    stage "$t rc=$? ($(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$log" | head -1))"
    continue
  fi
  (cd /tmp/sj && timeout "$(left)" "./tests/$name" "${args[@]}") >"$log" 2>&1
  stage "$t rc=$? ($(grep -E '^\[doctest\] (test cases|assertions)' "$log" | tr '\n' ' '))"
done

# The variants' bench_attention binaries: the tree's kernel_src/ swapped for each, rebuilt, restored.
variant_names=()
if [[ -n ${VARIANTS:-} ]]; then
  cp /tmp/sj/bench/bench_attention /tmp/bench_attention-tree
  mv "$src/kernel_src" "$src/kernel_src.tree"
  for v in $VARIANTS; do
    name=${v%%=*} dir=$(realpath "${v#*=}")
    rm -rf "$src/kernel_src" && cp -r "$dir" "$src/kernel_src"
    cmake --build /tmp/sj -j "$(nproc)" --target bench_attention >"$out/build-$name.log" 2>&1
    rc=$?
    stage "build variant $name rc=$rc"
    [[ $rc == 0 ]] && cp /tmp/sj/bench/bench_attention "/tmp/bench_attention-$name" && variant_names+=("$name")
  done
  rm -rf "$src/kernel_src" && mv "$src/kernel_src.tree" "$src/kernel_src"
  cp /tmp/bench_attention-tree /tmp/sj/bench/bench_attention
fi

bench_args=()
for s in $shapes; do bench_args+=(--shape "$s"); done
before_args=("${bench_args[@]}")
bench_args+=(--config "${configs[@]}")
read -ra before_configs <<<"${BEFORE_CONFIGS:-${configs[*]}}"
before_args+=(--config "${before_configs[@]}")
for round in $(seq 1 "$rounds"); do
  if [[ -n ${BEFORE:-} ]]; then
    SAGEJIT_CACHE_DIR=/tmp/sj-cache-before timeout "$bench_timeout" /tmp/sj-before/bench/bench_attention "${before_args[@]}" \
      --warmup "$warmup" --iterations "$iterations" >"$out/bench-before-$round.json" 2>"$out/bench-before-$round.err"
    stage "bench before round $round rc=$?"
  fi
  timeout "$bench_timeout" /tmp/sj/bench/bench_attention "${bench_args[@]}" --warmup "$warmup" --iterations "$iterations" \
    >"$out/bench-$round.json" 2>"$out/bench-$round.err"
  stage "bench round $round rc=$?"
  for name in "${tree_names[@]}" "${variant_names[@]}"; do
    SAGEJIT_CACHE_DIR=/tmp/sj-cache-$name timeout "$bench_timeout" "/tmp/bench_attention-$name" "${bench_args[@]}" \
      --warmup "$warmup" --iterations "$iterations" >"$out/bench-$name-$round.json" 2>"$out/bench-$name-$round.err"
    stage "bench $name round $round rc=$?"
  done
done

# NCU_SHAPES="<shape>...": then Nsight Compute durations of every sj_ kernel of a few calls per shape
# and config of NCU_CONFIGS (default "table"; BEFORE: those of them in BEFORE_CONFIGS), for the tree,
# BEFORE and each variant (ncu-<tree>[-<config>]-<shape>.txt), summarized by
# bench/ncu_kernel_durations.py in kernels.md: the prepare kernels and the attention kernel apart.
if [[ -n ${NCU_SHAPES:-} ]]; then
  ncu_runs=("tree=/tmp/sj/bench/bench_attention=/tmp/sj-cache")
  [[ -n ${BEFORE:-} ]] && ncu_runs+=("before=/tmp/sj-before/bench/bench_attention=/tmp/sj-cache-before")
  for name in "${tree_names[@]}" "${variant_names[@]}"; do ncu_runs+=("$name=/tmp/bench_attention-$name=/tmp/sj-cache-$name"); done
  ncu_files=()
  read -ra ncu_configs <<<"${NCU_CONFIGS:-table}"
  for s in $NCU_SHAPES; do
    for run in "${ncu_runs[@]}"; do
      IFS== read -r name binary cache <<<"$run"
      for config in "${ncu_configs[@]}"; do
        [[ $name == before && " ${before_configs[*]} " != *" $config "* ]] && continue
        label=$name
        [[ $config != table ]] && label="$name-$(slug "$config")"
        SAGEJIT_CACHE_DIR=$cache timeout "$bench_timeout" ncu --clock-control none --metrics gpu__time_duration.sum \
          -k regex:sj_ -c 16 "$binary" --shape "$s" --config "$config" --warmup 1 --iterations 3 \
          >"$out/ncu-$label-$s.txt" 2>&1
        stage "ncu $label $s rc=$?"
        ncu_files+=("$out/ncu-$label-$s.txt")
      done
    done
  done
  python3 "$(dirname "$0")/ncu_kernel_durations.py" "${ncu_files[@]}" >"$out/kernels.md"
fi

python3 - "$out" "$rounds" "${tree_names[@]}" "${variant_names[@]}" <<'EOF' | tee "$out/compare.md"
import json, statistics, sys
out, rounds, variants = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
tops, cos, order = {}, {}, []
import os
files = [(f"{out}/bench-before-{r}.json", "before ") for r in range(1, rounds + 1) if os.path.exists(f"{out}/bench-before-{r}.json")]
files += [(f"{out}/bench-{r}.json", "") for r in range(1, rounds + 1)]
files += [(f"{out}/bench-{v}-{r}.json", f"{v} ") for v in variants for r in range(1, rounds + 1)]
for path, tree in files:
    r = path
    try:
        rows = json.load(open(path))["results"]
    except (OSError, ValueError, KeyError) as error:
        print(f"{path}: {error}")
        continue
    for row in rows:
        key = (row["shape"], tree + row.get("requested", row["config"]))
        if key[1] not in order:
            order.append(key[1])
        if "tops" not in row:
            print(f"round {r} {key}: {row.get('error')}")
            continue
        tops.setdefault(key, []).append(row["tops"])
        cos.setdefault(key, row.get("cos"))
shapes = list(dict.fromkeys(s for s, _ in tops))
print("| shape | " + " | ".join(order) + " |")
print("|---|" + "---|" * len(order))
for s in shapes:
    cells = []
    for c in order:
        runs = tops.get((s, c), [])
        if not runs:
            cells.append("n/a")
            continue
        c_cos = cos.get((s, c))
        cells.append(f"{statistics.median(runs):.0f} ({'/'.join(f'{t:.0f}' for t in runs)}"
                     + (f"; cos {c_cos:.5f})" if c_cos is not None else ")"))
    print(f"| {s} | " + " | ".join(cells) + " |")
EOF
