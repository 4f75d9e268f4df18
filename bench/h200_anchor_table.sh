#!/usr/bin/env bash
# Issue 23's anchor table on the GPU machine, in one process (bench/anchor_table.py): sagejit's default
# Python path, SageAttention sm90, SDPA flash and cuDNN on the same inputs with one timer.
#   bench/h200_anchor_table.sh <deps-prefix> <sageattention-src> <out-dir> [anchor_table.py args...]
# Builds libsagejit (Release) into /tmp/sj-anchor unless $SAGEJIT_LIBRARY names one, and SageAttention's
# sm90 extensions in place (../shared/anchors/build_sageattention.sh, copied beside its source) unless
# both .so files are already there. <deps-prefix>: fmt, nlohmann_json, CLI11, xxHash, doctest headers.
# The table records the tree's git revision; the GPU machine's copy of the tree may carry stale git
# metadata, so pass SAGEJIT_REVISION=<commit> there (bench/anchor_table.py takes it over git).
set -euo pipefail
deps=$(realpath "$1") sage=$(realpath "$2") out=$(realpath -m "$3")
shift 3
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
source "$here/h200_build.sh"
if [[ -z "${SAGEJIT_LIBRARY:-}" ]]; then
  sj_build "$here/.." /tmp/sj-anchor "$deps" -DSAGEJIT_BUILD_TESTS=OFF -DSAGEJIT_BUILD_TOOLS=OFF --target sagejit >/dev/null
  export SAGEJIT_LIBRARY=/tmp/sj-anchor/runtime/libsagejit.so
fi
if [[ $(ls "$sage"/sageattention/_qattn_sm90*.so "$sage"/sageattention/_fused*.so 2>/dev/null | wc -l) -lt 2 ]]; then
  (cd "$sage" && bash ./build_sageattention.sh "$sage") >"$out/sage-build.log" 2>&1
fi
PYTHONPATH="$here/../python${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1 python3 "$here/anchor_table.py" \
  --sage "$sage" --out "$out" --command "bench/h200_anchor_table.sh <deps> <sageattention-src> <out-dir>${*:+ $*}" "$@"
