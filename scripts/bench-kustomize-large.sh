#!/usr/bin/env bash
# Issue 11 part 4 (docs/BENCHMARKS.md): `kiln kustomize` on large documents and many patch
# entries, side by side with `kubectl kustomize` and with the floor, in one run.
#
# 1. Large documents: the ten largest roots of the reference corpus (by output bytes,
#    <shared>/corpus/roots.tsv). For each: kiln's CPU time (user + system, best of KILN_RUNS),
#    the floor (the `yaml_roundtrip` example parsing and emitting kubectl's expected output
#    once: the same bytes in, the same bytes out, best of KILN_RUNS) and kubectl's (one run).
#    kiln's output is checked byte-equal to the expected file.
# 2. Many patches: PATCHES (default "1000 2000 4000") ConfigMaps, and as many `patches:`
#    entries, each a JSON patch whose target names one ConfigMap. kubectl runs on the first
#    size only (it is quadratic and slow); the outputs are compared byte for byte.
#
# CPU time, not wall time, is the figure to read on a loaded machine.
# Environment: KILN_SHARED_DIR (default ../shared), KILN_RUNS=5, KUBECTL=/usr/bin/kubectl,
# PATCHES="1000 2000 4000", SKIP_KUBECTL=1 (kiln and the floor only).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SHARED="${KILN_SHARED_DIR:-$ROOT/../shared}"
CORPUS="$SHARED/corpus"
KILN_RUNS="${KILN_RUNS:-5}"
KUBECTL="${KUBECTL:-/usr/bin/kubectl}"
PATCHES="${PATCHES:-1000 2000 4000}"
SKIP_KUBECTL="${SKIP_KUBECTL:-}"
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"

[[ -f "$CORPUS/roots.tsv" ]] || { echo "no corpus at $CORPUS (set KILN_SHARED_DIR)" >&2; exit 1; }
WORK="$(mktemp -d -t kiln-bench11.XXXXXX)"
trap 'rm -rf "$WORK"' EXIT

echo "building kiln and the yaml_roundtrip example (release)…" >&2
(cd "$ROOT" && cargo build --release --quiet --bin kiln --example yaml_roundtrip)
KILN="$TARGET/release/kiln"
FLOOR="$TARGET/release/examples/yaml_roundtrip"

# cpu OUT CMD... -> "cpu_s wall_s": one run, stdout to OUT (user + system from /usr/bin/time)
cpu() {
  local out="$1"; shift
  /usr/bin/time -o "$WORK/t" -f '%U %S %e' "$@" >"$out" 2>/dev/null
  awk '{printf "%.3f %.2f\n", $1 + $2, $3}' "$WORK/t"
}
# best RUNS OUT CMD... -> the run with the least CPU time
best() {
  local runs="$1" out="$2"; shift 2
  for ((r = 0; r < runs; r++)); do cpu "$out" "$@"; done | sort -n | head -1
}
ratio() { python3 -c "a, b = float('$1'), float('$2'); print(f'{a / b:.1f}×' if b > 0 else '–')"; }

echo
echo "machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "kiln $(cd "$ROOT" && git rev-parse --short HEAD), kubectl $("$KUBECTL" version --client 2>/dev/null | head -1)"
echo
echo "| root | output | kubectl CPU (wall) | kiln CPU (wall) | floor CPU | kiln / floor | kubectl / kiln | output equal |"
echo "|---|---:|---:|---:|---:|---:|---:|---|"
tail -n +2 "$CORPUS/roots.tsv" | sort -t$'\t' -k7,7nr | head -10 |
while IFS=$'\t' read -r id _repo dir flags expected _res out_bytes _rest; do
  args=()
  [[ "$flags" != "-" ]] && args=($flags)
  read -r k_cpu k_wall < <(best "$KILN_RUNS" "$WORK/kiln.yaml" "$KILN" kustomize "$CORPUS/$dir" "${args[@]}")
  read -r f_cpu _ < <(best "$KILN_RUNS" "$WORK/floor.yaml" "$FLOOR" "$CORPUS/$expected")
  same=$(cmp -s "$WORK/kiln.yaml" "$CORPUS/$expected" && echo yes || echo NO)
  if [[ -z "$SKIP_KUBECTL" ]]; then
    read -r c_cpu c_wall < <(cpu "$WORK/kubectl.yaml" "$KUBECTL" kustomize "$CORPUS/$dir" "${args[@]}")
    kub="$c_cpu s ($c_wall s)"; vs=$(ratio "$c_cpu" "$k_cpu")
  else
    kub="–"; vs="–"
  fi
  mb=$(python3 -c "print(f'{$out_bytes / 1e6:.2f} MB')")
  echo "| $id $dir | $mb | $kub | $k_cpu s ($k_wall s) | $f_cpu s | $(ratio "$k_cpu" "$f_cpu") | $vs | $same |"
done

gen_patches() { # gen_patches DIR N: N ConfigMaps, N patch entries naming one each
  python3 - "$1" "$2" <<'PY'
import os, sys
root, n = sys.argv[1], int(sys.argv[2])
os.makedirs(root)
with open(os.path.join(root, "objects.yaml"), "w") as f:
    f.write("---\n".join(f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-{i:05d}\ndata:\n  a: '1'\n" for i in range(n)))
with open(os.path.join(root, "kustomization.yaml"), "w") as f:
    f.write("resources:\n- objects.yaml\npatches:\n")
    for i in range(n):
        f.write(f"- target:\n    kind: ConfigMap\n    name: cm-{i:05d}\n  patch: |-\n    - op: add\n      path: /data/b\n      value: '{i}'\n")
PY
}

echo
echo "| patch entries × objects | kubectl CPU (wall) | kiln CPU (wall) | kiln CPU per entry | output equal |"
echo "|---|---:|---:|---:|---|"
first=1
for n in $PATCHES; do
  dir="$WORK/patches-$n"
  gen_patches "$dir" "$n"
  read -r k_cpu k_wall < <(best "$KILN_RUNS" "$WORK/kiln.yaml" "$KILN" kustomize "$dir")
  kub="–"; same="–"
  if [[ -z "$SKIP_KUBECTL" && "$first" == 1 ]]; then
    read -r c_cpu c_wall < <(cpu "$WORK/kubectl.yaml" "$KUBECTL" kustomize "$dir")
    kub="$c_cpu s ($c_wall s)"
    same=$(cmp -s "$WORK/kiln.yaml" "$WORK/kubectl.yaml" && echo yes || echo NO)
  fi
  first=0
  per=$(python3 -c "print(f'{$k_cpu / $n * 1e6:.0f} µs')")
  echo "| $n × $n | $kub | $k_cpu s ($k_wall s) | $per | $same |"
done
