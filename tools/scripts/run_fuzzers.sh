#!/usr/bin/env bash
# Runs every libFuzzer target of a build briefly (make sanitize). Usage: run_fuzzers.sh BUILD_DIR [SECONDS]
# Each target starts from a seed corpus (the shipped tables and the test tables) copied to a scratch
# dir, so the repository is never written. Exits non-zero when a fuzzer finds a crash.
set -euo pipefail

build_dir=${1:?usage: run_fuzzers.sh BUILD_DIR [SECONDS]}
seconds=${2:-${SAGEJIT_FUZZ_SECONDS:-30}}
repo=$(cd "$(dirname "$0")/../.." && pwd)

shopt -s nullglob
targets=("$build_dir"/fuzz/fuzz_*)
if [ ${#targets[@]} -eq 0 ]; then
  echo "run_fuzzers: no fuzz targets in $build_dir/fuzz (configure with -DSAGEJIT_FUZZ=ON and clang++ installed); skipped"
  exit 0
fi

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
status=0
for target in "${targets[@]}"; do
  [ -x "$target" ] || continue
  name=$(basename "$target")
  corpus="$scratch/$name/corpus"
  mkdir -p "$corpus" "$scratch/$name/artifacts"
  for seed in "$repo"/configs/*.json "$repo"/tests/data/tuning/*.json "$repo"/tests/data/tuning/*/*.json; do
    cp "$seed" "$corpus/$(echo "$seed" | sed "s|$repo/||; s|/|_|g")"
  done
  echo "run_fuzzers: $name for ${seconds}s"
  if ! "$target" -max_total_time="$seconds" -max_len=16384 -timeout=10 -rss_limit_mb=2048 \
       -artifact_prefix="$scratch/$name/artifacts/" "$corpus" 2> "$scratch/$name/log"; then
    status=1
    tail -n 60 "$scratch/$name/log"
    mkdir -p "$build_dir/fuzz/findings"
    cp "$scratch/$name/artifacts/"* "$build_dir/fuzz/findings/" 2>/dev/null || true
    echo "run_fuzzers: $name FAILED (inputs kept in $build_dir/fuzz/findings)"
  else
    grep -E "^(#[0-9]+ +DONE|Done)" "$scratch/$name/log" | tail -n 1 || true
    echo "run_fuzzers: $name ok"
  fi
done
exit $status
