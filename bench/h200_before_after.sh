#!/usr/bin/env bash
# Builds two sagejit source trees on the GPU machine and compares them there, in one run: for each,
# the GPU tests (ctest -L gpu), the Python tests (which run the GPU cases there), and
# `sagejit-selftest --quick`; then bench_attention of both on the same shapes, configs and inputs
# (fixed seed), alternating the trees, so the figures are a same-run comparison.
#   bench/h200_before_after.sh <before-src> <after-src> <deps-prefix> <out-dir>
# Kernel speed alone (only bench_attention is built, no tests), two rounds:
#   BENCH_ONLY=1 ROUNDS=2 bench/h200_before_after.sh <before-src> <after-src> <deps-prefix> <out-dir>
# Tests of one tree only (the other's already ran in this lease): TEST_TREES=after.
# <deps-prefix>: bench/h200_build.sh.
set -uo pipefail
before=$(realpath "$1") after=$(realpath "$2") deps=$(realpath "$3") out=$4
mkdir -p "$out"
source "$(dirname "$0")/h200_build.sh"
targets=()
[[ ${BENCH_ONLY:-0} == 1 ]] && targets=(--target bench_attention)
sj_build "$before" /tmp/sj-before "$deps" "${targets[@]}" >"$out/build-before.log" 2>&1 & b1=$!
sj_build "$after" /tmp/sj-after "$deps" "${targets[@]}" >"$out/build-after.log" 2>&1 & b2=$!
wait $b1; echo "build before rc=$?"; wait $b2; echo "build after rc=$?"
for tree in ${TEST_TREES:-before after}; do
  [[ ${BENCH_ONLY:-0} == 1 ]] && break
  src=$before; [[ $tree == after ]] && src=$after
  (cd /tmp/sj-$tree && ctest -L gpu -V -j 4) >"$out/gpu-tests-$tree.log" 2>&1
  echo "$tree: ctest -L gpu rc=$? ($(grep -E 'tests passed' "$out/gpu-tests-$tree.log"));" \
       "$(grep -hE '^[0-9]+: \[doctest\] assertions' "$out/gpu-tests-$tree.log" | tr '\n' ' ')"
  (cd "$src/python" && SAGEJIT_LIBRARY=/tmp/sj-$tree/runtime/libsagejit.so python3 -m pytest -q -p no:cacheprovider tests) \
    >"$out/python-tests-$tree.log" 2>&1
  echo "$tree: python tests rc=$? ($(tail -1 "$out/python-tests-$tree.log"))"
  /tmp/sj-$tree/tools/sagejit-selftest --quick >"$out/selftest-$tree.txt" 2>&1
  echo "$tree: selftest --quick rc=$? ($(grep -E '^verdict' "$out/selftest-$tree.txt"))"
done
configs=(--config table)  # each tree's own tuning table (a config of one tree may not exist in the other)
# The anchor shapes of docs/NVIDIA.md (issue 17's table).
shapes=(--shape flux-4608-d128 --shape video-16k-d128 --shape wan-32k-d128 --shape vae-8k-d64
        --shape llm-4k-d128-causal --shape video-16k-d128-causal)
rounds=${ROUNDS:-1}
sj_bench_rounds "$out" "$rounds" 10 "${configs[@]}" "${shapes[@]}"
python3 - "$out" "$rounds" <<'PY'
import json, sys, statistics
out, rounds = sys.argv[1], int(sys.argv[2])
rows = {}
for tree in ("before", "after"):
    for rnd in range(1, rounds + 1):
        for r in json.load(open(f"{out}/bench-{tree}-{rnd}.json"))["results"]:
            v = rows.setdefault(r["shape"], {})
            v.setdefault(tree, []).append(r.get("tops"))
            v.setdefault(tree + "_config", r.get("config", "?"))  # the table's choice in that tree
            if "cos" in r: v.setdefault(tree + "_cos", r["cos"])
print("| shape | before TOPS | after TOPS | after/before | cos before | cos after | config before / after |")
print("|---|---|---|---|---|---|---|")
for shape, v in rows.items():
    b = statistics.median([x for x in v.get("before", []) if x]); a = statistics.median([x for x in v.get("after", []) if x])
    print(f"| {shape} | {b:.0f} | {a:.0f} | {a/b:.3f} | {v.get('before_cos', float('nan')):.5f} | "
          f"{v.get('after_cos', float('nan')):.5f} | {v['before_config']} / {v['after_config']} |")
PY
# Everything in one archive (the GPU machine returns few files).
tar -czf /tmp/sj-logs.tgz -C "$out" . && find "$out" -type f -delete && mv /tmp/sj-logs.tgz "$out/logs.tgz"
