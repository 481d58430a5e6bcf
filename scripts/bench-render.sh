#!/usr/bin/env bash
# Render benchmarks (issue 13): synthetic platforms from examples/synth.rs, rendered by
# `kiln render`; wall, CPU (user+sys) and peak RSS from /usr/bin/time. See docs/BENCHMARKS.md.
#
#   scripts/bench-render.sh                      # 50x5 500x5 2000x5 10000x5 10000x10
#   SIZES="500x5 2000x5" scripts/bench-render.sh
#   KUBECTL=1 SIZES="50x5" scripts/bench-render.sh   # also one `kubectl kustomize` per dir
#   RUNS="one" SIZES="10000x10" scripts/bench-render.sh  # skip the no-cache runs
#
# Each size: a full render without cache, the same with 1 thread (RAYON_NUM_THREADS=1, for
# sizes up to 2000x5), a cold render filling the cache, a no-op re-render, and a re-render
# after changing one component: a file of its kustomize base, then its component.yaml. A
# no-op re-render is skipped by the render journal when inputs and output are unchanged; a
# change only the render reads (the base) re-renders that component's BuildPlans alone and
# reuses the rest of the tree (incremental); a changed component.yaml evaluates every
# BuildPlan again and takes the unchanged ones from the cache.
set -euo pipefail
cd "$(dirname "$0")/.."
SIZES=${SIZES:-"50x5 500x5 2000x5 10000x5 10000x10"}
# Which optional runs (the cold render and the no-op always run).
RUNS=${RUNS:-"nocache onethread one"}
want() { [[ " $RUNS " == *" $1 "* ]]; }
WORK=${WORK:-$(mktemp -d /tmp/kiln-bench-render.XXXXXX)}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-target}
cargo build --release --bin kiln --example synth >&2
KILN=$CARGO_TARGET_DIR/release/kiln
SYNTH=$CARGO_TARGET_DIR/release/examples/synth

measure() { # label, command...
  local label=$1; shift
  /usr/bin/time -f "%e %U %S %M" -o "$WORK/time" "$@" >/dev/null 2>"$WORK/err" || {
    cat "$WORK/err" >&2; exit 1; }
  read -r wall user sys rss <"$WORK/time"
  printf '| %s | %s | %.2f | %.2f | %.2f | %.0f | %s |\n' "$label" "$wall" "$user" "$sys" \
    "$(echo "$user + $sys" | bc)" "$((rss / 1024))" "$(cut -d' ' -f1 /proc/loadavg)"
}

echo "load: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores"
echo '| run | wall s | user s | sys s | CPU s | peak RSS MB | load |'
echo '|---|---:|---:|---:|---:|---:|---:|'
for size in $SIZES; do
  n=${size%x*}; e=${size#*x}
  dir=$WORK/$size
  rm -rf "$dir"; "$SYNTH" --components "$n" --environments "$e" "$dir" 2>/dev/null
  p=$dir/platforms/synth
  if want nocache; then
    measure "$size full, no cache" "$KILN" render "$p" --write-to "$dir/deploy-nc" --no-cache
    rm -rf "$dir/deploy-nc"
  fi
  if want onethread && [ "$n" -le 2000 ]; then
    RAYON_NUM_THREADS=1 measure "$size full, no cache, 1 thread" \
      "$KILN" render "$p" --write-to "$dir/deploy-1t" --no-cache
    rm -rf "$dir/deploy-1t"
  fi
  measure "$size cold, filling the cache" "$KILN" render "$p" --write-to "$dir/deploy" --cache-dir "$dir/cache"
  measure "$size no-op re-render" "$KILN" render "$p" --write-to "$dir/deploy" --cache-dir "$dir/cache"
  if want one; then
    sed -i 's/memory: 128Mi/memory: 160Mi/' "$dir/components/c00001/base/deployment.yaml"
    measure "$size one component changed" "$KILN" render "$p" --write-to "$dir/deploy" --cache-dir "$dir/cache"
    # The other kind of change: a component's own component.yaml (a parameter default).
    sed -i 's/default: "off"/default: "on"/' "$dir/components/c00002/component.yaml"
    measure "$size one component.yaml changed" "$KILN" render "$p" --write-to "$dir/deploy" --cache-dir "$dir/cache"
  fi
  if [ "${KUBECTL:-0}" = 1 ]; then
    # The Holos way: one `kubectl kustomize` per emitted component directory.
    dirs=$(find "$dir/deploy" -name kustomization.yaml -printf '%h\n' | sort)
    start=$(date +%s.%N)
    /usr/bin/time -f "%e %U %S %M" -o "$WORK/time" bash -c \
      'for d in "$@"; do /usr/bin/kubectl kustomize "$d" >/dev/null; done' _ $dirs
    read -r wall user sys rss <"$WORK/time"
    printf '| %s kubectl kustomize x %s dirs | %s | %.2f | %.2f | %.2f | %.0f | %s |\n' \
      "$size" "$(echo "$dirs" | wc -l)" "$wall" "$user" "$sys" "$(echo "$user + $sys" | bc)" \
      "$((rss / 1024))" "$(cut -d' ' -f1 /proc/loadavg)"
  fi
  rm -rf "$dir"
done
