#!/usr/bin/env python3
"""Two or more kiln builds (or settings) timed as processes on one chart, taking turns.

    python3 scripts/ab-process.py RUNS CHART [ENV=V,...]@BINARY ...

Each round runs every variant once, in order (`kiln helm template rel CHART -n ns
--include-crds`, CHART a directory under ../shared/charts or a path); a variant is
`@binary` or `NAME=VALUE,...@binary` for environment settings. Prints the median wall time
(spawn to exit) and CPU (user + system of the reaped child) of each. Taking turns keeps a
drifting machine from favouring one side (docs/BENCHMARKS.md; ADR 0055).
"""
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path


def main():
    runs, chart = int(sys.argv[1]), sys.argv[2]
    path = Path(chart)
    if not path.exists():
        path = Path(__file__).resolve().parent.parent.parent / "shared" / "charts" / chart / "chart"
    variants = [v.split("@", 1) for v in sys.argv[3:]]
    walls = [[] for _ in variants]
    cpus = [[] for _ in variants]
    for _ in range(runs):
        for i, (settings, binary) in enumerate(variants):
            env = dict(os.environ)
            for kv in filter(None, settings.split(",")):
                k, val = kv.split("=", 1)
                env[k] = val
            cmd = [binary, "helm", "template", "rel", str(path), "-n", "ns", "--include-crds"]
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            t = time.perf_counter()
            subprocess.run(cmd, stdout=subprocess.DEVNULL, env=env, check=True)
            walls[i].append((time.perf_counter() - t) * 1000)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
            cpus[i].append(cpu * 1000)
    for i, (settings, binary) in enumerate(variants):
        name = f"{settings}@{binary}" if settings else binary
        print(f"{chart:24} {name:50} wall {statistics.median(walls[i]):6.2f} ms"
              f"  cpu {statistics.median(cpus[i]):6.2f} ms")


if __name__ == "__main__":
    main()
