#!/usr/bin/env python3
"""RSA key generation, kiln against Helm, in CPU seconds per key (docs/BENCHMARKS.md).

    cargo build --release -p kiln-helm --example keygen_bench
    $HELM_VENV/bin/python scripts/bench-keygen.py [--bench target/release/examples/keygen_bench]
        [--keys-2048 16] [--keys-4096 2] [--runs 3]

kiln: crates/kiln-helm/examples/keygen_bench (the key generation `genCA` and
`genPrivateKey "rsa"` call, nothing else) as a process, its CPU time from the kernel
(user + system of the child), minus the same process making no key.
Helm: helm-python-sdk in process (Helm v4.2.3's Go, `Chart.load` + client dry-run install of a
chart whose one template calls `genCA "x" 365` (an RSA-2048 key and one signature) or
`genPrivateKey "rsa"` (RSA-4096) N times), `time.process_time()` around it (every Go thread
counted), minus the same chart with N = 0.
The sides take turns, run by run; each figure is the median of the runs. Both draw random
numbers, so the time per key varies with the gaps between primes: use enough keys.
"""

import argparse
import resource
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import helm_python as helm


def chart(root, name, call, n):
    d = Path(root) / name
    (d / "templates").mkdir(parents=True)
    (d / "Chart.yaml").write_text(f"apiVersion: v2\nname: {name}\nversion: 0.1.0\n")
    (d / "templates" / "k.yaml").write_text(
        "{{- range until %d }}{{ $k := %s }}{{ end }}\n" % (n, call))
    return d


def helm_cpu(chart_dir):
    cfg = helm.Config(storage_driver="memory", namespace="ns")
    t = time.process_time()
    try:
        with helm.Chart.load(str(chart_dir)) as c:
            cfg.install(c, "rel", {}, namespace="ns", dry_run="client")
    finally:
        cfg.close()
    return time.process_time() - t


def kiln_cpu(bench, bits, n):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([bench, str(bits), str(n)], check=True, capture_output=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bench", default="target/release/examples/keygen_bench")
    ap.add_argument("--keys-2048", type=int, default=16)
    ap.add_argument("--keys-4096", type=int, default=2)
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args()
    root = tempfile.mkdtemp(prefix="kiln-keygen-bench-")
    cases = [(2048, a.keys_2048, 'genCA "x" 365'), (4096, a.keys_4096, 'genPrivateKey "rsa"')]
    empty = chart(root, "none", '""', 0)
    print("| key | keys | kiln (CPU ms per key, runs) | Helm (CPU ms per key, runs) | Helm / kiln |")
    print("|---|---|---|---|---|")
    for bits, n, call in cases:
        c = chart(root, f"k{bits}", call, n)
        kiln, go = [], []
        for _ in range(a.runs):
            kiln.append((kiln_cpu(a.bench, bits, n) - kiln_cpu(a.bench, bits, 0)) / n * 1000)
            go.append((helm_cpu(c) - helm_cpu(empty)) / n * 1000)
        k, g = statistics.median(kiln), statistics.median(go)
        runs = lambda v: ", ".join(f"{x:.0f}" for x in v)
        print(f"| RSA-{bits} | {n} | {k:.0f} ({runs(kiln)}) | {g:.0f} ({runs(go)}) | {g / k:.2f} |")


if __name__ == "__main__":
    main()
