#!/usr/bin/env python3
"""Regenerates tests/helm/expected/ with real Helm v4.2.3 (PyPI helm-python-sdk).

    python3 -m venv /tmp/helm-venv && /tmp/helm-venv/bin/pip install helm-python-sdk
    /tmp/helm-venv/bin/python scripts/helm-expectations.py          # write
    /tmp/helm-venv/bin/python scripts/helm-expectations.py --check  # compare only (CI's live mode)

Each case is `helm template rel <chart> --namespace ns --include-crds [-f variant]`, printed
as pkg/cmd/template.go prints it: CRD files, the sorted release manifest, then hooks (the SDK's
client-only dry-run install gives the manifest or the error; its render gives the hooks).
Cases: every chart under tests/helm/charts/ (default values) plus tests/helm/variants/
<chart>-<variant>.yaml (a values file) and <chart>-<variant>.flags (one flag a line:
`-f PATH`, `--set`, `--set-string`, `--set-json`, `--set-file`, `--set-literal`, `--release NAME`; paths from
the repository root). Flags are parsed by Helm's own strvals (the SDK's parse_set_* calls)
and merged in pkg/cli/values/options.go's order: -f, --set-json, --set, --set-string,
--set-file, --set-literal. The SDK parses each line into a fresh map, so lines are merged
as loader.MergeMaps merges: exact unless a line indexes into a list an earlier line made
(keep such cases in the unit tests of crates/kiln-helm/src/values.rs). Errors are written as
<case>.error.txt (a flag's as Helm prints it: `failed parsing --set data: …`).
"""
import json
import os
import re
import sys
from pathlib import Path

import helm_python as helm

ROOT = Path(__file__).resolve().parent.parent / "tests" / "helm"
ORDER = ["PriorityClass", "Namespace", "NetworkPolicy", "ResourceQuota", "LimitRange",
         "PodSecurityPolicy", "PodDisruptionBudget", "ServiceAccount", "Secret", "SecretList",
         "ConfigMap", "StorageClass", "PersistentVolume", "PersistentVolumeClaim",
         "CustomResourceDefinition", "ClusterRole", "ClusterRoleList", "ClusterRoleBinding",
         "ClusterRoleBindingList", "Role", "RoleList", "RoleBinding", "RoleBindingList", "Service",
         "DaemonSet", "Pod", "ReplicationController", "ReplicaSet", "Deployment",
         "HorizontalPodAutoscaler", "StatefulSet", "Job", "CronJob", "IngressClass", "Ingress",
         "APIService", "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"]
EVENTS = {"pre-install", "post-install", "pre-delete", "post-delete", "pre-upgrade",
          "post-upgrade", "pre-rollback", "post-rollback", "test", "test-success"}
SEP = re.compile(r"(?:^|[\t\n\f\r ]*\n)---[\t\n\f\r ]*")


def split(text):
    docs = SEP.split(text.lstrip())
    return [d.lstrip() for d in docs if d.strip()]


def hooks_of(files):
    out = []
    for path in sorted(files):
        if path.endswith("NOTES.txt") or path.rsplit("/", 1)[-1].startswith("_"):
            continue
        for doc in split(files[path]):
            obj = helm.values_from_yaml(doc) or {}
            ann = ((obj.get("metadata") or {}).get("annotations") or {})
            if "helm.sh/hook" not in ann:
                continue
            if any(t.strip().lower() not in EVENTS for t in str(ann["helm.sh/hook"]).split(",")):
                continue
            kind = str(obj.get("kind") or "")
            out.append((path, doc, kind))
    key = lambda d: (0, ORDER.index(d[2]), "") if d[2] in ORDER else (1, 0, d[2])
    return sorted(out, key=key)


def render(chart_dir, values, release="rel"):
    # A chart Helm cannot load (`Chart.load`: loader errors) is a case too: its error is kept.
    try:
        helm.Chart.load(str(chart_dir)).close()
    except helm.HelmError as e:
        return None, getattr(e, "detail", None) or str(e)
    cfg = helm.Config(storage_driver="memory", namespace="ns")
    try:
        with helm.Chart.load(str(chart_dir)) as chart:
            try:
                rel = cfg.install(chart, release, values, namespace="ns", dry_run="client")
            except helm.HelmError as e:
                return None, getattr(e, "detail", None) or str(e)
        with helm.Chart.load(str(chart_dir)) as chart:
            files = chart.render(values, name=release, namespace="ns")
            crds = chart.crds
    finally:
        cfg.close()
    crd_part = "".join(f"---\n# Source: {c['filename']}\n{c['data']}\n" for c in crds)
    out = (crd_part + rel.get("manifest", "")).strip() + "\n"
    for path, doc, _ in hooks_of(files):
        out += f"---\n# Source: {path}\n{doc}\n"
    return out, None


PARSERS = [("--set-json", helm.parse_set_json), ("--set", helm.parse_set_string),
           ("--set-string", helm.parse_set_string_values), ("--set-file", helm.parse_set_file),
           ("--set-literal", helm.parse_set_literal)]


def merge_maps(dst, src):
    """loader.MergeMaps: maps merge deeply, anything else replaces."""
    for k, v in src.items():
        if isinstance(v, dict) and isinstance(dst.get(k), dict):
            merge_maps(dst[k], v)
        else:
            dst[k] = v
    return dst


def flag_release(path):
    """The release name of a .flags variant (`--release NAME`; default `rel`)."""
    names = [line.split(" ", 1)[1] for line in path.read_text().splitlines()
             if line.startswith("--release ")]
    return names[-1] if names else "rel"


def load_values(text):
    """Helm's loader.LoadValues (pkg/chart/v2/loader/load.go), which `-f` files go through:
    documents cut as apimachinery's YAMLReader cuts them (a line starting with `---` and
    nothing but spaces or a comment after it), each read by the SDK, merged in order."""
    docs, cur = [], []
    for line in text.splitlines(keepends=True):
        if line.startswith("---"):
            rest = line[3:].strip()
            if rest and not rest.startswith("#"):
                raise ValueError(f"invalid Yaml document separator: {rest}")
            if cur:
                docs.append("".join(cur))
                cur = []
                continue
        cur.append(line)
    if cur:
        docs.append("".join(cur))
    out = {}
    for doc in docs:
        merge_maps(out, helm.values_from_yaml(doc) or {})
    return out


def flag_values(path):
    """The values of a .flags variant, or Helm's error."""
    flags = [line.split(" ", 1) for line in path.read_text().splitlines() if line.strip()]
    base = {}
    for flag, arg in flags:
        if flag == "-f":
            merge_maps(base, load_values((ROOT.parent.parent / arg).read_text()))
    for kind, parse in PARSERS:
        for flag, arg in flags:
            if flag != kind:
                continue
            if kind == "--set-json" and arg.strip().startswith("{"):
                merge_maps(base, json.loads(arg))
                continue
            try:
                merge_maps(base, parse(arg))
            except helm.HelmError as e:
                if kind == "--set-json":
                    return None, f"failed parsing --set-json data {arg}"
                return None, f"failed parsing {kind} data: {getattr(e, 'detail', None) or e}"
    return base, None


def cases():
    charts = ROOT / "charts"
    for d in sorted(p for p in charts.rglob("Chart.yaml") if "/charts/" not in str(p.relative_to(charts)).replace("\\", "/")[0:0] + "/" + str(p.parent.relative_to(charts))):
        chart = d.parent
        rel = chart.relative_to(charts)
        if len(rel.parts) > 1 and rel.parts[-2] == "charts":
            continue
        name = str(rel).replace("/", "-")
        yield name, chart, None
        for v in sorted([*(ROOT / "variants").glob(f"{name}-*.yaml"),
                         *(ROOT / "variants").glob(f"{name}-*.flags")]):
            yield v.stem, chart, v


def main():
    check = "--check" in sys.argv
    expected = ROOT / "expected"
    expected.mkdir(exist_ok=True)
    bad = 0
    os.chdir(ROOT.parent.parent)  # --set-file paths are the repository's
    for name, chart, variant in cases():
        error = None
        release = "rel"
        if variant and variant.suffix == ".flags":
            values, error = flag_values(variant)
            release = flag_release(variant)
        else:
            values = load_values(variant.read_text()) if variant else None
        if error is None:
            stream, error = render(chart, values, release)
        target = expected / (f"{name}.error.txt" if error else f"{name}.yaml")
        text = error if error else stream
        if check:
            if not target.exists() or target.read_text() != text:
                print(f"DRIFT {name}")
                bad += 1
            else:
                print(f"ok    {name}")
        else:
            for stale in (expected / f"{name}.yaml", expected / f"{name}.error.txt"):
                stale.unlink(missing_ok=True)
            target.write_text(text)
            print(f"wrote {target.relative_to(ROOT)}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
