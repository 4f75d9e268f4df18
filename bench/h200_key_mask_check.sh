#!/usr/bin/env bash
# The key-mask checks on the GPU machine, in one run that fits a short lease: builds the library and
# the GPU tests, then (each stage bounded by what is left of BUDGET_S seconds, default 225) runs
# test_gpu_key_mask, compute-sanitizer memcheck on it (the masked prepare and attention kernels), the
# masked Python GPU tests, and the rest of `ctest -L gpu` and of the Python GPU tests. Prints one
# summary line per stage; logs go to <out-dir>.
#   bench/h200_key_mask_check.sh <source-tree> <deps-prefix> <out-dir>
# <deps-prefix>: bench/h200_build.sh.
set -uo pipefail
src=$(realpath "$1") deps=$(realpath "$2") out=$3
mkdir -p "$out"
source "$(dirname "$0")/h200_build.sh"
budget=${BUDGET_S:-225}
left() { local l=$((budget - SECONDS)); echo $((l > 1 ? l : 1)); }
stage() { echo "[$SECONDS s] $*"; }

gpu_tests=$(cd "$src/tests" && ls test_gpu_*.cpp | sed 's/\.cpp$//')
# shellcheck disable=SC2086
sj_build "$src" /tmp/sj "$deps" --target sagejit $gpu_tests >"$out/build.log" 2>&1
stage "build rc=$? ($(grep -c '^\[' "$out/build.log") steps)"

# NVRTC for the runtime: pip's nvidia wheels next to torch, else the toolkit's (README.md: SAGEJIT_LIBRARY_DIRS).
nvrtc_dirs=$(find /opt /usr/local /usr/lib -name 'libnvrtc.so*' -printf '%h\n' 2>/dev/null | sort -u | paste -sd:)
export SAGEJIT_LIBRARY_DIRS=$nvrtc_dirs
stage "SAGEJIT_LIBRARY_DIRS=$SAGEJIT_LIBRARY_DIRS"

(cd /tmp/sj && timeout "$(left)" ./tests/test_gpu_key_mask) >"$out/key-mask.log" 2>&1
stage "test_gpu_key_mask rc=$? ($(grep -E '^\[doctest\] (test cases|assertions)' "$out/key-mask.log" | tr '\n' ' '))"

(cd /tmp/sj && timeout "$(( $(left) > 90 ? 90 : $(left) ))" compute-sanitizer --tool memcheck --error-exitcode 9 \
  ./tests/test_gpu_key_mask) >"$out/memcheck.log" 2>&1
stage "memcheck test_gpu_key_mask rc=$? ($(grep -E 'ERROR SUMMARY|not supported' "$out/memcheck.log" | head -2 | tr '\n' ' '))"

(cd "$src/python" && SAGEJIT_LIBRARY=/tmp/sj/runtime/libsagejit.so timeout "$(left)" python3 -m pytest -q \
  -p no:cacheprovider tests/test_key_mask_gpu.py) >"$out/python-key-mask.log" 2>&1
stage "test_key_mask_gpu.py rc=$? ($(tail -1 "$out/python-key-mask.log"))"

(cd /tmp/sj && timeout "$(left)" ctest -L gpu -j 4 -E test_gpu_key_mask --output-on-failure) >"$out/ctest-gpu.log" 2>&1
stage "ctest -L gpu (the others) rc=$? ($(grep -E 'tests passed|tests failed' "$out/ctest-gpu.log"))"

(cd "$src/python" && SAGEJIT_LIBRARY=/tmp/sj/runtime/libsagejit.so timeout "$(left)" python3 -m pytest -q \
  -p no:cacheprovider tests/test_op_gpu.py tests/test_sageattn_gpu.py tests/test_integrations_gpu.py) \
  >"$out/python-gpu.log" 2>&1
stage "other Python GPU tests rc=$? ($(tail -1 "$out/python-gpu.log"))"
