//! `helmCharts:` in kustomizations, built by kiln's native engines (no helm binary, no
//! `--enable-helm`), against `kubectl kustomize` v5.5.0 with real Helm v4.2.3.
//!
//! - `helm_charts_build_as_kustomize_with_real_helm`: every `tests/helm/kustomize/<case>/`
//!   holds `input/` (the build root, or `input/<dir>` when a file `root` names it) and either
//!   `expected.yaml` or `expected-error.txt` (a substring of the error; a line `at: file:line`
//!   checks its location). `expected.yaml` is what `scripts/helm-kustomize-expectations.py`
//!   wrote: each chart rendered by helm-python-sdk with the values and flags kustomize's
//!   HelmChartInflationGenerator would pass, then the tree built by `kubectl kustomize` with
//!   that rendering in the generator's place (the script's docs say how). kiln's output must
//!   equal it byte for byte. A case with a file `kiln-only` uses flags helm-python-sdk cannot
//!   set; its expectation was checked by hand (the file says against what).
//! - `live_helm_and_kubectl_agree_with_stored_expectations`: with `KILN_LIVE_HELM=<python>`
//!   (a Python with helm-python-sdk), re-runs the script in `--check` mode; it needs kubectl,
//!   and skips without it unless `REQUIRE_KUBECTL=1`.
#![allow(clippy::disallowed_methods)] // tests set up and read trees on disk

use crate::support::repo_root as crate_dir;
use kiln::fs::RealFs;
use kiln::kustomize::{BuildOptions, build_yaml};
use std::path::{Path, PathBuf};

fn cases() -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(crate_dir().join("tests/helm/kustomize"))
        .expect("tests/helm/kustomize")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join("input").is_dir())
        .collect();
    out.sort();
    out
}

fn run_case(dir: &Path) -> Result<(), String> {
    let root = match std::fs::read_to_string(dir.join("root")) {
        Ok(r) => dir.join("input").join(r.trim()),
        Err(_) => dir.join("input"),
    };
    // As kubectl, kiln renders `helmCharts` only with `--enable-helm`.
    let options = BuildOptions {
        enable_helm: true,
        ..BuildOptions::default()
    };
    let result = build_yaml(&RealFs, &root, &options);
    if let Ok(expected) = std::fs::read_to_string(dir.join("expected-error.txt")) {
        let mut lines = expected.lines();
        let needle = lines.next().unwrap_or("").trim();
        let at = lines.find_map(|l| l.strip_prefix("at:")).map(str::trim);
        let e = match result {
            Ok(_) => return Err(format!("expected an error containing `{needle}`")),
            Err(e) => e,
        };
        let msg = e.to_string();
        if !msg.contains(needle) {
            return Err(format!("error `{msg}` does not contain `{needle}`"));
        }
        if let Some(at) = at {
            let loc = e
                .location()
                .map(|l| format!("{}:{}", l.file, l.line))
                .unwrap_or_default();
            if loc != at {
                return Err(format!("error at `{loc}`, expected `{at}` ({msg})"));
            }
        }
        return Ok(());
    }
    let expected = std::fs::read_to_string(dir.join("expected.yaml"))
        .map_err(|e| format!("no expected.yaml: {e}"))?;
    let actual = result.map_err(|e| format!("build failed: {:?}", miette::Report::new(e)))?;
    if actual != expected {
        return Err(format!(
            "output differs:\n--- expected\n{expected}\n--- kiln\n{actual}"
        ));
    }
    Ok(())
}

#[test]
fn helm_charts_build_as_kustomize_with_real_helm() {
    let cases = cases();
    assert!(cases.len() >= 5, "cases missing");
    let failures: Vec<String> = cases
        .iter()
        .filter_map(|c| {
            run_case(c)
                .err()
                .map(|e| format!("── {} ──\n{e}", c.display()))
        })
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn live_helm_and_kubectl_agree_with_stored_expectations() {
    let Some(python) = std::env::var_os("KILN_LIVE_HELM") else {
        eprintln!("skipping: set KILN_LIVE_HELM to a Python with helm-python-sdk");
        return;
    };
    let kubectl = std::process::Command::new("kubectl")
        .args(["version", "--client"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !kubectl {
        assert!(
            std::env::var_os("REQUIRE_KUBECTL").is_none(),
            "REQUIRE_KUBECTL is set but kubectl is not available"
        );
        eprintln!("skipping: kubectl not found");
        return;
    }
    let out = std::process::Command::new(python)
        .arg(crate_dir().join("scripts/helm-kustomize-expectations.py"))
        .arg("--check")
        .output()
        .expect("run the expectations script");
    assert!(
        out.status.success(),
        "real Helm + kubectl disagree with tests/helm/kustomize:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
