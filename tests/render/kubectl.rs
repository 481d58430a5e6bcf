//! Differential test against `kubectl kustomize` (kustomize v5.5.0): every emitted
//! kustomization directory must build to the resources of its `.gen.yaml`, compared as parsed
//! YAML (maps without order, numbers by value), document by document.
//!
//! Divergences: none expected — the `.gen.yaml` is already in kustomize's legacy order and its
//! images are already set to the values the `images:` entries name.

use crate::render_bank;
use std::process::Command;

fn kubectl() -> Option<&'static str> {
    let ok = Command::new("kubectl")
        .arg("version")
        .arg("--client")
        .output()
        .is_ok_and(|o| o.status.success());
    if ok {
        return Some("kubectl");
    }
    assert!(
        std::env::var_os("REQUIRE_KUBECTL").is_none(),
        "REQUIRE_KUBECTL is set but `kubectl` cannot be run"
    );
    None
}

#[test]
fn every_kustomization_builds_to_its_gen_yaml() {
    let Some(kubectl) = kubectl() else {
        eprintln!("skipped: kubectl not found (set REQUIRE_KUBECTL=1 to make this a failure)");
        return;
    };
    let set = render_bank();
    let out = tempfile::tempdir().unwrap();
    kiln::write::write(&set, out.path()).unwrap();
    let dirs: Vec<&str> = set
        .paths()
        .filter_map(|p| p.strip_suffix("/kustomization.yaml"))
        .collect();
    assert!(!dirs.is_empty());
    let mut failures = Vec::new();
    for dir in &dirs {
        let o = Command::new(kubectl)
            .arg("kustomize")
            .arg(out.path().join(dir))
            .output()
            .unwrap();
        if !o.status.success() {
            failures.push(format!(
                "{dir}: kubectl kustomize failed: {}",
                String::from_utf8_lossy(&o.stderr)
            ));
            continue;
        }
        let built =
            kiln::yaml::parse_stream("kubectl", &String::from_utf8_lossy(&o.stdout)).unwrap();
        let gen_name = set
            .paths()
            .find(|p| p.starts_with(&format!("{dir}/")) && p.ends_with(".gen.yaml"))
            .unwrap();
        let ours =
            kiln::yaml::parse_stream(gen_name, &String::from_utf8_lossy(&set.files[gen_name]))
                .unwrap();
        if built.len() != ours.len() {
            failures.push(format!(
                "{dir}: kubectl built {} resources, .gen.yaml has {}",
                built.len(),
                ours.len()
            ));
            continue;
        }
        for (i, (a, b)) in built.iter().zip(&ours).enumerate() {
            if !kiln::yaml::structurally_equal(a, b) {
                failures.push(format!(
                    "{dir}: document {i} differs\nkubectl: {a}\nkiln:    {b}"
                ));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} directories differ:\n{}",
        failures.len(),
        dirs.len(),
        failures.join("\n")
    );
}
