#!/usr/bin/env bash
# Benchmarks `kiln kustomize` against `kubectl kustomize` side by side (docs/BENCHMARKS.md).
#
# Generates, deterministically and into a temp dir, one kustomization tree per size:
#   small   a base of 10 objects + an overlay (namespace, namePrefix, labels, images, a
#           strategic-merge patch, a configMapGenerator merged into the base's generator);
#   N       a base of N objects (N/4 units of Deployment + Service + ServiceAccount + ConfigMap,
#           one file per unit) with the same overlay; every Deployment references the generated
#           ConfigMap (envFrom and a volume), its own ConfigMap and its ServiceAccount, and every
#           Deployment is patched (target: kind Deployment).
#   Nf      the same objects in a single base file (`8000f`): one large YAML stream.
#   mN      many entries (`m1000`): N ConfigMaps in one file, and one kustomization with N
#           configMapGenerators and N JSON patches, each targeting one ConfigMap by name.
# Builds kiln in release mode, times both tools on every tree (hyperfine when installed,
# otherwise a `date +%s%N` loop), checks the two outputs are structurally equal and prints a
# markdown table.
#
# Environment:
#   SIZES="small 500 1000 2000 4000 8000 8000f"   trees to run
#   KILN_RUNS=10  KUBECTL_RUNS=3            runs per tool (KUBECTL_RUNS_LARGE for N >= 4000)
#   KUBECTL_RUNS_LARGE=1                    (then the one run that captures the output is
#                                           also the timed one: kubectl takes minutes there)
#   KUBECTL=/usr/bin/kubectl                the reference
#   SKIP_KUBECTL=1                          time kiln only (profiling loop)
#   KEEP=1                                  keep the temp dir (its path is printed)
#   RSS=1                                   also report peak RSS (/usr/bin/time)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SIZES="${SIZES:-small 500 1000 2000 4000 8000 8000f}"
KILN_RUNS="${KILN_RUNS:-10}"
KUBECTL_RUNS="${KUBECTL_RUNS:-3}"
KUBECTL_RUNS_LARGE="${KUBECTL_RUNS_LARGE:-1}"
KUBECTL="${KUBECTL:-/usr/bin/kubectl}"
SKIP_KUBECTL="${SKIP_KUBECTL:-}"
RSS="${RSS:-1}"

WORK="$(mktemp -d -t kiln-bench.XXXXXX)"
if [[ -z "${KEEP:-}" ]]; then trap 'rm -rf "$WORK"' EXIT; else echo "trees kept in $WORK" >&2; fi

echo "building kiln (release)…" >&2
(cd "$ROOT" && cargo build --release --quiet)
KILN="$ROOT/target/release/kiln"

# ---- tree generation (deterministic: no randomness, no clock) ----------------------------
gen_many() { # gen_many DIR N
  python3 - "$1" "$2" <<'PY'
import os, sys
root, n = sys.argv[1], int(sys.argv[2])
overlay = os.path.join(root, "overlay")
os.makedirs(overlay)
with open(os.path.join(overlay, "cms.yaml"), "w") as f:
    f.write("---\n".join(f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-{i}\ndata:\n  a: '1'\n" for i in range(n)))
with open(os.path.join(overlay, "kustomization.yaml"), "w") as f:
    f.write("resources:\n- cms.yaml\nnamePrefix: p-\nconfigMapGenerator:\n")
    for i in range(n):
        f.write(f"- name: gen-{i}\n  literals:\n  - K{i}=v{i}\n")
    f.write("patches:\n")
    for i in range(n):
        f.write(f"- target:\n    kind: ConfigMap\n    name: cm-{i}\n  patch: |-\n    - op: add\n      path: /data/b\n      value: '{i}'\n")
PY
}

gen_tree() { # gen_tree DIR N ONEFILE(0|1)
  python3 - "$1" "$2" "$3" <<'PY'
import os, sys
root, n, onefile = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1"
base, overlay = os.path.join(root, "base"), os.path.join(root, "overlay")
os.makedirs(base); os.makedirs(overlay)

def unit(i):
    # Four objects per unit; the Deployment refers to the three others and to the
    # generated `app-config` (so the name-reference fix-up has real work to do).
    return f"""apiVersion: apps/v1
kind: Deployment
metadata:
  name: app-{i}
  labels:
    app: app-{i}
spec:
  replicas: 1
  selector:
    matchLabels:
      app: app-{i}
  template:
    metadata:
      labels:
        app: app-{i}
    spec:
      serviceAccountName: sa-{i}
      containers:
      - name: main
        image: nginx:1.25
        ports:
        - containerPort: 8080
        envFrom:
        - configMapRef:
            name: app-config
        env:
        - name: UNIT
          value: "{i}"
        volumeMounts:
        - name: own
          mountPath: /etc/own
      - name: sidecar
        image: busybox:1.36
        args: ["sleep", "infinity"]
      volumes:
      - name: own
        configMap:
          name: cm-{i}
---
apiVersion: v1
kind: Service
metadata:
  name: svc-{i}
spec:
  selector:
    app: app-{i}
  ports:
  - port: 80
    targetPort: 8080
---
apiVersion: v1
kind: ServiceAccount
metadata:
  name: sa-{i}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: cm-{i}
data:
  unit: "{i}"
  settings.properties: |
    threads=4
    unit={i}
"""

units = max(1, n // 4) if n >= 4 else 1
files = []
if n < 20:
    # The small overlay: ~10 objects in a handful of files.
    units = 2
if onefile:
    with open(os.path.join(base, "all.yaml"), "w") as f:
        f.write("---\n".join(unit(i) for i in range(units)))
    files.append("all.yaml")
else:
    for i in range(units):
        name = f"unit-{i:05d}.yaml"
        with open(os.path.join(base, name), "w") as f:
            f.write(unit(i))
        files.append(name)
extra = ""
if n < 20:
    # Two more objects so the small base holds 10.
    with open(os.path.join(base, "rbac.yaml"), "w") as f:
        f.write("""apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: reader
rules:
- apiGroups: [""]
  resources: ["configmaps"]
  verbs: ["get"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: reader
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: Role
  name: reader
subjects:
- kind: ServiceAccount
  name: sa-0
""")
    files.append("rbac.yaml")
with open(os.path.join(base, "kustomization.yaml"), "w") as f:
    f.write("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n")
    for name in files:
        f.write(f"- {name}\n")
    f.write("""configMapGenerator:
- name: app-config
  literals:
  - LOG_LEVEL=info
  - FEATURE_X=off
""")
with open(os.path.join(overlay, "kustomization.yaml"), "w") as f:
    f.write("""apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
- ../base
namespace: bench
namePrefix: prod-
labels:
- pairs:
    env: prod
    team: platform
  includeSelectors: false
images:
- name: nginx
  newName: registry.example.com/mirror/nginx
  newTag: "1.27.3"
- name: busybox
  digest: sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef
patches:
- path: resources-patch.yaml
  target:
    kind: Deployment
configMapGenerator:
- name: app-config
  behavior: merge
  literals:
  - LOG_LEVEL=warn
  - REGION=eu-west-1
""")
with open(os.path.join(overlay, "resources-patch.yaml"), "w") as f:
    f.write("""apiVersion: apps/v1
kind: Deployment
metadata:
  name: any
spec:
  replicas: 3
  template:
    spec:
      containers:
      - name: main
        resources:
          limits:
            memory: 256Mi
          requests:
            cpu: 100m
""")
PY
}

# ---- structural comparison ----------------------------------------------------------------
same_output() { # same_output A B -> prints "equal (N docs)" or a reason, returns 0/1
  if cmp -s "$1" "$2"; then
    echo "identical bytes ($(grep -c '^kind:' "$1") docs)"; return 0
  fi
  python3 - "$1" "$2" <<'PY'
import sys, yaml
Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
a = [d for d in yaml.load_all(open(sys.argv[1]), Loader=Loader) if d is not None]
b = [d for d in yaml.load_all(open(sys.argv[2]), Loader=Loader) if d is not None]
if a == b:
    print(f"structurally equal ({len(a)} docs)"); sys.exit(0)
ids = lambda ds: [(d.get("kind"), d.get("metadata", {}).get("name")) for d in ds]
if len(a) != len(b):
    print(f"DIFFERENT: {len(a)} vs {len(b)} docs"); sys.exit(1)
for i, (x, y) in enumerate(zip(a, b)):
    if x != y:
        print(f"DIFFERENT: first difference at doc {i}: {ids([x])[0]} vs {ids([y])[0]}"); sys.exit(1)
PY
}

# ---- timing ------------------------------------------------------------------------------
# measure RUNS CMD... -> "mean_wall_s cpu_s" (process start to exit, output to /dev/null;
# cpu = user + system, which other load on the machine disturbs less than wall time)
measure() {
  local runs="$1"; shift
  if command -v hyperfine >/dev/null; then
    local json="$WORK/hf.json"
    hyperfine -N --style none --warmup 1 --runs "$runs" --export-json "$json" \
      --output null -- "$(printf '%q ' "$@")" >/dev/null 2>&1
    python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["results"][0]; print(r["mean"], r["user"]+r["system"])' "$json"
  else
    local total=0 t0 t1
    "$@" >/dev/null 2>&1
    for ((r = 0; r < runs; r++)); do
      t0=$(date +%s%N); "$@" >/dev/null 2>&1; t1=$(date +%s%N)
      total=$((total + t1 - t0))
    done
    python3 -c "print($total / $runs / 1e9, 'nan')"
  fi
}

# once OUT CMD... -> runs CMD once, output to OUT; prints "wall_s cpu_s peak_rss_kib"
once() {
  local out="$1"; shift
  if [[ -x /usr/bin/time ]]; then
    /usr/bin/time -o "$WORK/time.txt" -f '%e %U %S %M' "$@" >"$out"
    awk '{print $1, $2 + $3, $4}' "$WORK/time.txt"
  else
    local t0 t1; t0=$(date +%s%N); "$@" >"$out"; t1=$(date +%s%N)
    python3 -c "print(($t1 - $t0) / 1e9, 'nan', 'nan')"
  fi
}

fmt_time() { python3 -c "
t=float('$1')
print('–' if t != t else (f'{t*1000:.1f} ms' if t < 1 else f'{t:.2f} s'))"; }
fmt_mib() { python3 -c "
k=float('$1')
print('–' if k != k else f'{k/1024:.0f} MiB')"; }

echo
echo "machine: $(nproc) cores, $(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo), load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "kubectl: $("$KUBECTL" version --client 2>/dev/null | tr '\n' ' ')"
echo "kiln:    $KILN ($(cd "$ROOT" && git rev-parse --short HEAD 2>/dev/null || echo '?'))"
echo "runs:    kiln $KILN_RUNS (+1 warm-up), kubectl $KUBECTL_RUNS (+1 warm-up; $KUBECTL_RUNS_LARGE from 4,000 objects)"
echo
echo "| size | objects | kubectl | kiln | ratio | kiln CPU | kiln objects/s | kiln peak RSS | kubectl peak RSS | outputs |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|"
for size in $SIZES; do
  n="${size%f}"; onefile=0
  [[ "$size" == *f ]] && onefile=1
  [[ "$n" == small ]] && n=10
  dir="$WORK/tree-$size"
  if [[ "$size" == m* ]]; then
    n="${size#m}"; gen_many "$dir" "$n"
  else
    gen_tree "$dir" "$n" "$onefile"
  fi
  ov="$dir/overlay"
  read -r _ _ kiln_rss < <(once "$dir/kiln.yaml" "$KILN" kustomize "$ov")
  objects=$(grep -c '^kind:' "$dir/kiln.yaml" || true)
  read -r kiln_t kiln_cpu < <(measure "$KILN_RUNS" "$KILN" kustomize "$ov")
  if [[ -z "$SKIP_KUBECTL" ]]; then
    runs="$KUBECTL_RUNS"; [[ "$n" -ge 4000 ]] && runs="$KUBECTL_RUNS_LARGE"
    read -r kub_t _ kub_rss < <(once "$dir/kubectl.yaml" "$KUBECTL" kustomize "$ov")
    if [[ "$runs" -gt 1 ]]; then
      read -r kub_t _ < <(measure "$runs" "$KUBECTL" kustomize "$ov")
    fi
    verdict=$(same_output "$dir/kubectl.yaml" "$dir/kiln.yaml" || true)
    ratio=$(python3 -c "print(f'{$kub_t / $kiln_t:.0f}×')")
  else
    verdict="not compared"; ratio="–"; kub_t=nan; kub_rss=nan
  fi
  ops=$(python3 -c "print(f'{$objects / $kiln_t:,.0f}')")
  [[ "$RSS" == 1 ]] || { kiln_rss=nan; kub_rss=nan; }
  echo "| $size | $objects | $(fmt_time "$kub_t") | $(fmt_time "$kiln_t") | $ratio | $(fmt_time "$kiln_cpu") | $ops | $(fmt_mib "$kiln_rss") | $(fmt_mib "$kub_rss") | $verdict |"
done
