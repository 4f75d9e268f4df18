#!/usr/bin/env bash
# The GPU checks of one change on the GPU machine, in one run that fits a short lease: builds the library
# and the GPU tests, then (each stage bounded by what is left of BUDGET_S seconds, default 300) runs the
# focus test, compute-sanitizer memcheck and racecheck on it, the focus Python GPU tests, and the rest of
# `ctest -L gpu` and of the Python GPU tests. Prints one summary line per stage; logs go to <out-dir>.
#   bench/h200_gpu_check.sh <source-tree> <deps-prefix> <out-dir> <focus-test> [<focus-python-file>...]
# e.g. test_gpu_key_mask tests/test_key_mask_gpu.py, or test_gpu_prepare. <deps-prefix>: bench/h200_build.sh.
set -uo pipefail
src=$(realpath "$1") deps=$(realpath "$2") out=$3 focus=$4
shift 4
focus_python=("$@")
mkdir -p "$out"
source "$(dirname "$0")/h200_build.sh"
budget=${BUDGET_S:-300}
left() { local l=$((budget - SECONDS)); echo $((l > 1 ? l : 1)); }
capped() { local l; l=$(left); echo $((l > $1 ? $1 : l)); }
stage() { echo "[$SECONDS s] $*"; }

gpu_tests=$(cd "$src/tests" && ls test_gpu_*.cpp | sed 's/\.cpp$//')
# shellcheck disable=SC2086
sj_build "$src" /tmp/sj "$deps" --target sagejit $gpu_tests >"$out/build.log" 2>&1
stage "build rc=$? ($(grep -c '^\[' "$out/build.log") steps)"

# NVRTC for the runtime: pip's nvidia wheels next to torch, else the toolkit's (README.md: SAGEJIT_LIBRARY_DIRS).
nvrtc_dirs=$(find /opt /usr/local /usr/lib -name 'libnvrtc.so*' -printf '%h\n' 2>/dev/null | sort -u | paste -sd:)
export SAGEJIT_LIBRARY_DIRS=$nvrtc_dirs
stage "SAGEJIT_LIBRARY_DIRS=$SAGEJIT_LIBRARY_DIRS"

(cd /tmp/sj && timeout "$(left)" "./tests/$focus") >"$out/focus.log" 2>&1
stage "$focus rc=$? ($(grep -E '^\[doctest\] (test cases|assertions)' "$out/focus.log" | tr '\n' ' '))"

for tool in memcheck racecheck; do
  (cd /tmp/sj && timeout "$(capped 120)" compute-sanitizer --tool "$tool" --error-exitcode 9 "./tests/$focus") \
    >"$out/$tool.log" 2>&1
  stage "$tool $focus rc=$? ($(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|not supported' "$out/$tool.log" | head -2 | tr '\n' ' '))"
done

if [[ ${#focus_python[@]} -gt 0 ]]; then
  (cd "$src/python" && SAGEJIT_LIBRARY=/tmp/sj/runtime/libsagejit.so timeout "$(left)" python3 -m pytest -q \
    -p no:cacheprovider "${focus_python[@]}") >"$out/python-focus.log" 2>&1
  stage "${focus_python[*]} rc=$? ($(tail -1 "$out/python-focus.log"))"
fi

(cd /tmp/sj && timeout "$(left)" ctest -L gpu -j 4 -E "^$focus\$" --output-on-failure) >"$out/ctest-gpu.log" 2>&1
stage "ctest -L gpu (the others) rc=$? ($(grep -E 'tests passed|tests failed' "$out/ctest-gpu.log"))"

python_gpu=()
for file in tests/test_op_gpu.py tests/test_sageattn_gpu.py tests/test_integrations_gpu.py tests/test_key_mask_gpu.py tests/test_varlen_gpu.py; do
  [[ " ${focus_python[*]} " == *" $file "* ]] || python_gpu+=("$file")
done
(cd "$src/python" && SAGEJIT_LIBRARY=/tmp/sj/runtime/libsagejit.so timeout "$(left)" python3 -m pytest -q \
  -p no:cacheprovider "${python_gpu[@]}") >"$out/python-gpu.log" 2>&1
stage "other Python GPU tests rc=$? ($(tail -1 "$out/python-gpu.log"))"
