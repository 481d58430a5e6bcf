//! The source stage at scale (issue 33, docs/BENCHMARKS.md): a platform whose N components
//! (default 100) each come from their own app repository served by `git daemon`, and N more
//! instances of one repository served by git's smart HTTP. Measured:
//!
//! - the cold resolve (every ref listed, every commit fetched, every tree stored), and how
//!   many fetches the N instances of one repository cost (counted at the server: one);
//! - the warm resolve with every source locked and cached, with both servers stopped (so it
//!   provably does no network I/O), best and median of 10: the target is < 50 ms for 100
//!   remote sources.
//!
//! ```text
//! cargo run --release --example sources_bench          # 100 repositories
//! cargo run --example sources_bench -- 20              # smaller (debug, correctness)
//! ```
#![allow(clippy::disallowed_methods)] // a dev tool: writes repositories on disk, reads the clock

use kiln::source::{Mode, SourceOptions};
use kiln_source::testing;
use std::time::{Duration, Instant};

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(100);
    let tmp = tempfile::tempdir().expect("a temporary directory");
    let repos = tmp.path().join("repos");
    std::fs::create_dir_all(&repos).unwrap();
    let component = |name: &str| {
        [
            (
                "deploy/component.yaml".to_string(),
                format!(
                    "apiVersion: kiln/v1alpha1\nkind: Component\nmetadata:\n  name: {name}\nspec:\n  generators:\n  - files: [cm.yaml]\n"
                ),
            ),
            (
                "deploy/cm.yaml".to_string(),
                format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n"),
            ),
        ]
    };
    let started = Instant::now();
    for i in 0..n {
        let files = component(&format!("app{i}"));
        let files: Vec<(&str, &str)> = files
            .iter()
            .map(|(p, t)| (p.as_str(), t.as_str()))
            .collect();
        testing::app_repo(&repos, &format!("app{i}.git"), &[(&files, None)]);
    }
    let files = component("shared");
    let files: Vec<(&str, &str)> = files
        .iter()
        .map(|(p, t)| (p.as_str(), t.as_str()))
        .collect();
    testing::app_repo(&repos, "shared.git", &[(&files, None)]);
    eprintln!("{n} + 1 repositories written in {:.1?}", started.elapsed());

    let daemon = testing::git_daemon(&repos);
    let log = tmp.path().join("requests.log");
    let http = testing::git_http_logged(&repos, &log);
    let mut items = String::new();
    for i in 0..n {
        items.push_str(&format!(
            "    - source: {{git: \"git://127.0.0.1:{}/app{i}.git\", ref: main, path: deploy}}\n",
            daemon.port
        ));
        items.push_str(&format!(
            "    - name: shared{i}\n      source: {{git: \"{}/shared.git\", ref: main, path: deploy}}\n",
            http.http()
        ));
    }
    let platform = tmp.path().join("platform");
    std::fs::create_dir_all(&platform).unwrap();
    std::fs::create_dir_all(tmp.path().join(".git")).unwrap();
    std::fs::write(
        platform.join("platform.yaml"),
        format!("apiVersion: kiln/v1alpha1\nkind: Platform\nmetadata:\n  name: bench\nspec:\n  clusters:\n  - name: c\n    server: https://c.example.com\n  environments:\n  - name: dev\n    tier: dev\n    cluster: c\n  projects:\n  - name: shop\n    components:\n{items}"),
    )
    .unwrap();
    let mut opts = SourceOptions {
        cache_dir: Some(tmp.path().join("cache")),
        ..SourceOptions::default()
    };
    let callbacks = git2::RemoteCallbacks::new;
    let resolve = |opts: &SourceOptions| {
        kiln::source::resolve(&kiln::fs::RealFs, &platform, opts, &callbacks)
            .unwrap_or_else(|e| panic!("{e}"))
    };

    let t = Instant::now();
    let cold = resolve(&opts);
    let cold_time = t.elapsed();
    cold.store_lock().unwrap();
    println!(
        "cold: {} sources for {} instances in {cold_time:.1?}; {n} instances of shared.git cost {} fetch(es)",
        cold.used.len(),
        2 * n,
        testing::fetches_in(&log)
    );

    // Every server stopped: a warm resolve that touched the network would fail.
    drop(daemon);
    drop(http);
    opts.mode = Mode {
        locked: true,
        ..Mode::default()
    };
    let mut times: Vec<Duration> = (0..10)
        .map(|_| {
            let t = Instant::now();
            let warm = resolve(&opts);
            assert_eq!(warm.used.len(), cold.used.len());
            t.elapsed()
        })
        .collect();
    times.sort();
    println!(
        "warm (locked, cached, servers stopped): {} sources, best {:.1?}, median {:.1?} (target < 50 ms for 100)",
        cold.used.len(),
        times[0],
        times[times.len() / 2]
    );
}
