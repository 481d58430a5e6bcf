#!/usr/bin/env bash
# Validation benchmarks (issue 36), see docs/BENCHMARKS.md:
#  1. validation's share of a full `kiln render` of the synthetic 2,000 x 5 platform: the same
#     render with and without `--no-validate` (no cache), wall / CPU / peak RSS from
#     /usr/bin/time, and `--timings` for the validate stage alone;
#  2. `kiln validate` on a 50 MB manifest stream (the synthetic render's `.gen.yaml` files
#     concatenated) against kiln's own parse of the same bytes (examples/validate_bench.rs,
#     in one process), and the whole `kiln validate FILE` command under /usr/bin/time.
#
#   scripts/bench-validate.sh                 # release build, 2000x5, 50 MB
#   PROFILE=debug SIZE=50x5 MB=2 scripts/bench-validate.sh   # a quick correctness run
set -euo pipefail
cd "$(dirname "$0")/.."
SIZE=${SIZE:-2000x5}
MB=${MB:-50}
PROFILE=${PROFILE:-release}
WORK=${WORK:-$(mktemp -d /tmp/kiln-bench-validate.XXXXXX)}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-target}
flag=--release; [ "$PROFILE" = debug ] && flag=
cargo build $flag --bin kiln --example synth --example validate_bench >&2
KILN=$CARGO_TARGET_DIR/$PROFILE/kiln
SYNTH=$CARGO_TARGET_DIR/$PROFILE/examples/synth
BENCH=$CARGO_TARGET_DIR/$PROFILE/examples/validate_bench

measure() { # label, command...
  local label=$1; shift
  /usr/bin/time -f "%e %U %S %M" -o "$WORK/time" "$@" >"$WORK/out" 2>"$WORK/err" || {
    cat "$WORK/err" >&2; exit 1; }
  read -r wall user sys rss <"$WORK/time"
  printf '| %s | %s | %.2f | %.2f | %.2f | %.0f | %s |\n' "$label" "$wall" "$user" "$sys" \
    "$(echo "$user + $sys" | bc)" "$((rss / 1024))" "$(cut -d' ' -f1 /proc/loadavg)"
}

n=${SIZE%x*}; e=${SIZE#*x}
dir=$WORK/$SIZE
rm -rf "$dir"; "$SYNTH" --components "$n" --environments "$e" "$dir" 2>/dev/null
p=$dir/platforms/synth
echo "load: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores, $PROFILE build"
echo '| run | wall s | user s | sys s | CPU s | peak RSS MB | load |'
echo '|---|---:|---:|---:|---:|---:|---:|'
measure "$SIZE render, no cache, --no-validate" \
  "$KILN" render "$p" --write-to "$dir/deploy-nv" --no-cache --no-validate
rm -rf "$dir/deploy-nv"
measure "$SIZE render, no cache, validated" "$KILN" render "$p" --write-to "$dir/deploy" --no-cache
rm -rf "$dir/deploy"
"$KILN" render "$p" --write-to "$dir/deploy" --no-cache --timings 2>"$WORK/timings" >/dev/null
echo; echo "\`--timings\` of the validated render:"; grep -E "^ +(render|emit|validate|total) " "$WORK/timings" | sed 's/^/    /'

# A stream of at least $MB MB from the rendered objects.
stream=$WORK/stream.yaml
: >"$stream"
find "$dir/deploy" -name '*.gen.yaml' | sort >"$WORK/files"
while [ "$(stat -c %s "$stream")" -lt $((MB * 1000000)) ]; do
  while IFS= read -r f; do
    printf -- '---\n' >>"$stream"; cat "$f" >>"$stream"
    if [ "$(stat -c %s "$stream")" -ge $((MB * 1000000)) ]; then break; fi
  done <"$WORK/files"
done
echo
"$BENCH" "$stream" 3
echo
echo '| run | wall s | user s | sys s | CPU s | peak RSS MB | load |'
echo '|---|---:|---:|---:|---:|---:|---:|'
measure "kiln validate ($(($(stat -c %s "$stream") / 1000000)) MB stream)" "$KILN" validate "$stream"
rm -rf "$WORK"
