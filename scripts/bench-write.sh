#!/usr/bin/env bash
# The back half of a large render (issue 38, items 7 and 8): `kiln render --no-cache
# --timings` of a synthetic platform (examples/synth.rs) into a new output directory, its CPU
# (user + sys) and peak RSS, then `cp -r` of the tree it wrote, in the same run. See
# docs/BENCHMARKS.md, "The back half at 10,000 x 10".
#
#   scripts/bench-write.sh PLATFORM_DIR [OUT]      # e.g. /tmp/m10k/platforms/synth
#   KILN=/path/to/kiln scripts/bench-write.sh ...   # another binary (a before/after pair)
#
# The platform is made once with
#   cargo run --release --example synth -- --components 10000 --environments 10 /tmp/m10k
# OUT (default: a new directory under /tmp) is removed at the end (about 2 GB at 10,000 x 10).
# Both copies are written after a `sync`, so that neither pays for the other's dirty inode
# tables (ext4 skips inodes freed in the last 5 s, 305 s while their table block is dirty).
set -euo pipefail
cd "$(dirname "$0")/.."
PLATFORM=${1:?usage: scripts/bench-write.sh PLATFORM_DIR [OUT]}
OUT=${2:-$(mktemp -d /tmp/kiln-bench-write.XXXXXX)/out}
KILN=${KILN:-target/release/kiln}
[ -x "$KILN" ] || cargo build --release --bin kiln >&2
rm -rf "$OUT" "$OUT.cp"
sync
echo "load: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores, $KILN"
/usr/bin/time -f "kiln render: %e s wall, %U s user, %S s sys, %M KB peak RSS" \
  "$KILN" render "$PLATFORM" --write-to "$OUT" --no-cache --timings 2>&1 >/dev/null |
  grep -v '^kiln: warning\|^  (set\|^  [a-z0-9/-]*\.gen\.yaml'
echo "tree: $(du -sm "$OUT" | cut -f1) MB, $(find "$OUT" -type f | wc -l) files"
sync
/usr/bin/time -f "cp -r of the same tree: %e s wall, %U s user, %S s sys" cp -r "$OUT" "$OUT.cp"
rm -rf "$OUT" "$OUT.cp"
