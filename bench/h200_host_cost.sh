#!/usr/bin/env bash
# Issue 24's host-cost table on the GPU machine, before/after in one run:
#   bench/h200_host_cost.sh <before-src> <after-src> <deps-prefix> <out-dir>
# 1. Builds libsagejit and bench_host_cost of both trees at once (the after tree's bench source is
#    copied into the before tree, so both run one harness), and the after tree's
#    test_gpu_repeated_call_allocation.
# 2. Nothing else running, the trees alternating: bench_host_cost (C++) and bench/python_op_host.py
#    (Python, one process per tree: PYTHONPATH and SAGEJIT_LIBRARY name it).
# 3. The after tree's checks: that test, and the Python op tests (test_op_gpu.py: fullgraph,
#    reduce-overhead, graph capture, the eager call) and test_sageattn_gpu.py's LSE, strided, GQA and
#    stream cases.
# 4. The benches again, and the first call of a new process from the disk cache both trees filled
#    (one cache: the kernel sources agree).
# After each stage bench/host_cost_table.py writes the table (host-cost.md) and every figure
# (host-cost.json) to <out-dir>, with every log in logs.tgz.
# <deps-prefix>: bench/h200_build.sh. HC_ROUNDS (default 25) sets both benches' rounds, HC_CPP_ROUND2=0
# skips the C++ bench in stage 4 (a shorter run when device time is short; the table says which ran).
set -uo pipefail
before=$(realpath "$1") after=$(realpath "$2") deps=$(realpath "$3") final=$(realpath -m "$4")
out=/tmp/hc-out  # everything here; the final dir gets host-cost.md, host-cost.json and logs.tgz at each checkpoint
mkdir -p "$out" "$final"
t0=$(date +%s)
checkpoint() {  # the table so far and every log, in few files (a stage cut short keeps the earlier ones)
  python3 "$after/bench/host_cost_table.py" "$out" --command \
    "bench/h200_host_cost.sh <before-src> <after-src> <deps> <out> (before: $(cat "$before/.base_commit" 2>/dev/null))" \
    >"$out/host-cost.md" 2>"$out/table.err"
  cp "$out/host-cost.md" "$out/host-cost.json" "$final/" 2>/dev/null
  tar -czf "$final/logs.tgz" -C "$out" .
  echo "checkpoint $1 at $(( $(date +%s) - t0 )) s"
}
source "$after/bench/h200_build.sh"
cp "$after/bench/bench_host_cost.cpp" "$before/bench/"
sj_build "$before" /tmp/hc-before "$deps" -DSAGEJIT_BUILD_TESTS=OFF -DSAGEJIT_BUILD_TOOLS=OFF \
  --target sagejit bench_host_cost >"$out/build-before.log" 2>&1 & b1=$!
sj_build "$after" /tmp/hc-after "$deps" \
  --target sagejit bench_host_cost test_gpu_repeated_call_allocation >"$out/build-after.log" 2>&1 & b2=$!
wait $b1; echo "build before rc=$?"; wait $b2; echo "build after rc=$? ($(( $(date +%s) - t0 )) s)"
export SAGEJIT_CACHE_DIR=/tmp/hc-cache SAGEJIT_LOG=warn PYTHONUNBUFFERED=1
rounds=${HC_ROUNDS:-25}
bench_round() {  # round number, then python_op_host.py's first-call arguments
  local round=$1; shift
  for tree in before after; do
    local src=$before; [[ $tree == after ]] && src=$after
    if [[ $round == 1 || ${HC_CPP_ROUND2:-1} != 0 ]]; then
      /tmp/hc-$tree/bench/bench_host_cost --label "$tree" --rounds "$rounds" >"$out/cpp-$tree-$round.json" \
        2>"$out/cpp-$tree-$round.txt"
      echo "$tree cpp round $round rc=$?"
    fi
    PYTHONPATH="$src/python" SAGEJIT_LIBRARY=/tmp/hc-$tree/runtime/libsagejit.so \
      python3 "$after/bench/python_op_host.py" --label "$tree" --rounds "$rounds" "$@" --json "$out/py-$tree-$round.json" \
      >"$out/py-$tree-$round.txt" 2>&1
    echo "$tree python round $round rc=$?"
  done
}
bench_round 1 --no-first-call
checkpoint "round 1"
/tmp/hc-after/tests/test_gpu_repeated_call_allocation >"$out/test-gpu-after.log" 2>&1
echo "after: test_gpu_repeated_call_allocation rc=$? ($(grep -E 'assertions' "$out/test-gpu-after.log"))"
(cd "$after/python" && SAGEJIT_LIBRARY=/tmp/hc-after/runtime/libsagejit.so python3 -m pytest -q -p no:cacheprovider \
  tests/test_op_gpu.py tests/test_op_repeated_cpu.py tests/test_sageattn_gpu.py::test_return_lse tests/test_sageattn_gpu.py::test_strided_views_of_a_packed_qkv \
  tests/test_sageattn_gpu.py::test_gqa tests/test_sageattn_gpu.py::test_runs_on_the_current_stream) \
  >"$out/python-tests-after.log" 2>&1
echo "after: python GPU tests rc=$? ($(tail -1 "$out/python-tests-after.log"))"
checkpoint "tests"
bench_round 2 --first-call-cache "$SAGEJIT_CACHE_DIR"
checkpoint "round 2"
cat "$out/host-cost.md"
