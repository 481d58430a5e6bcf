#!/usr/bin/env bash
# `kiln status` benchmarks (issue 35), see docs/BENCHMARKS.md, in one run:
#  1. the Git half: `kiln::git::read_branch` over 1,000 components x 10 environments written
#     in 10,000 promotion commits (examples/status_bench.rs, past=1 and past=2);
#  2. the whole status, drift included: the synthetic platform (Kargo, one Stage per
#     component and environment) rendered in memory (not timed), 10,000 promotion commits as
#     `kiln promote`'s runner makes them, then `kiln::status::status` over every cell, the drift
#     check of every Stage cell included (`--status`).
#
#   scripts/bench-status.sh                            # release build, 1000 x 10
#   PROFILE=debug COMPONENTS=100 ENVIRONMENTS=5 scripts/bench-status.sh   # a quick run
set -euo pipefail
cd "$(dirname "$0")/.."
COMPONENTS=${COMPONENTS:-1000}
ENVIRONMENTS=${ENVIRONMENTS:-10}
PROFILE=${PROFILE:-release}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-target}
flag=--release; [ "$PROFILE" = debug ] && flag=
cargo build $flag --example status_bench >&2
BENCH=$CARGO_TARGET_DIR/$PROFILE/examples/status_bench
echo "## $PROFILE, $COMPONENTS x $ENVIRONMENTS, $(date -u +%FT%TZ), load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "### the Git half (read_branch)"
"$BENCH" "$COMPONENTS" "$ENVIRONMENTS"
echo "### the whole kiln status, drift of every Stage cell included"
"$BENCH" --status "$COMPONENTS" "$ENVIRONMENTS"
