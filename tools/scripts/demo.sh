#!/usr/bin/env bash
# `make demo`: what the toolchain and GPU situation is, then the main job (precompile the gfx1201
# kernels with their tuning table), then the GPU selftest and host example where a GPU is present.
set -euo pipefail
build=${1:-build}
run_if() { [[ -x "$build/$1" ]]; }
if run_if tools/sagejit-info; then "$build/tools/sagejit-info"; fi
if run_if tools/sagejit-precompile; then
  # Into the build tree's system-cache layout, which `cmake --install` ships as <prefix>/share/sagejit/cache.
  "$build/tools/sagejit-precompile" --arch gfx1201 --system-cache "$build/share/sagejit/cache"
fi
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1 || [[ -e /dev/kfd ]]; then
  if run_if tools/sagejit-selftest; then "$build/tools/sagejit-selftest" --quick; fi
  if run_if examples/host_app; then "$build/examples/host_app"; fi
else
  echo "No GPU found: skipping sagejit-selftest and the host example."
fi
