#!/usr/bin/env bash
# The Python package on an NVIDIA GPU machine (the H200), end to end, as a user gets it:
#   bench/h200_python.sh <deps-prefix> <out-dir> [<previous-source-tree>]
# 1. `pip wheel .` there (its scikit-build-core, no build isolation: no internet), installed into the
#    machine's torch environment (as a user installs into theirs); wheel size and times printed.
# 2. The Python tests (CPU and GPU) against the INSTALLED wheel (SAGEJIT_TEST_INSTALLED=1).
# 3. bench/python_op_host.py: per-call host cost and first-call latency (the previous tree's Python
#    path too, in a process of its own, when <previous-source-tree> is given: built here too).
# <deps-prefix>: bench/h200_build.sh.
set -euo pipefail
deps=$(realpath "$1")
out=$(realpath -m "$2")
previous=${3:-}
mkdir -p "$out"
src=$(pwd)
source "$src/bench/h200_build.sh"

start=$(date +%s)
python3 -m pip wheel -q --no-deps --no-build-isolation -w /tmp/sj-dist \
  -Ccmake.define.CMAKE_PREFIX_PATH="$deps/usr" -Ccmake.define.CMAKE_INCLUDE_PATH="$deps/usr/include" . \
  2>&1 | tail -5
built=$(date +%s)
wheel=$(ls /tmp/sj-dist/sagejit-*.whl)
python3 -m pip install -q --no-deps --force-reinstall "$wheel"
bin=$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["scripts"])')
installed=$(date +%s)
echo "wheel $(basename "$wheel"): $(du -k "$wheel" | cut -f1) KiB, built in $((built - start)) s (16 cores), installed in $((installed - built)) s" | tee "$out/wheel.txt"

cd /tmp
SAGEJIT_TEST_INSTALLED=1 PATH=$bin:$PATH python3 -m pytest -q -p no:cacheprovider \
  "$src/python/tests" 2>&1 | tee "$out/pytest-installed.txt" | tail -25
cd "$src"

if [[ -n "$previous" ]]; then
  sj_build "$previous" /tmp/sj-previous "$deps" -DSAGEJIT_BUILD_TESTS=OFF -DSAGEJIT_BUILD_TOOLS=OFF \
    --target sagejit >/dev/null
  # The previous tree in a process of its own (two sagejit packages cannot share torch's op namespace).
  PYTHONPATH="$previous/python" SAGEJIT_LIBRARY=/tmp/sj-previous/runtime/libsagejit.so \
    python3 bench/python_op_host.py --label previous --json "$out/python_op_host-previous.json" \
    | tee "$out/python_op_host-previous.txt"
fi
python3 bench/python_op_host.py --label installed --json "$out/python_op_host.json" | tee "$out/python_op_host.txt"
