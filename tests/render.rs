//! Integration tests of the platform pipeline (`kiln render`), one binary with modules by
//! theme:
//! - `golden`: renders `platforms/bank` and compares every file with `tests/golden/bank/`
//!   (an extra or missing file fails). Regenerate with `KILN_BLESS=1 cargo test --test integration render::`.
//! - `kubectl`: runs `kubectl kustomize` on every emitted kustomization directory and compares
//!   its output structurally with our `.gen.yaml`. Skipped when `kubectl` is missing, unless
//!   `REQUIRE_KUBECTL=1` (set by `.ci/run`), which makes a missing binary a failure.
//! - `cli_errors`: one test per error class of `kiln render`, checking exit code 1, that stderr
//!   names the file and line, and that nothing is written.
//! - `diagnostics`: the errors of issue 38, item 10: one per cause with the environments
//!   it arose in, every failing BuildPlan named, did-you-mean for unknown fields, kustomize
//!   errors in a base named from the repository root.
//! - `hardening`: the promises of issue 12 (no panic, no hang, no read outside the root, no
//!   lost ownership, no leaked Secret value), each from the input that once broke it.
//! - `scalars`: unquoted scalars of a component's files reach the tree as the API server
//!   takes them (ConfigMap data and annotations as the text written).
#![allow(clippy::disallowed_methods)] // tests and dev tools set up trees on disk

pub(crate) mod cli_errors;
mod diagnostics;
mod golden;
mod hardening;
mod kubectl;
mod scalars;

use crate::support::repo_root;

/// Renders `platforms/bank` into memory.
pub fn render_bank() -> kiln::artifact::ArtifactSet {
    let mut opts = kiln::pipeline::RenderOptions::new(repo_root().join("platforms/bank"));
    opts.root = Some(repo_root());
    match kiln::pipeline::build(&opts, &|_, _| {}).map(|b| b.set) {
        Ok(set) => set,
        Err(e) => panic!(
            "platforms/bank does not render:\n{:?}",
            miette::Report::new(e)
        ),
    }
}
