#!/usr/bin/env python3
"""kiln vs real Helm (helm-python-sdk) on the largest charts of the shared corpus, one run.

    /path/to/venv/bin/python scripts/helm-bench.py [KILN_BINARY] [SHARED_CHARTS_DIR]

For each chart: the median of 5 renders of `kiln helm template` (a process each) and of
helm-python-sdk's `Chart.load(dir).render(...)` (in-process, so Helm pays no process start).
"""
import statistics
import subprocess
import sys
import time
from pathlib import Path

import helm_python as helm

kiln = sys.argv[1] if len(sys.argv) > 1 else "target/release/kiln"
root = Path(sys.argv[2] if len(sys.argv) > 2 else "../shared/charts")
charts = ["argo-cd", "kargo", "datadog", "prometheus", "cert-manager", "bitnami-postgresql"]


def timed(fn, n=5):
    out = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return statistics.median(out)


print("| chart | kiln (ms) | helm-python-sdk (ms) | speed-up |")
print("|---|---|---|---|")
for c in charts:
    d = root / c / "chart"
    k = timed(lambda: subprocess.run([kiln, "helm", "template", str(d), "rel", "-n", "ns", "--include-crds"],
                                     check=True, stdout=subprocess.DEVNULL))

    def h():
        with helm.Chart.load(str(d)) as ch:
            ch.render(None, name="rel", namespace="ns")
    hm = timed(h)
    print(f"| {c} | {k*1000:.0f} | {hm*1000:.0f} | {hm/k:.1f}x |")
