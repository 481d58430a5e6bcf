//! kiln's Helm engine timed in process, like for like with helm-python-sdk's in-process
//! `Chart.load` + render (scripts/helm-bench.py times both; this is the kiln side without
//! process start).
//!
//!     cargo run --release --example helm_bench -- [--runs N] [--values FILE] CHART...
//!
//! Per chart: the median of N runs of what `kiln helm template rel CHART -n ns
//! --include-crds` does (load the chart from disk, values, render, sort, print to a
//! string), and of its phases: load, render (values, templates, sort and assembly).
//! Output: one line per chart, `name total_ms load_ms render_ms bytes`.

use kiln::helm::{self, TemplateOptions};
use std::path::PathBuf;
use std::time::Instant;

/// The binary's allocator (src/main.rs, ADR 0009), so the phases are timed as `kiln` runs them.
#[global_allocator]
static GLOBAL: alloc::Alloc = alloc::Alloc;

#[path = "../src/alloc.rs"]
mod alloc;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    // As the binary starts (src/main.rs).
    kiln::cli::disable_transparent_huge_pages();
    let mut runs = 21;
    let mut charts: Vec<(PathBuf, Option<PathBuf>)> = Vec::new();
    let mut values: Option<PathBuf> = None;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--runs" => runs = args.next().and_then(|n| n.parse().ok()).unwrap_or(runs),
            "--values" => values = args.next().map(PathBuf::from),
            _ => charts.push((PathBuf::from(a), values.take())),
        }
    }
    let fs = kiln::fs::RealFs;
    for (chart, vals) in charts {
        let mut opts = TemplateOptions::new(&chart, "rel");
        opts.namespace = "ns".into();
        opts.include_crds = true;
        opts.value_files = vals.into_iter().collect();
        let (mut total, mut load, mut render) = (Vec::new(), Vec::new(), Vec::new());
        let mut bytes = 0;
        for _ in 0..runs {
            // On the pool, as `helm::template_with` runs.
            let t0 = Instant::now();
            let (t1, out) = rayon::scope(|_| {
                let c = match helm::load_chart(&fs, &chart) {
                    Ok(c) => c,
                    Err(e) => {
                        eprintln!("{}: {}", chart.display(), e.message);
                        std::process::exit(1);
                    }
                };
                let t1 = Instant::now();
                (t1, helm::template_loaded(&fs, c, &opts))
            });
            let t2 = Instant::now();
            match out {
                Ok(r) => bytes = r.stream.len(),
                Err(e) => {
                    eprintln!("{}: {e}", chart.display());
                    std::process::exit(1);
                }
            }
            load.push((t1 - t0).as_secs_f64() * 1e3);
            render.push((t2 - t1).as_secs_f64() * 1e3);
            total.push((t2 - t0).as_secs_f64() * 1e3);
        }
        let name = chart
            .parent()
            .and_then(|p| p.file_name())
            .or(chart.file_name())
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        println!(
            "{name} {:.2} {:.2} {:.2} {bytes}",
            median(total),
            median(load),
            median(render)
        );
    }
}
