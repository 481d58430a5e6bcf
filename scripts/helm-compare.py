#!/usr/bin/env python3
"""Renders every case of the shared corpus with kiln and compares it with `verify-charts.py --compare`.

    /work/helm-venv/bin/python scripts/helm-compare.py target/release/kiln [../shared/charts]
"""
import json, subprocess, sys, pathlib, tempfile
K = sys.argv[1]
root = pathlib.Path(sys.argv[2] if len(sys.argv) > 2 else "../shared/charts").resolve()
out = pathlib.Path(tempfile.mkdtemp(prefix="kiln-cmp-"))
idx = json.loads((root / "index.json").read_text()); n = 0
for c in idx["charts"]:
    for v in c["variants"]:
        cmd = [K, "helm", "template", "rel", str(root / c["id"] / "chart"), "-n", "ns", "--include-crds"]
        if v["name"] != "default": cmd += ["-f", str(root / c["id"] / f"values-{v['name']}.yaml")]
        r = subprocess.run(cmd, capture_output=True, text=True); n += 1
        d = out / c["id"]; d.mkdir(exist_ok=True)
        if r.returncode == 0: (d / f"{v['name']}.yaml").write_text(r.stdout)
        else: (d / f"{v['name']}.error.txt").write_text(r.stderr)
print(n, "cases rendered into", out)
r = subprocess.run([sys.executable, str(root / "verify-charts.py"), "--compare", str(out)], capture_output=True, text=True)
print(r.stdout[-1500:], r.stderr[-1500:], "rc", r.returncode)
