#!/usr/bin/env bash
# Validation benchmarks (issue 36), see docs/BENCHMARKS.md:
#  1. validation's share of a full `kiln render` of the synthetic 2,000 x 5 platform: the same
#     render with and without `--no-validate` (no cache), wall / CPU / peak RSS from
#     /usr/bin/time, and `--timings` for the validate stage alone;
#  2. `kiln validate` on a 50 MB manifest stream (the synthetic render's `.gen.yaml` files
#     concatenated) against kiln's own parse of the same bytes (examples/validate_bench.rs,
#     in one process: parse, parse + validate, and printing every finding with its snippet),
#     and the whole `kiln validate FILE` command under /usr/bin/time; then the same for the
#     stream with one defect seeded in each Deployment (`replicas:` written `replica:`, an
#     unknown field), where the findings and their snippets are the cost.
#
#   scripts/bench-validate.sh                 # release build, 2000x5, 50 MB
#   STREAM_ONLY=1 scripts/bench-validate.sh   # only the 50 MB streams (a 200x5 render feeds them)
#   PROFILE=debug SIZE=50x5 MB=2 scripts/bench-validate.sh   # a quick correctness run
set -euo pipefail
cd "$(dirname "$0")/.."
STREAM_ONLY=${STREAM_ONLY:-}
SIZE=${SIZE:-$([ -n "$STREAM_ONLY" ] && echo 200x5 || echo 2000x5)}
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
if [ -z "$STREAM_ONLY" ]; then
  echo '| run | wall s | user s | sys s | CPU s | peak RSS MB | load |'
  echo '|---|---:|---:|---:|---:|---:|---:|'
  measure "$SIZE render, no cache, --no-validate" \
    "$KILN" render "$p" --write-to "$dir/deploy-nv" --no-cache --no-validate
  rm -rf "$dir/deploy-nv"
  measure "$SIZE render, no cache, validated" "$KILN" render "$p" --write-to "$dir/deploy" --no-cache
  rm -rf "$dir/deploy"
fi
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
# The same stream with a defect in each Deployment: one `kiln::k8s::unknown_field` each.
defects=$WORK/defects.yaml
sed 's/^  replicas: /  replica: /' "$stream" >"$defects"
echo
"$BENCH" "$stream" 3
"$BENCH" "$defects" 1 | tail -1
echo
echo '| run | wall s | user s | sys s | CPU s | peak RSS MB | load |'
echo '|---|---:|---:|---:|---:|---:|---:|'
mb=$(($(stat -c %s "$stream") / 1000000))
# Exit 1 (findings) is an expected outcome: the stream repeats the rendered files until it is
# large enough, so past the first round every object is a `kiln::check::duplicate_object`.
measure "kiln validate ($mb MB stream)" \
  sh -c '"$1" validate "$2"; [ $? -le 1 ]' - "$KILN" "$stream"
measure "kiln validate ($mb MB stream, a defect per Deployment)" \
  sh -c '"$1" validate "$2"; [ $? -le 1 ]' - "$KILN" "$defects"
measure "kiln validate -o json ($mb MB stream, a defect per Deployment)" \
  sh -c '"$1" validate -o json "$2"; [ $? -le 1 ]' - "$KILN" "$defects"
rm -rf "$WORK"
