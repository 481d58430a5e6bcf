//! The Kargo and Argo CD emit step timed alone, on a synthetic platform whose instances are
//! all in one project (issue 39, item 11: emit was quadratic in the instances of a project).
//!
//!     cargo run --example synth -- --components N --environments 3 --projects 1 DIR
//!     cargo run --example emit_bench -- DIR
//!
//! Loads and evaluates `DIR/platforms/synth` once (not timed), then prints
//! `plans files emit_ms`: the wall time of `kargo::emit_into` (every Warehouse, Stage and
//! Application serialized), one run.

use kiln::artifact::{ArtifactSet, Layout};
use kiln::evaluate::Selection;
use kiln::pipeline::plan;
use std::path::PathBuf;
use std::time::Instant;

#[global_allocator]
static GLOBAL: alloc::Alloc = alloc::Alloc;

#[path = "../src/alloc.rs"]
mod alloc;

fn main() {
    let Some(dir) = std::env::args().nth(1).map(PathBuf::from) else {
        eprintln!("usage: emit_bench DIR (a tree from examples/synth)");
        std::process::exit(2);
    };
    let fs = kiln::fs::RealFs;
    let (platform, plans) = plan(
        &fs,
        &dir.join("platforms/synth"),
        Some(&dir),
        &Selection::default(),
    )
    .unwrap_or_else(|e| panic!("{e:?}"));
    let opts = kiln::kargo::KargoOptions {
        layout: Layout::Service,
        projects: Vec::new(),
        cluster_kinds: Default::default(),
        environment_branches: None,
    };
    let mut set = ArtifactSet::new();
    let t = Instant::now();
    kiln::kargo::emit_into(&mut set, "", &platform, &plans, &opts)
        .unwrap_or_else(|e| panic!("{e:?}"));
    let ms = t.elapsed().as_secs_f64() * 1000.0;
    println!("{} {} {ms:.0}", plans.len(), set.len());
}
