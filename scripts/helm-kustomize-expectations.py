#!/usr/bin/env python3
"""Regenerates tests/helm/kustomize/<case>/expected.yaml: what `kubectl kustomize --enable-helm`
(v5.5.0) prints for a kustomization with `helmCharts:`, with real Helm v4.2.3 (PyPI
helm-python-sdk) in place of the helm binary.

    /work/helm-venv/bin/python scripts/helm-kustomize-expectations.py          # write
    /work/helm-venv/bin/python scripts/helm-kustomize-expectations.py --check  # compare only

kustomize's HelmChartInflationGenerator (api/internal/builtins/HelmChartInflationGenerator.go)
runs `helm template` and absorbs its output in the generator phase, after configMapGenerator
and secretGenerator and before `components`. With no helm binary here (and kustomize v5.5
refusing Helm v4 anyway: "this plugin requires helm V3"), each case is built the same way in
two steps:
1. each chart entry is rendered by real Helm with the values and flags kustomize would pass
   (values file merged with valuesInline by valuesMerge, then additionalValuesFiles, release
   name, namespace, includeCRDs, skipHooks, skipTests);
2. the tree is copied, its helm fields removed, and each rendering listed as a resource of a
   `kind: Component` put first under `components:` (a component's resources are accumulated
   right after the generators, exactly where the chart's output lands), and the copy is built
   with `kubectl kustomize`.
Cases with a file `kiln-only` (flags helm-python-sdk cannot set: kubeVersion, apiVersions) or
`expected-error.txt` are skipped.
"""
import importlib.util
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import helm_python as helm

ROOT = Path(__file__).resolve().parent.parent / "tests" / "helm" / "kustomize"
_spec = importlib.util.spec_from_file_location(
    "helm_expectations", Path(__file__).resolve().parent / "helm-expectations.py")
_he = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_he)

# kiln's fixed clock (2000-01-01T00:00:00Z): the time in a `--generate-name` release name.
GENERATE_NAME_TIME = 946684800


MISSING = object()


def merge2(src, dest):
    """kyaml merge2.Merge(src, dest) without a schema (see crates/kiln-kustomize/src/helm_chart.rs):
    MISSING is an absent key, None a YAML null."""
    s = None if src is MISSING else src
    d = None if dest is MISSING else dest
    first = d if d is not None else s
    if first is None:
        return MISSING
    if not isinstance(first, dict):
        if src is MISSING:
            return d
        return MISSING if src is None else src
    if src is None and d is not None:
        return MISSING
    base = d if d is not None else s
    sm = s if isinstance(s, dict) else {}
    out = {}
    for k in sorted(set(base) | set(sm)):
        v = merge2(sm.get(k, MISSING), base.get(k, MISSING))
        if v is not MISSING:
            out[k] = v
    return out


def merge_maps(a, b):
    """Helm's mergeMaps for -f files."""
    out = dict(a)
    for k, v in b.items():
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = merge_maps(out[k], v)
        else:
            out[k] = v
    return out


def charts_of(k):
    charts = list(k.get("helmCharts") or [])
    legacy = {}
    for old in k.get("helmChartInflationGenerator") or []:
        charts.append({key: old[src] for key, src in [
            ("name", "chartName"), ("version", "chartVersion"), ("repo", "chartRepoUrl"),
            ("valuesFile", "values"), ("valuesInline", "valuesLocal"),
            ("valuesMerge", "valuesMerge"), ("releaseName", "releaseName")] if old.get(src)})
        if old.get("chartHome"):
            legacy["chartHome"] = old["chartHome"]
    globals_ = k.get("helmGlobals") if k.get("helmGlobals") is not None else legacy
    return charts, globals_


def is_test_hook(doc):
    obj = helm.values_from_yaml(doc) or {}
    hook = str(((obj.get("metadata") or {}).get("annotations") or {}).get("helm.sh/hook", ""))
    return any(e.strip().lower() == "test" for e in hook.split(","))


def helm_template(chart_dir, values, name, namespace, include_crds, skip_hooks, skip_tests):
    """`helm template name chart -n namespace [--include-crds] ...` as pkg/cmd/template.go prints."""
    cfg = helm.Config(storage_driver="memory", namespace=namespace)
    try:
        with helm.Chart.load(str(chart_dir)) as chart:
            rel = cfg.install(chart, name, values, namespace=namespace, dry_run="client")
        with helm.Chart.load(str(chart_dir)) as chart:
            files = chart.render(values, name=name, namespace=namespace)
            crds = chart.crds
    finally:
        cfg.close()
    crd_part = "".join(f"---\n# Source: {c['filename']}\n{c['data']}\n" for c in crds) if include_crds else ""
    out = (crd_part + rel.get("manifest", "")).strip() + "\n"
    if not skip_hooks:
        for path, doc, _ in _he.hooks_of(files):
            if skip_tests and is_test_hook(doc):
                continue
            out += f"---\n# Source: {path}\n{doc}\n"
    return out


def render_entry(root, entry, globals_):
    home = root / (globals_.get("chartHome") or "charts")
    if entry.get("version") and entry.get("repo"):
        home = home / f"{entry['name']}-{entry['version']}"
    chart_dir = home / entry["name"]
    values_file = root / entry["valuesFile"] if entry.get("valuesFile") else chart_dir / "values.yaml"
    text = values_file.read_text()
    inline = entry.get("valuesInline") or {}
    if inline:
        if entry.get("valuesMerge") == "replace":
            values = inline
        else:
            file = helm.values_from_yaml(text) or {}
            src, dest = (file, inline) if entry.get("valuesMerge") == "merge" else (inline, file)
            values = merge2(src, dest)
    else:
        values = helm.values_from_yaml(text) or {}
    for f in entry.get("additionalValuesFiles") or []:
        values = merge_maps(values, helm.values_from_yaml((root / f).read_text()) or {})
    if entry.get("releaseName"):
        name = entry["releaseName"]
    elif entry.get("nameTemplate"):
        name = entry["nameTemplate"]
    else:
        name = f"{Path(entry['name']).name.split('.')[0]}-{GENERATE_NAME_TIME}"
    return helm_template(chart_dir, values, name, entry.get("namespace") or "default",
                         bool(entry.get("includeCRDs")), bool(entry.get("skipHooks")),
                         bool(entry.get("skipTests")))


def expected_for(case):
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "input"
        shutil.copytree(case / "input", root)
        kfile = root / "kustomization.yaml"
        k = helm.values_from_yaml(kfile.read_text())
        charts, globals_ = charts_of(k)
        comps = []
        for i, entry in enumerate(charts):
            d = root / f"helm-chart-{i}"
            d.mkdir()
            (d / "rendered.yaml").write_text(render_entry(root, entry, globals_))
            (d / "kustomization.yaml").write_text(json.dumps({
                "apiVersion": "kustomize.config.k8s.io/v1alpha1", "kind": "Component",
                "resources": ["rendered.yaml"]}))
            comps.append(f"helm-chart-{i}")
        for key in ("helmCharts", "helmGlobals", "helmChartInflationGenerator"):
            k.pop(key, None)
        k["components"] = comps + list(k.get("components") or [])
        kfile.write_text(json.dumps(k, indent=1))
        out = subprocess.run(["kubectl", "kustomize", str(root)], capture_output=True, text=True)
        if out.returncode != 0:
            raise SystemExit(f"{case.name}: kubectl kustomize failed:\n{out.stderr}")
        return out.stdout


def main():
    check = "--check" in sys.argv
    bad = 0
    for case in sorted(p for p in ROOT.iterdir() if (p / "input").is_dir()):
        if (case / "kiln-only").exists() or (case / "expected-error.txt").exists():
            continue
        text = expected_for(case)
        target = case / "expected.yaml"
        if check:
            if not target.exists() or target.read_text() != text:
                print(f"DRIFT {case.name}")
                bad += 1
            else:
                print(f"ok    {case.name}")
        else:
            target.write_text(text)
            print(f"wrote {target.relative_to(ROOT)}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
