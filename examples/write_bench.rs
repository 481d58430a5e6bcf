//! The write stage timed alone, side by side with `cp -r` of the same tree (issue 38, item 7).
//!
//!     kiln render DIR/platforms/synth --write-to TREE --no-cache
//!     cargo run --release --example write_bench -- TREE WORK [RUNS]
//!
//! Reads every file of `TREE` (a rendered tree) into an `ArtifactSet` (not timed), then, for
//! each run, in turns: `kiln::write::write` of the set into a new directory under `WORK`, and
//! `cp -r TREE` into another, each followed by `sync` (not timed) and removed afterwards.
//! Prints one line per run: `write_ms cp_ms` (wall), and the write's user and system CPU.
//! With `WRITE_ONLY=1` it writes once and exits (for `strace -c -f`: the reading of `TREE`
//! is the only other file traffic, and `READ_ONLY=1` measures that alone).
#![allow(clippy::disallowed_methods)] // a dev tool reading and writing trees on disk

use kiln::artifact::ArtifactSet;
use std::path::{Path, PathBuf};
use std::time::Instant;

#[global_allocator]
static GLOBAL: alloc::Alloc = alloc::Alloc;

#[path = "../src/alloc.rs"]
mod alloc;

fn read_tree(root: &Path, dir: &Path, set: &mut ArtifactSet) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap())
        .collect();
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let path = e.path();
        if e.file_type().unwrap().is_dir() {
            read_tree(root, &path, set);
        } else {
            let rel = path
                .strip_prefix(root)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            if rel != kiln::write::MANIFEST {
                set.insert(rel, std::fs::read(&path).unwrap());
            }
        }
    }
}

fn cpu() -> (f64, f64) {
    // SAFETY: getrusage fills the zeroed struct.
    let u = unsafe {
        let mut u: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut u);
        u
    };
    let s = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    (s(u.ru_utime), s(u.ru_stime))
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (Some(tree), Some(work)) = (args.get(1), args.get(2)) else {
        eprintln!("usage: write_bench TREE WORK [RUNS]");
        std::process::exit(2);
    };
    let runs: usize = args.get(3).and_then(|r| r.parse().ok()).unwrap_or(3);
    let (tree, work) = (PathBuf::from(tree), PathBuf::from(work));
    let mut set = ArtifactSet::new();
    read_tree(&tree, &tree, &mut set);
    if std::env::var_os("READ_ONLY").is_some() {
        return;
    }
    std::fs::create_dir_all(&work).unwrap();
    let opts = kiln::write::WriteOptions::default();
    if std::env::var_os("WRITE_ONLY").is_some() {
        kiln::write::write(&set, &work.join("out"), &opts).unwrap();
        return;
    }
    let sync = || {
        std::process::Command::new("sync").status().unwrap();
    };
    println!(
        "{} files, {} bytes",
        set.len(),
        set.files.values().map(Vec::len).sum::<usize>()
    );
    println!("run write_ms cp_ms write_user_s write_sys_s");
    for run in 0..runs {
        let out = work.join(format!("w{run}"));
        let copy = work.join(format!("c{run}"));
        sync();
        let (u0, s0) = cpu();
        let t = Instant::now();
        kiln::write::write(&set, &out, &opts).unwrap();
        let write_ms = t.elapsed().as_secs_f64() * 1e3;
        let (u1, s1) = cpu();
        sync();
        let t = Instant::now();
        let ok = std::process::Command::new("cp")
            .arg("-r")
            .arg(&tree)
            .arg(&copy)
            .status()
            .unwrap();
        let cp_ms = t.elapsed().as_secs_f64() * 1e3;
        assert!(ok.success());
        println!(
            "{run} {write_ms:.0} {cp_ms:.0} {:.2} {:.2}",
            u1 - u0,
            s1 - s0
        );
        std::fs::remove_dir_all(&out).unwrap();
        std::fs::remove_dir_all(&copy).unwrap();
    }
}
