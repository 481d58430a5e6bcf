//! Differential test against `kubectl kustomize` (kustomize v5.5.0): every emitted
//! kustomization directory must build to the resources of its `.gen.yaml`, compared as parsed
//! YAML (maps without order, numbers by value), document by document.
//!
//! Divergences: none expected — the `.gen.yaml` is already in kustomize's legacy order and its
//! images are already set to the values the `images:` entries name.

use super::cli_errors::Fixture;
use super::render_bank;
use std::path::Path;
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

/// Every directory under `root` with a `kustomization.yaml` and a `.gen.yaml`, relative.
fn kustomization_dirs(root: &Path) -> Vec<(String, String)> {
    crate::support::list_files(root)
        .into_iter()
        .filter_map(|p| p.strip_suffix("/kustomization.yaml").map(str::to_string))
        .filter_map(|dir| {
            let gen_yaml = crate::support::list_files(&root.join(&dir))
                .into_iter()
                .find(|f| !f.contains('/') && f.ends_with(".gen.yaml"))?;
            Some((dir, gen_yaml))
        })
        .collect()
}

/// Builds every emitted kustomization directory under `root` with kiln's own kustomize
/// engine and, when present, `kubectl kustomize`, and compares each build with the
/// directory's `.gen.yaml` (docs/output.md: the tree reproduces itself). Returns the failures.
fn tree_reproduces_itself(root: &Path, kubectl: Option<&str>) -> Vec<String> {
    let dirs = kustomization_dirs(root);
    assert!(!dirs.is_empty(), "no kustomization directory in {root:?}");
    let mut failures = Vec::new();
    fn compare(
        failures: &mut Vec<String>,
        who: &str,
        dir: &str,
        built: Vec<serde_json::Value>,
        ours: &[serde_json::Value],
    ) {
        if built.len() != ours.len() {
            failures.push(format!(
                "{dir}: {who} built {} resources, .gen.yaml has {}",
                built.len(),
                ours.len()
            ));
            return;
        }
        for (i, (a, b)) in built.iter().zip(ours).enumerate() {
            if !kiln::yaml::structurally_equal(a, b) {
                failures.push(format!(
                    "{dir}: document {i} differs\n{who}: {a}\nkiln .gen.yaml: {b}"
                ));
            }
        }
    }
    for (dir, gen_yaml) in &dirs {
        let text = std::fs::read_to_string(root.join(dir).join(gen_yaml)).unwrap();
        let ours = kiln::yaml::parse_stream(gen_yaml, &text).unwrap();
        match kiln::kustomize::build(
            &kiln::fs::RealFs,
            &root.join(dir),
            &kiln::kustomize::BuildOptions::default(),
        ) {
            Ok(rs) => compare(
                &mut failures,
                "kiln kustomize",
                dir,
                rs.into_iter().map(|r| r.value).collect(),
                &ours,
            ),
            Err(e) => failures.push(format!("{dir}: kiln kustomize failed: {e}")),
        }
        if let Some(kubectl) = kubectl {
            let o = Command::new(kubectl)
                .arg("kustomize")
                .arg(root.join(dir))
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
            compare(&mut failures, "kubectl", dir, built, &ours);
        }
    }
    failures
}

#[test]
fn every_kustomization_builds_to_its_gen_yaml() {
    let kubectl = kubectl();
    if kubectl.is_none() {
        eprintln!(
            "kubectl not found: checking with kiln's engine only (set REQUIRE_KUBECTL=1 to make this a failure)"
        );
    }
    let set = render_bank();
    let out = tempfile::tempdir().unwrap();
    kiln::write::write(&set, out.path(), &Default::default()).unwrap();
    let failures = tree_reproduces_itself(out.path(), kubectl);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// A component image whose `repository` differs from its `name`, retargeted or pinned by an
/// `images` transformer in several ways: the emitted `images:` must reproduce the `.gen.yaml`.
#[test]
fn renamed_and_overridden_images_reproduce_the_gen_yaml() {
    let kubectl = kubectl();
    let cases = [
        // The fixture's image: name `web`, repository `ghcr.io/example/web`.
        ("", ""),
        ("  - images: [{name: web, newTag: \"2.0.0\"}]\n", "newTag"),
        (
            "  - images: [{name: web, newName: registry.example.com/web}]\n",
            "newName only",
        ),
        (
            "  - images: [{name: web, newName: registry.example.com/web, newTag: \"3.0\"}]\n",
            "newName and newTag",
        ),
        (
            "  - images: [{name: web, digest: \"sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\"}]\n",
            "digest",
        ),
    ];
    let mut failures = Vec::new();
    for (transformer, what) in cases {
        let f = Fixture::new();
        if !transformer.is_empty() {
            f.edit(
                "repo/components/web/component.yaml",
                "  transformers:\n",
                &format!("  transformers:\n{transformer}"),
            );
        }
        let out = f.render(&[]);
        assert!(
            out.status.success(),
            "{what}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        for e in tree_reproduces_itself(&f.path("repo/deploy"), kubectl) {
            failures.push(format!("[{what}] {e}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
