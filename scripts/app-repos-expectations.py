#!/usr/bin/env python3
"""Writes (or with --check compares) real Helm v4.2.3's output for the chart of the app-repos
fixture (tests/fixtures/app-repos/apps/shop-api/chart), once per values variant, as the team
would run it: `helm template shop chart -n ns -f values.yaml -f values-<variant>.yaml`.

    /path/to/venv/bin/python scripts/app-repos-expectations.py          # write
    /path/to/venv/bin/python scripts/app-repos-expectations.py --check  # CI's live mode

The rendering and the values loading are scripts/helm-expectations.py's (the same SDK calls).
"""
import importlib.util
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
spec = importlib.util.spec_from_file_location("helm_expectations", HERE / "helm-expectations.py")
he = importlib.util.module_from_spec(spec)
spec.loader.exec_module(he)

FIXTURE = HERE.parent / "tests" / "fixtures" / "app-repos"
CHART = FIXTURE / "apps" / "shop-api" / "chart"
VARIANTS = ["nonprod", "prod"]


def main():
    check = "--check" in sys.argv
    bad = 0
    for variant in VARIANTS:
        values = {}
        for f in ["values.yaml", f"values-{variant}.yaml"]:
            he.merge_maps(values, he.load_values((CHART / f).read_text()))
        stream, error = he.render(CHART, values, "shop")
        if error:
            print(f"ERROR {variant}: {error}")
            bad += 1
            continue
        target = FIXTURE / "expected" / f"helm-{variant}.yaml"
        if check:
            if not target.exists() or target.read_text() != stream:
                print(f"DRIFT {variant}")
                bad += 1
            else:
                print(f"ok    {variant}")
        else:
            target.write_text(stream)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
