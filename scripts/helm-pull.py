#!/usr/bin/env python3
"""Pulls a chart with real Helm v4.2.3 (PyPI helm-python-sdk) and renders it, for
tests/charts.rs's live mode (KILN_LIVE_HELM=<this venv's python>):

    helm-pull.py <chart-ref> <repo-url or -> <version> <release> <namespace> <values-json>

`helm pull <chart-ref> [--repo <repo-url>] --version <version> --untar` (plain HTTP, as the
test servers on 127.0.0.1 need), then the pulled chart rendered as `helm template` renders
it (the SDK's offline render). Prints one JSON object: the pulled chart's version, the
sha256 of the archive Helm downloaded, and the rendered manifests by template path.
"""
import hashlib
import json
import sys
import tempfile
from pathlib import Path

import helm_python as helm


def main():
    ref, repo, version, release, namespace, values = sys.argv[1:7]
    with tempfile.TemporaryDirectory() as tmp:
        archives = Path(tmp) / "archives"
        archives.mkdir()
        helm.pull(
            ref,
            destination=archives,
            version=version,
            repo_url=None if repo == "-" else repo,
            plain_http=True,
        )
        [archive] = list(archives.iterdir())
        data = archive.read_bytes()
        chart = helm.Chart.load_archive(data)
        manifests = chart.render(
            json.loads(values), name=release, namespace=namespace, is_install=True
        )
        print(json.dumps({
            "version": chart.version,
            "sha256": "sha256:" + hashlib.sha256(data).hexdigest(),
            "manifests": manifests,
        }))


if __name__ == "__main__":
    main()
