//! The Git half of `kiln status` at scale (issue 35, docs/BENCHMARKS.md): a write repository
//! with 1,000 components × 10 environments promoted in 10,000 commits (each writing one
//! `envs/<env>/<component>/manifests.yaml`, as a Stage's `kustomize-build` does), then
//! `kiln::git::read_branch` over all 10,000 folders: their files at the tip and their last
//! writes (1 and 2 per folder), timed.
//!
//! ```text
//! cargo run --example status_bench                     # 1000 components, 10 environments
//! cargo run --example status_bench -- 200 5            # smaller
//! ```
//!
//! The repository is written with `git fast-import` (the git CLI) into a temporary directory.
#![allow(clippy::disallowed_methods)] // a dev tool: builds a repository on disk, reads the clock

use std::collections::BTreeSet;
use std::io::Write;
use std::process::{Command, Stdio};
use std::time::Instant;

fn main() {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let components = args.first().copied().unwrap_or(1000);
    let environments = args.get(1).copied().unwrap_or(10);
    let tmp = tempfile::tempdir().expect("a temporary directory");
    let repo = tmp.path().join("write.git");
    let git = |args: &[&str]| {
        Command::new("git")
            .args(args)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .expect("the git CLI")
    };
    let mut init = git(&["init", "-q", "--bare", repo.to_str().unwrap()]);
    init.wait().unwrap();
    let started = Instant::now();
    let mut import = git(&[
        "--git-dir",
        repo.to_str().unwrap(),
        "fast-import",
        "--quiet",
    ]);
    {
        let stdin = import.stdin.as_mut().unwrap();
        let mut out = std::io::BufWriter::new(stdin);
        let mut n = 0u64;
        for e in 0..environments {
            for c in 0..components {
                n += 1;
                let manifest = format!(
                    "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: c{c}\nspec:\n  template:\n    spec:\n      containers:\n      - name: c{c}\n        image: registry.example/c{c}:1.{n}.0\n"
                );
                let message = format!(
                    "kiln: promote c{c} to e{e}\n\nimage: registry.example/c{c}:1.{n}.0@\nsource: https://git.example/platform.git@{n:040x}\nstage: p/c{c}-e{e}\n"
                );
                writeln!(out, "commit refs/heads/main").unwrap();
                writeln!(
                    out,
                    "committer kiln <kiln@example.com> {} +0000",
                    1_790_000_000 + n
                )
                .unwrap();
                writeln!(out, "data {}\n{message}", message.len()).unwrap();
                writeln!(
                    out,
                    "M 100644 inline envs/e{e}/c{c}/manifests.yaml\ndata {}\n{manifest}",
                    manifest.len()
                )
                .unwrap();
            }
        }
        out.flush().unwrap();
    }
    import.wait().unwrap();
    println!(
        "repository: {} commits, {} folders, written in {:.1} s",
        components * environments,
        components * environments,
        started.elapsed().as_secs_f64()
    );
    let folders: BTreeSet<String> = (0..environments)
        .flat_map(|e| (0..components).map(move |c| format!("envs/e{e}/c{c}")))
        .collect();
    let auth = kiln::git::RemoteAuth::default();
    // CPU time of this process (user + system, /proc/self/stat, in clock ticks of 10 ms):
    // on a shared machine the wall time says more about the neighbours than about kiln.
    let cpu = || -> f64 {
        let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
        let fields: Vec<&str> = stat
            .rsplit_once(')')
            .map_or("", |(_, rest)| rest)
            .split_whitespace()
            .collect();
        let ticks = |i: usize| {
            fields
                .get(i)
                .and_then(|f| f.parse::<f64>().ok())
                .unwrap_or(0.0)
        };
        (ticks(11) + ticks(12)) / 100.0
    };
    // As `kiln status` reads (ADR 0034); `KILN_BENCH_STRICT=1` keeps libgit2's hashing of
    // every object read, to show what it costs.
    if std::env::var_os("KILN_BENCH_STRICT").is_none() {
        kiln::git::read_only_walks();
    }
    // Every commit is a promotion, its folder's writer's (as `kiln status` tells them).
    let is_promotion = |_: &str, message: &str| message.starts_with("kiln: promote ");
    for past in [1, 2] {
        let t = Instant::now();
        let c = cpu();
        let state = kiln::git::read_branch(
            repo.to_str().unwrap(),
            "main",
            &folders,
            past,
            &is_promotion,
            &auth,
        )
        .expect("read");
        let elapsed = t.elapsed();
        let written = state
            .folders
            .values()
            .filter(|f| !f.writes.is_empty())
            .count();
        let images: usize = state
            .folders
            .values()
            .map(|f| kiln::git::folder_images(&f.files).len())
            .sum();
        println!(
            "read_branch past={past}: {:.3} s wall, {:.2} s CPU ({} folders with a write, {} images)",
            elapsed.as_secs_f64(),
            cpu() - c,
            written,
            images
        );
    }
}
