#!/usr/bin/env bash
# The one CMake build of the bench/h200_*.sh scripts on the GPU machine, sourced by them (not run).
# The machine has no apt: <deps-prefix> holds the header-only dependencies (fmt, nlohmann_json, CLI11,
# doctest, xxHash) with their CMake configs, copied from the Debian packages.
#   sj_build <source-tree> <build-dir> <deps-prefix> [cmake -D... ...] [--target <target>...]
# Release, Ninja, every core; without --target it builds everything.
#   sj_bench_rounds <out-dir> <rounds> <iterations> [bench_attention args...]
# bench_attention of the trees built in /tmp/sj-before and /tmp/sj-after, alternating within each round,
# to <out-dir>/bench-<tree>-<round>.json (.err beside it).
sj_build() {
  local src=$1 dir=$2 deps=$3 configure=() targets=()
  shift 3
  while [[ $# -gt 0 && $1 != --target ]]; do configure+=("$1"); shift; done
  [[ $# -gt 0 ]] && { shift; targets=(--target "$@"); }
  cmake -S "$src" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$deps/usr" \
    -DCMAKE_INCLUDE_PATH="$deps/usr/include" "${configure[@]}" && cmake --build "$dir" -j "$(nproc)" "${targets[@]}"
}
sj_bench_rounds() {
  local out=$1 rounds=$2 iterations=$3 round tree
  shift 3
  for round in $(seq 1 "$rounds"); do
    for tree in before after; do
      /tmp/sj-$tree/bench/bench_attention "$@" --iterations "$iterations" >"$out/bench-$tree-$round.json" \
        2>"$out/bench-$tree-$round.err"
      echo "$tree bench round $round rc=$?"
    done
  done
}
