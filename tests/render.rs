//! Integration tests of the platform pipeline (`kiln render`), one binary with modules by
//! theme:
//! - `golden`: renders `platforms/bank` and compares every file with `tests/golden/bank/`
//!   (an extra or missing file fails). Regenerate with `KILN_BLESS=1 cargo test --test render`.
//! - `kubectl`: runs `kubectl kustomize` on every emitted kustomization directory and compares
//!   its output structurally with our `.gen.yaml`. Skipped when `kubectl` is missing, unless
//!   `REQUIRE_KUBECTL=1` (set by `.ci/run`), which makes a missing binary a failure.
//! - `cli_errors`: one test per error class of `kiln render`, checking exit code 1, that stderr
//!   names the file and line, and that nothing is written.
//! - `hardening`: the promises of issue 12 (no panic, no hang, no read outside the root, no
//!   lost ownership, no leaked Secret value), each from the input that once broke it.
//! - `scalars`: unquoted scalars of a component's files reach the tree as the API server
//!   takes them (ConfigMap data and annotations as the text written).
#![allow(clippy::disallowed_methods)] // tests and dev tools set up trees on disk

#[path = "render/cli_errors.rs"]
mod cli_errors;
#[path = "render/golden.rs"]
mod golden;
#[path = "render/hardening.rs"]
mod hardening;
#[path = "render/kubectl.rs"]
mod kubectl;
#[path = "render/scalars.rs"]
mod scalars;

use std::path::{Path, PathBuf};

/// The crate root (where `platforms/` and `components/` live).
pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Renders `platforms/bank` into memory.
pub fn render_bank() -> kiln::artifact::ArtifactSet {
    let mut opts = kiln::pipeline::RenderOptions::new(repo_root().join("platforms/bank"));
    opts.root = Some(repo_root());
    match kiln::pipeline::build(&opts) {
        Ok(set) => set,
        Err(e) => panic!(
            "platforms/bank does not render:\n{:?}",
            miette::Report::new(e)
        ),
    }
}

/// Every file under `dir`, relative, `/`-separated, sorted.
pub fn list_files(dir: &Path) -> Vec<String> {
    fn walk(base: &Path, d: &Path, out: &mut Vec<String>) {
        let Ok(entries) = std::fs::read_dir(d) else {
            return;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(base, &p, out);
            } else if let Ok(rel) = p.strip_prefix(base) {
                out.push(rel.to_string_lossy().replace('\\', "/"));
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out.sort();
    out
}
