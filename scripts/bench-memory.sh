#!/usr/bin/env bash
# Memory of a full render (issue 38, item 8): wall time and peak RSS of `kiln render
# --no-cache` of synthetic platforms (examples/synth.rs), validated (the default) and with
# `--no-validate`, with the peak per BuildPlan. See docs/BENCHMARKS.md.
#
#   scripts/bench-memory.sh                       # 2000x5 10000x10, release
#   scripts/bench-memory.sh 200x5 500x5           # the sizes given
#   PROFILE=debug scripts/bench-memory.sh 200x5   # a debug build (correctness, not figures)
#   KILN=/path/to/kiln scripts/bench-memory.sh    # another binary (a before/after pair)
#
# Each run's `--timings` (load, evaluate, render, emit, write) goes to stderr after its row.
#
# Targets on the 2-core machine: < 20 s wall and < 2 GiB peak at 10,000 x 10 (100,000
# BuildPlans), < 64 KiB per BuildPlan at 2,000 x 5.
set -euo pipefail
cd "$(dirname "$0")/.."
SIZES=${*:-"2000x5 10000x10"}
PROFILE=${PROFILE:-release}
WORK=${WORK:-$(mktemp -d /tmp/kiln-bench-memory.XXXXXX)}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-target}
flag=()
[ "$PROFILE" = release ] && flag=(--release)
cargo build "${flag[@]}" --bin kiln --example synth >&2
KILN=${KILN:-$CARGO_TARGET_DIR/$PROFILE/kiln}
SYNTH=$CARGO_TARGET_DIR/$PROFILE/examples/synth

echo "$PROFILE, load: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores"
echo '| size | BuildPlans | run | wall s | CPU s | peak RSS MB | peak KiB per BuildPlan | out MB | files |'
echo '|---|---:|---|---:|---:|---:|---:|---:|---:|'
for size in $SIZES; do
  n=${size%x*}; e=${size#*x}
  dir=$WORK/$size
  rm -rf "$dir"; "$SYNTH" --components "$n" --environments "$e" "$dir" >/dev/null 2>&1
  plans=$((n * e))
  for run in validated --no-validate; do
    args=(render "$dir/platforms/synth" --write-to "$dir/out" --no-cache --timings)
    [ "$run" = validated ] || args+=("$run")
    /usr/bin/time -f "%e %U %S %M" -o "$WORK/time" "$KILN" "${args[@]}" >/dev/null 2>"$WORK/err" || {
      cat "$WORK/err" >&2; exit 1; }
    read -r wall user sys rss <"$WORK/time"
    out=$(du -sm "$dir/out" | cut -f1)
    files=$(find "$dir/out" -type f | wc -l)
    printf '| %s | %d | %s | %s | %.2f | %d | %.1f | %s | %s |\n' "$size" "$plans" "$run" "$wall" \
      "$(echo "$user + $sys" | bc)" "$((rss / 1024))" "$(echo "scale=1; $rss / $plans" | bc)" \
      "$out" "$files"
    sed -n '/timings/,$p' "$WORK/err" >&2
    rm -rf "$dir/out"
  done
  rm -rf "$dir"
done
