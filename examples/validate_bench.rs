//! Validation against kiln's own parse of the same bytes (issue 36): reads one manifest
//! stream and times, in one process, `kiln::yaml::parse_stream` alone and
//! `kiln::conform::validate_files` (the same parse, then every object checked as `kiln
//! validate` checks it), then the printing of every finding with its snippet, as `kiln
//! validate` prints them. `scripts/bench-validate.sh` runs it on a 50 MB stream, clean and
//! with a defect seeded in each Deployment; see docs/BENCHMARKS.md.
//!
//!   cargo run --release --example validate_bench -- FILE [RUNS]
#![allow(clippy::disallowed_methods)] // a dev tool: reads its file and the clock
use std::time::Instant;

fn main() {
    let mut args = std::env::args().skip(1);
    let path = args.next().expect("usage: validate_bench FILE [RUNS]");
    let runs: u32 = args.next().map_or(3, |r| r.parse().expect("RUNS"));
    let bytes = std::fs::read(&path).expect("read FILE");
    let text = std::str::from_utf8(&bytes).expect("UTF-8");
    let options = kiln::conform::Options::default();
    let version = kiln_k8s::builtin::DEFAULT_VERSION;
    // The schemas of the version compile on first use: once, outside the timed runs.
    kiln_k8s::Validator::new(version).expect("version");
    let (mut parse, mut validate, mut print) = (f64::MAX, f64::MAX, f64::MAX);
    let mut objects = 0;
    let mut findings = 0;
    let mut printed = 0;
    for _ in 0..runs {
        let t = Instant::now();
        objects = kiln::yaml::parse_stream(&path, text).expect("YAML").len();
        parse = parse.min(t.elapsed().as_secs_f64());
        let t = Instant::now();
        let files = [(path.clone(), bytes.clone())];
        let report = kiln::conform::validate_files(&files, (version, Vec::new()), &options, &[])
            .expect("run");
        validate = validate.min(t.elapsed().as_secs_f64());
        findings = report.findings.len();
        // Every finding as `kiln validate` prints it: the CLI's clipping handler around
        // miette's graphical one, snippets included.
        let t = Instant::now();
        let handler =
            miette::GraphicalReportHandler::new_themed(miette::GraphicalTheme::unicode_nocolor())
                .with_context_lines(2);
        printed = 0;
        for f in &report.findings {
            let mut out = String::new();
            handler
                .render_report(&mut out, &kiln_base::diag::Clipped::new(f))
                .expect("render");
            printed += out.len();
        }
        print = print.min(t.elapsed().as_secs_f64());
    }
    let mb = bytes.len() as f64 / 1e6;
    println!(
        "| stream | objects | parse s | parse + validate s | validate / parse | findings | print findings s | printed KB |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|");
    println!(
        "| {mb:.1} MB | {objects} | {parse:.3} | {validate:.3} | {:.2}x | {findings} | {print:.3} | {} |",
        validate / parse,
        printed / 1000
    );
}
