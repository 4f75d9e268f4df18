#!/usr/bin/env bash
# What-if timings of the sm_90 attention kernel on the GPU machine (issue 23): how much faster would it be
# without one of its costs? Each variant edits the kernel source of one build (the embedded kernels are
# rebuilt, nothing else) and keeps its bench_attention (linked statically), and every variant is timed in alternating
# rounds in one session on the same shapes and inputs. The variants compute wrong attention on purpose
# (their cos against fp64 is in the JSON): they bound what removing that cost could give, nothing more.
#   bench/h200_upper_bounds.sh <source-tree> <deps-prefix> <out-dir> [variant...]
# variants: shipped, no_exp2 (the softmax's ex2.approx.ftz.f32 becomes one FFMA: the MUFU pipe's share),
#           no_tile_barrier (the one-warpgroup TMA loop's CTA barrier per key tile removed: its share; racy).
# ROUNDS (default 2), ITERATIONS (default 10), SHAPES (default: bench_attention's anchor shapes of issue 23);
# every variant runs the tuning table's config of each shape (bench_attention's default).
set -uo pipefail
src=$(realpath "$1") deps=$(realpath "$2") out=$3
shift 3
variants=("$@")
[[ ${#variants[@]} -gt 0 ]] || variants=(shipped no_exp2 no_tile_barrier)
rounds=${ROUNDS:-2} iterations=${ITERATIONS:-10}
shapes=${SHAPES:-flux-4608-d128 video-16k-d128 wan-32k-d128 video-16k-d128-causal vae-8k-d64 llm-4k-d128-causal}
mkdir -p "$out"
source "$(dirname "$0")/h200_build.sh"
work=/tmp/sj-bounds
rm -rf "$work" && mkdir -p "$work" && cp -r "$src/." "$work/src"

edit() {  # edit <variant>: the source change of that variant, applied to $work/src (from the shipped tree)
  local kernel=$work/src/kernel_src/attention_sm90.cu mma=$work/src/kernel_src/arch/mma_sm80.h
  case $1 in
    shipped) ;;
    no_exp2)
      perl -0pi -e 's/asm\("ex2\.approx\.ftz\.f32 %0, %1;\\n" : "=f"\(y\) : "f"\(x\)\);/y = fmaf(x, 0.0009765625f, 1.0f);/' "$mma"
      grep -q 'y = fmaf(x, 0.0009765625f, 1.0f);' "$mma" ;;
    no_tile_barrier)
      perl -0pi -e 's/    sj_barrier\(\);\n    \{\n      const int next = tile \+ SJ_STAGES - 1;\n      if \(sj_thread_x\(\) == 0 && next < tiles\)/    {\n      const int next = tile + SJ_STAGES - 1;\n      if (sj_thread_x() == 0 \&\& next < tiles)/' "$kernel"
      ! grep -q -Pzo '    sj_barrier\(\);\n    \{\n      const int next = tile \+ SJ_STAGES - 1;\n      if \(sj_thread_x\(\) == 0' "$kernel" ;;
    *) echo "unknown variant $1" >&2; return 2 ;;
  esac
}

shape_args=()
for s in $shapes; do shape_args+=(--shape "$s"); done
for v in "${variants[@]}"; do
  cp -r "$src/kernel_src/." "$work/src/kernel_src/"  # back to the shipped kernels
  if ! edit "$v"; then echo "variant $v: its edit did not apply" >&2; exit 1; fi
  sj_build "$work/src" "$work/build" "$deps" --target bench_attention >"$out/build-$v.log" 2>&1
  echo "[$SECONDS s] build $v rc=$?"
  cp "$work/build/bench/bench_attention" "$work/bench_attention-$v"
done
for round in $(seq 1 "$rounds"); do
  for v in "${variants[@]}"; do
    SAGEJIT_CACHE_DIR="$work/cache-$v" "$work/bench_attention-$v" "${shape_args[@]}" \
      --iterations "$iterations" >"$out/bounds-$v-$round.json" 2>"$out/bounds-$v-$round.err"
    echo "[$SECONDS s] $v round $round rc=$?"
  done
done
python3 - "$out" "$rounds" "${variants[@]}" <<'EOF'
import json, statistics, sys
out, rounds, variants = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
tops = {}
for v in variants:
    for r in range(1, rounds + 1):
        try:
            for row in json.load(open(f"{out}/bounds-{v}-{r}.json"))["results"]:
                tops.setdefault((row["shape"], v), []).append((row["tops"], row.get("cos")))
        except (OSError, ValueError, KeyError) as error:
            print(f"{v} round {r}: {error}")
shapes = sorted({s for s, _ in tops})
print("| shape | " + " | ".join(variants) + " |")
print("|---|" + "---|" * len(variants))
for s in shapes:
    cells = []
    for v in variants:
        runs = tops.get((s, v), [])
        cos = runs[0][1] if runs else None
        cells.append(f"{statistics.median(t for t, _ in runs):.0f} ({'/'.join(f'{t:.0f}' for t, _ in runs)}"
                     + (f"; cos {cos:.4f})" if cos is not None else ")") if runs else "n/a")
    print(f"| {s} | " + " | ".join(cells) + " |")
EOF
