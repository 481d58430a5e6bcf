//! `kiln status` at scale (issue 35, docs/BENCHMARKS.md), two ways.
//!
//! **The Git half** (default): a write repository with 1,000 components × 10 environments
//! promoted in 10,000 commits (each writing one `envs/<env>/<component>/manifests.yaml`, as a
//! Stage's `kustomize-build` does), then `kiln::git::read_branch` over all 10,000 folders: their
//! files at the tip and their last writes (1 and 2 per folder), timed.
//!
//! **The whole status, drift included** (`--status`): the synthetic platform
//! (`examples/synth.rs`, Kargo on, one Stage per component and environment) rendered in memory
//! (not timed), then every cell its Applications deploy promoted in one commit of its write
//! repository (one repository per project, 10,000 commits in all), each made as `kiln promote`'s
//! runner makes it: the Stage's message, `Kiln-Promote` stamp included. Then
//! `kiln::status::status` over every cell, timed as `kiln status` runs after its render: the
//! read of every write branch, each cell's images and Freight, the drift check of each Stage
//! cell, lag. Every folder is untouched since its promotion, so no Stage is rebuilt; the run
//! prints how many cells are in sync (all of them) and `KILN_BENCH_HAND_EDITS=N` adds a hand
//! commit to N folders, each then rebuilt (the bench's source commits are not real, so a
//! rebuild fails: the run reports the error, showing that the folder was rebuilt).
//!
//! ```text
//! cargo run --example status_bench                     # 1000 components, 10 environments
//! cargo run --example status_bench -- 200 5            # smaller
//! cargo run --example status_bench -- --status         # the whole status, 1000 × 10
//! cargo run --example status_bench -- --status 100 5   # smaller
//! ```
//!
//! Repositories are written with `git fast-import` (the git CLI) into a temporary directory.
#![allow(clippy::disallowed_methods)] // a dev tool: builds a repository on disk, reads the clock

#[path = "synth.rs"]
#[allow(dead_code)]
mod synth;

use std::collections::BTreeSet;
use std::io::Write;
use std::process::{Command, Stdio};
use std::time::Instant;

// The allocator `kiln`'s binary runs with (src/main.rs): timed with glibc's malloc, 40 % of
// the status figure was malloc_consolidate and free, which the command never pays.
#[global_allocator]
static GLOBAL: alloc::Alloc = alloc::Alloc;

#[path = "../src/alloc.rs"]
mod alloc;

fn main() {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let components = args.first().copied().unwrap_or(1000);
    let environments = args.get(1).copied().unwrap_or(10);
    if std::env::args().any(|a| a == "--status") {
        whole_status(components, environments);
        return;
    }
    let tmp = tempfile::tempdir().expect("a temporary directory");
    let repo = tmp.path().join("write.git");
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
                let manifest =
                    deployment(&format!("c{c}"), &format!("registry.example/c{c}:1.{n}.0"));
                let message = format!(
                    "kiln: promote c{c} to e{e}\n\nimage: registry.example/c{c}:1.{n}.0@\nsource: https://git.example/platform.git@{n:040x}\nstage: p/c{c}-e{e}\n"
                );
                let path = format!("envs/e{e}/c{c}/manifests.yaml");
                fast_import_commit(&mut out, n, "main", &message, &path, &manifest);
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

/// CPU time of this process (user + system, /proc/self/stat, in clock ticks of 10 ms): on a
/// shared machine the wall time says more about the neighbours than about kiln.
fn cpu() -> f64 {
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
}

/// The git CLI with `args`, stdin piped, without the machine's or the user's configuration.
fn git(args: &[&str]) -> std::process::Child {
    Command::new("git")
        .args(args)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .expect("the git CLI")
}

/// One cell to promote: where its Application syncs from and the Stage that writes it.
struct Cell {
    branch: String,
    path: String,
    component: String,
    environment: String,
    stage: String,
}

/// The whole of `kiln status` over the synthetic platform, drift included (module docs).
fn whole_status(components: usize, environments: usize) {
    let tmp = tempfile::tempdir().expect("a temporary directory");
    synth::generate(&synth::Args::new(components, environments, tmp.path()));
    let started = Instant::now();
    let mut opts = kiln::pipeline::RenderOptions::new(tmp.path().join("platforms/synth"));
    opts.root = Some(tmp.path().to_path_buf());
    let kiln::pipeline::Built { platform, set, .. } =
        kiln::pipeline::build(&opts, &|_, _| {}).expect("the synthetic platform renders");
    println!(
        "rendered in memory in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let t = Instant::now();
    let c = cpu();
    // `kiln status` reads the render's objects this way first (inside the timed call too).
    let read = kiln::status::read_render_objects(&set).expect("Kargo objects");
    println!(
        "reading the render's Kargo and Argo CD objects as kiln status does: {:.3} s wall, {:.2} s CPU ({} Stages, {} Applications, {} Warehouses)",
        t.elapsed().as_secs_f64(),
        cpu() - c,
        read.stages,
        read.applications,
        read.warehouses
    );
    // The cells to promote, from the whole objects (not timed).
    let objects = kiln::promote::Objects::from_artifacts(&set).expect("Kargo objects");
    let text = |v: &serde_json::Value, p: &str| {
        v.pointer(p)
            .and_then(|x| x.as_str())
            .unwrap_or("")
            .to_string()
    };
    let mut cells: std::collections::BTreeMap<String, Vec<Cell>> = Default::default();
    for app in &objects.applications {
        let label = |k: &str| text(app, &format!("/metadata/labels/kiln.dev~1{k}"));
        let stage = text(
            app,
            "/metadata/annotations/kargo.akuity.io~1authorized-stage",
        );
        if stage.is_empty() {
            continue;
        }
        cells
            .entry(text(app, "/spec/source/repoURL"))
            .or_default()
            .push(Cell {
                branch: text(app, "/spec/source/targetRevision"),
                path: kiln::git::normalize_folder(&text(app, "/spec/source/path")),
                component: label("component"),
                environment: label("environment"),
                stage: stage.replacen(':', "/", 1),
            });
    }
    // The source repository: one commit, the one every promotion names.
    let source = tmp.path().join("source.git");
    let repo = git2::Repository::init_bare(&source).expect("a source repository");
    let who = git2::Signature::new(
        "kiln",
        "kiln@example.com",
        &git2::Time::new(1_790_000_000, 0),
    )
    .unwrap();
    let empty = repo.treebuilder(None).and_then(|b| b.write()).unwrap();
    let tree = repo.find_tree(empty).unwrap();
    let source_commit = repo
        .commit(Some("refs/heads/main"), &who, &who, "publish\n", &tree, &[])
        .unwrap();
    let mut map = kiln::promote::repo::RepoMap::default();
    let source_url = platform.source.repo_url.clone().unwrap_or_default();
    map.insert(&source_url, source.display().to_string());
    let hand_edits: usize = std::env::var("KILN_BENCH_HAND_EDITS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let started = Instant::now();
    let mut n = 0u64;
    for (i, (url, cells)) in cells.iter().enumerate() {
        let dir = tmp.path().join(format!("write-{i}.git"));
        git(&["init", "-q", "--bare", dir.to_str().unwrap()])
            .wait()
            .unwrap();
        map.insert(url, dir.display().to_string());
        let mut import = git(&["--git-dir", dir.to_str().unwrap(), "fast-import", "--quiet"]);
        let mut out = std::io::BufWriter::new(import.stdin.take().unwrap());
        let mut commit = |branch: &str, message: &str, path: &str, body: &str| {
            n += 1;
            fast_import_commit(&mut out, n, branch, message, path, body);
        };
        for (k, c) in cells.iter().enumerate() {
            let image = format!("registry.example/{}", c.component);
            let manifest = deployment(&c.component, &format!("{image}:1.0.0"));
            let path = format!("{}/manifests.yaml", c.path);
            // What kiln promote's runner stamps: the digest of the commit's change (one file).
            let blob = git2::Oid::hash_object(git2::ObjectType::Blob, manifest.as_bytes()).unwrap();
            let digest = kiln::git::trailers::digest_of_lines(vec![format!("{blob} {path}\n")]);
            let message = kiln::git::trailers::stamp_promote(
                &format!(
                    "kiln: promote {} to {}\n\nimage: {image}:1.0.0@\nsource: {source_url}@{source_commit}\nfreight: {:040x}\nstage: {}\n",
                    c.component,
                    c.environment,
                    i * 1_000_000 + k,
                    c.stage
                ),
                &digest,
            );
            commit(&c.branch, &message, &path, &manifest);
        }
        for c in cells.iter().take(hand_edits) {
            let path = format!("{}/manifests.yaml", c.path);
            commit(&c.branch, "scaled up by hand\n", &path, "# by hand\n");
        }
        out.flush().unwrap();
        drop(out);
        import.wait().unwrap();
    }
    println!(
        "write repositories: {} commits, written in {:.1} s",
        n,
        started.elapsed().as_secs_f64()
    );
    kiln::git::read_only_walks();
    let options = kiln::status::StatusOptions {
        repo_map: map,
        past: 2,
        ..Default::default()
    };
    let rerender = |_: &str| Err("no publish in this benchmark".to_string());
    let t = Instant::now();
    let c = cpu();
    let report = kiln::status::status(&set, &platform, &options, &rerender);
    let (wall, cpu) = (t.elapsed().as_secs_f64(), cpu() - c);
    match report {
        Ok(report) => {
            let in_sync = report
                .cells
                .iter()
                .filter(|c| c.state == kiln::status::CellState::InSync)
                .count();
            println!(
                "kiln status (past=2, drift of every Stage cell included): {wall:.3} s wall, {cpu:.2} s CPU ({} cells, {in_sync} in sync)",
                report.cells.len()
            );
        }
        Err(e) => println!("kiln status: {wall:.3} s wall, {cpu:.2} s CPU, failed: {e}"),
    }
}

/// A Deployment of one container running `image`.
fn deployment(name: &str, image: &str) -> String {
    format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {name}\nspec:\n  template:\n    spec:\n      containers:\n      - name: {name}\n        image: {image}\n"
    )
}

/// One `git fast-import` commit on `branch` writing `body` to `path`, the `n`th second after
/// a fixed time.
fn fast_import_commit(
    out: &mut impl Write,
    n: u64,
    branch: &str,
    message: &str,
    path: &str,
    body: &str,
) {
    writeln!(out, "commit refs/heads/{branch}").unwrap();
    writeln!(
        out,
        "committer kiln <kiln@example.com> {} +0000",
        1_790_000_000 + n
    )
    .unwrap();
    writeln!(out, "data {}\n{message}", message.len()).unwrap();
    writeln!(out, "M 100644 inline {path}\ndata {}\n{body}", body.len()).unwrap();
}
