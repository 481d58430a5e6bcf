//! Differential tests of kiln's native kustomize engine against `kubectl kustomize` (v5.5.0).
//!
//! Outputs are compared **byte for byte**: users see bytes, and switching a rendered
//! repository from kubectl to kiln must not change a line of it. `KILN_KUSTOMIZE_COMPARE=data`
//! compares as data instead (parsed YAML, documents in order, maps without order,
//! `1000 == 1000.0`), to tell a printing difference from a semantic one while triaging.
//! Every failing case is reported at once, with a diff.
//!
//! - `cases`: every `tests/kustomize/<case>/` holds `input/` (the build root, or
//!   `input/<dir>` when a file `root` names `<dir>`), optional `flags` (e.g.
//!   `--load-restrictor=LoadRestrictionsNone`), and either `expected.yaml` (kubectl's output,
//!   stored) or `expected-error.txt` (a substring the error must contain; a second line
//!   `at: <file>:<line>` also checks the error's location), and optionally
//!   `expected-fixes.yaml` (the output under `--fixes all`).
//! - Live mode (`KILN_LIVE_KUSTOMIZE=1`) re-runs kubectl on every case and checks the stored
//!   expectation still holds; for cases listed in `DIVERGENCES.md` it checks their
//!   `kustomize-actual.yaml` (kubectl's output) instead, and `divergences_differ_from_kubectl`
//!   that kiln's output really differs from it. Without kubectl the
//!   live check is skipped, unless `REQUIRE_KUBECTL=1`, which makes that a failure. Cases
//!   with kiln's own flags (`--strict`, `--fixes=…`) test kiln alone and are not re-run.
//! - `corpus`: builds the 58 real-world roots of `<shared>/corpus/roots.tsv` (shared dir from
//!   `KILN_SHARED_DIR`, default `<crate>/../shared`) and compares with their `_expected` files;
//!   runs whenever the corpus exists; a missing corpus is a failure under `REQUIRE_SHARED=1`.
#![allow(clippy::disallowed_methods)] // tests and dev tools set up trees on disk

use crate::support::{repo_root as crate_dir, shared_dir};
use kiln::fs::RealFs;
use kiln::kustomize::krusty::build::Fixes;
use kiln::kustomize::{BuildOptions, KustomizeError, LoadRestrictor, build};
use kiln::yaml;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

fn cases_dir() -> PathBuf {
    crate_dir().join("tests/kustomize")
}

struct Case {
    name: String,
    dir: PathBuf,
    root: PathBuf,
    flags: Vec<String>,
}

fn options_for(flags: &[String]) -> BuildOptions {
    let mut opts = BuildOptions::default();
    for f in flags {
        if f == "--load-restrictor=LoadRestrictionsNone" || f == "--load-restrictor=none" {
            opts.load_restrictor = LoadRestrictor::None;
        }
        if f == "--strict" {
            opts.strict = true;
        }
        if f == "--enable-helm" {
            opts.enable_helm = true;
        }
        if let Some(list) = f.strip_prefix("--fixes=") {
            opts.fixes = Fixes::parse(list).expect("valid --fixes in a case's flags");
        }
    }
    opts
}

/// Flags of kiln's own (`--strict`, `--fixes`): a case using them tests kiln, not kubectl.
fn kiln_only(flags: &[String]) -> bool {
    flags
        .iter()
        .any(|f| f == "--strict" || f.starts_with("--fixes"))
}

fn cases() -> Vec<Case> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(cases_dir()) else {
        return out;
    };
    let mut dirs: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join("input").is_dir())
        .collect();
    dirs.sort();
    for dir in dirs {
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        let root = match std::fs::read_to_string(dir.join("root")) {
            Ok(r) => dir.join("input").join(r.trim()),
            Err(_) => dir.join("input"),
        };
        let flags = std::fs::read_to_string(dir.join("flags"))
            .map(|f| f.split_whitespace().map(str::to_string).collect())
            .unwrap_or_default();
        out.push(Case {
            name,
            dir,
            root,
            flags,
        });
    }
    out
}

/// Parses a stored or produced YAML stream.
fn parse(name: &str, text: &str) -> Result<Vec<Value>, String> {
    yaml::parse_stream(name, text).map_err(|e| format!("{e}"))
}

/// A unified diff of two texts (kiln's own, `git::diff::unified`), `-` expected, `+` actual;
/// enough to read a failing case.
fn diff(expected: &str, actual: &str) -> String {
    kiln::git::diff::unified(expected, actual)
}

/// Whether outputs are compared as data (`KILN_KUSTOMIZE_COMPARE=data`) instead of bytes.
fn compare_as_data() -> bool {
    std::env::var("KILN_KUSTOMIZE_COMPARE").as_deref() == Ok("data")
}

/// Compares produced documents with expected ones as data; `Err` holds a readable report.
fn compare(expected: &[Value], actual: &[Value]) -> Result<(), String> {
    let same = expected.len() == actual.len()
        && expected
            .iter()
            .zip(actual)
            .all(|(e, a)| yaml::structurally_equal(e, a));
    if same {
        return Ok(());
    }
    Err(format!(
        "{} expected documents, {} produced\n{}",
        expected.len(),
        actual.len(),
        diff(
            &yaml::to_yaml_stream(expected),
            &yaml::to_yaml_stream(actual)
        )
    ))
}

/// Compares two printed streams: byte for byte, or as data under
/// `KILN_KUSTOMIZE_COMPARE=data`. `Err` holds a readable report.
fn compare_texts(expected: &str, actual: &str) -> Result<(), String> {
    if compare_as_data() {
        return compare(
            &parse("expected", expected)?,
            &parse("actual", actual).map_err(|e| format!("output does not parse: {e}"))?,
        );
    }
    if expected == actual {
        return Ok(());
    }
    Err(format!(
        "the bytes differ (`KILN_KUSTOMIZE_COMPARE=data` compares as data)\n{}",
        diff(expected, actual)
    ))
}

fn build_values(root: &Path, flags: &[String]) -> Result<Vec<Value>, KustomizeError> {
    let resources = build(&RealFs, root, &options_for(flags))?;
    Ok(resources.into_iter().map(|r| r.value).collect())
}

/// Runs one case; `Err` describes the failure.
fn run_case(case: &Case) -> Result<(), String> {
    let result = build_values(&case.root, &case.flags);
    if let Ok(expected_err) = std::fs::read_to_string(case.dir.join("expected-error.txt")) {
        let mut lines = expected_err.lines();
        let needle = lines.next().unwrap_or("").trim();
        let at = lines.find_map(|l| l.strip_prefix("at:")).map(str::trim);
        return match result {
            Ok(_) => Err(format!(
                "expected an error containing `{needle}`, but the build succeeded"
            )),
            Err(e) => {
                let msg = e.to_string();
                if !msg.contains(needle) {
                    return Err(format!("error `{msg}` does not contain `{needle}`"));
                }
                if let Some(at) = at {
                    let loc = e
                        .location()
                        .map(|l| format!("{}:{}", l.file, l.line))
                        .unwrap_or_default();
                    if loc != at {
                        return Err(format!(
                            "error located at `{loc}`, expected `{at}` (message: {msg})"
                        ));
                    }
                }
                Ok(())
            }
        };
    }
    let expected_text = std::fs::read_to_string(case.dir.join("expected.yaml"))
        .map_err(|e| format!("no expected.yaml or expected-error.txt: {e}"))?;
    compare_printed(&expected_text, result)?;
    // `expected-fixes.yaml`: the output with every `--fixes` on (kiln's opt-in behaviours).
    if let Ok(text) = std::fs::read_to_string(case.dir.join("expected-fixes.yaml")) {
        let mut flags = case.flags.clone();
        flags.push("--fixes=all".into());
        compare_printed(&text, build_values(&case.root, &flags))
            .map_err(|e| format!("with --fixes all: {e}"))?;
    }
    Ok(())
}

/// Prints a build's documents as `kiln kustomize` does and compares them with `expected_text`.
fn compare_printed(
    expected_text: &str,
    result: Result<Vec<Value>, KustomizeError>,
) -> Result<(), String> {
    let values = result.map_err(|e| format!("build failed: {:?}", miette::Report::new(e)))?;
    compare_texts(expected_text, &yaml::to_yaml_stream(&values))
}

#[test]
fn cases_match_kubectl_kustomize() {
    let cases = cases();
    assert!(
        !cases.is_empty(),
        "no cases found under {}",
        cases_dir().display()
    );
    let mut failures = Vec::new();
    for case in &cases {
        if let Err(e) = run_case(case) {
            failures.push(format!("── {} ──\n{e}", case.name));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n\n")
    );
}

/// Case names listed in `DIVERGENCES.md` (lines `- <case>: reason`, the name optionally in
/// backticks).
fn divergences() -> Vec<String> {
    let text = std::fs::read_to_string(cases_dir().join("DIVERGENCES.md")).unwrap_or_default();
    text.lines()
        .filter_map(|l| l.trim().strip_prefix("- "))
        .filter_map(|l| l.split(':').next())
        .map(|n| n.trim().trim_matches('`').to_string())
        .filter(|n| !n.is_empty())
        .collect()
}

fn kubectl_available() -> bool {
    Command::new("kubectl")
        .arg("version")
        .arg("--client")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Runs `kubectl kustomize <root> [flags]`: `Ok(stdout)` or `Err(stderr)`.
fn kubectl_kustomize(root: &Path, flags: &[String]) -> Result<String, String> {
    let out = Command::new("kubectl")
        .arg("kustomize")
        .arg(root)
        .args(flags)
        .output()
        .map_err(|e| format!("cannot run kubectl: {e}"))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

/// Where kubectl fails, kiln must fail with kubectl's cause (issue 37, class 9): a case's
/// `kubectl-error.txt` holds the cause as kubectl words it, and the live check holds kubectl's
/// stderr to it (whitespace collapsed: kubectl indents the config it quotes), so a case stays
/// an audit of which error each tool reports first.
fn kubectl_cause_missing(dir: &Path, stderr: &str) -> Option<String> {
    let cause = std::fs::read_to_string(dir.join("kubectl-error.txt")).ok()?;
    let squash = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    let cause = squash(&cause);
    (!squash(stderr).contains(&cause))
        .then(|| format!("kubectl fails, but not with `{cause}`:\n{stderr}"))
}

#[test]
fn live_cases_still_match_kubectl() {
    if std::env::var("KILN_LIVE_KUSTOMIZE").as_deref() != Ok("1") {
        return;
    }
    if !kubectl_available() {
        assert!(
            std::env::var("REQUIRE_KUBECTL").as_deref() != Ok("1"),
            "REQUIRE_KUBECTL=1 but kubectl is not available"
        );
        return;
    }
    let skip = divergences();
    let mut failures = Vec::new();
    for case in cases() {
        if kiln_only(&case.flags) {
            continue;
        }
        let live = kubectl_kustomize(&case.root, &case.flags);
        if skip.contains(&case.name) {
            // A divergence: kubectl's own output is stored beside it, and must still hold.
            let Ok(stored) = std::fs::read_to_string(case.dir.join("kustomize-actual.yaml")) else {
                continue;
            };
            let problem = match live {
                Err(e) => Some(format!("kubectl failed: {e}")),
                Ok(out) => compare_texts(&stored, &out)
                    .err()
                    .map(|d| format!("kustomize-actual.yaml: {d}")),
            };
            if let Some(p) = problem {
                failures.push(format!("── {} ──\n{p}", case.name));
            }
            continue;
        }
        let expects_error = case.dir.join("expected-error.txt").exists();
        let problem = match (live, expects_error) {
            (Ok(_), true) => Some("kubectl succeeds, but the case expects an error".to_string()),
            (Err(e), true) => kubectl_cause_missing(&case.dir, &e),
            (Err(e), false) => Some(format!("kubectl failed: {e}")),
            (Ok(out), false) => {
                let stored =
                    std::fs::read_to_string(case.dir.join("expected.yaml")).unwrap_or_default();
                compare_texts(&stored, &out).err()
            }
        };
        if let Some(p) = problem {
            failures.push(format!("── {} ──\n{p}", case.name));
        }
    }
    assert!(
        failures.is_empty(),
        "stored expectations drifted from kubectl:\n\n{}",
        failures.join("\n\n")
    );
}

/// A divergence case must show the divergence: kiln's output differs from kubectl's stored one.
#[test]
fn divergences_differ_from_kubectl() {
    let listed = divergences();
    for case in cases().into_iter().filter(|c| listed.contains(&c.name)) {
        let Ok(text) = std::fs::read_to_string(case.dir.join("kustomize-actual.yaml")) else {
            continue;
        };
        let kubectl = parse("kustomize-actual.yaml", &text).unwrap();
        let ours = match build_values(&case.root, &case.flags) {
            Ok(ours) => ours,
            // kiln fails where kubectl prints: that is the divergence.
            Err(_) if case.dir.join("expected-error.txt").exists() => continue,
            Err(e) => panic!("{}: {e}", case.name),
        };
        let printed = parse("output", &yaml::to_yaml_stream(&ours)).unwrap();
        assert!(
            compare(&kubectl, &printed).is_err(),
            "{} is listed in DIVERGENCES.md, but kiln prints kubectl's output",
            case.name
        );
    }
}

#[test]
fn every_divergence_names_a_case() {
    let names: Vec<String> = cases().into_iter().map(|c| c.name).collect();
    for d in divergences()
        .into_iter()
        .filter(|d| !d.starts_with("corpus/") && !d.starts_with("gap/"))
    {
        assert!(
            names.contains(&d),
            "DIVERGENCES.md lists `{d}`, which is not a case"
        );
    }
}

#[test]
fn corpus_roots_match_kubectl_kustomize() {
    let corpus = shared_dir().join("corpus");
    let Ok(index) = std::fs::read_to_string(corpus.join("roots.tsv")) else {
        assert!(
            !crate::support::shared_required(),
            "REQUIRE_SHARED=1 but {} has no roots.tsv (set KILN_SHARED_DIR)",
            corpus.display()
        );
        return;
    };
    let skip = divergences();
    let mut failures = Vec::new();
    let mut n = 0;
    for line in index.lines().skip(1) {
        let cols: Vec<&str> = line.split('\t').collect();
        if cols.len() < 5 {
            continue;
        }
        let (id, dir, flags, expected) = (cols[0], cols[2], cols[3], cols[4]);
        let known_gap = skip.contains(&format!("gap/{id}"));
        let flags: Vec<String> = if flags == "-" {
            vec![]
        } else {
            flags.split_whitespace().map(str::to_string).collect()
        };
        n += 1;
        let started = std::time::Instant::now();
        let result = (|| -> Result<(), String> {
            let expected_text =
                std::fs::read_to_string(corpus.join(expected)).map_err(|e| e.to_string())?;
            let actual = build_values(&corpus.join(dir), &flags)
                .map_err(|e| format!("build failed: {e}"))?;
            compare_texts(&expected_text, &yaml::to_yaml_stream(&actual))
        })();
        if started.elapsed().as_secs() >= 2 {
            eprintln!("corpus {id}: {:?}", started.elapsed());
        }
        match (result, known_gap) {
            (Err(e), false) => failures.push(format!("── {id} {dir} ──\n{e}")),
            (Err(_), true) => eprintln!("corpus {id}: known gap (see DIVERGENCES.md), still differs"),
            (Ok(()), true) => failures.push(format!(
                "── {id} {dir} ──\nlisted as a known gap in DIVERGENCES.md but matches now: remove it there"
            )),
            (Ok(()), false) => {}
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {n} corpus roots differ:\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

#[test]
fn named_target_missing_is_a_warning() {
    let root = cases_dir().join("p23-target-named-object-missing/input");
    let b = kiln::kustomize::krusty::build::build_report(&RealFs, &root, &BuildOptions::default())
        .expect("kustomize accepts a named target that matches nothing");
    assert_eq!(b.warnings.len(), 2, "{:?}", b.warnings);
    assert!(
        b.warnings[0].contains("kustomization.yaml:6")
            && b.warnings[0].contains("name=chekout")
            && b.warnings[0].contains("matches no resource"),
        "{:?}",
        b.warnings
    );
    let strict = BuildOptions {
        strict: true,
        ..Default::default()
    };
    let err = build(&RealFs, &root, &strict).unwrap_err();
    assert!(err.to_string().contains("name=chekout"), "{err}");
}

/// Issue 39, item 9: a chain of 3,000 bases builds (it overflowed the stack from about 1,500:
/// exit 134) on a thread with a 2 MiB stack, as kubectl builds it, byte for byte when kubectl
/// is here. The limit past which kiln refuses (`krusty::load::MAX_DEPTH`) is tested beside
/// the loader.
#[test]
fn a_3000_deep_chain_of_bases_builds_as_kubectl_builds_it() {
    let n = 3000;
    let t = tempfile::tempdir().unwrap();
    for i in 0..n {
        let dir = t.path().join(format!("b{i}"));
        std::fs::create_dir(&dir).unwrap();
        let text = if i + 1 < n {
            // Every tenth level transforms what its bases built.
            let label = if i % 10 == 0 {
                format!("commonLabels:\n  level-{i}: \"{i}\"\n")
            } else {
                String::new()
            };
            format!("resources:\n- ../b{}\n{label}", i + 1)
        } else {
            std::fs::write(
                dir.join("cm.yaml"),
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: leaf\ndata:\n  a: b\n",
            )
            .unwrap();
            "resources:\n- cm.yaml\nnamePrefix: deep-\n".to_string()
        };
        std::fs::write(dir.join("kustomization.yaml"), text).unwrap();
    }
    let root = t.path().join("b0");
    let built = root.clone();
    let out = std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(move || {
            kiln::kustomize::krusty::build::build_yaml(&RealFs, &built, &BuildOptions::default())
        })
        .unwrap()
        .join()
        .expect("no stack overflow")
        .expect("a 3,000-deep chain builds");
    assert!(out.contains("name: deep-leaf\n"), "{out}");
    assert!(out.contains("level-2990: \"2990\"\n") && out.contains("level-0: \"0\"\n"));
    if !kubectl_available() {
        assert!(
            std::env::var("REQUIRE_KUBECTL").as_deref() != Ok("1"),
            "REQUIRE_KUBECTL=1 but kubectl is not available"
        );
        return;
    }
    let expected = kubectl_kustomize(&root, &[]).expect("kubectl builds the chain");
    compare_texts(&expected, &out).unwrap();
}

/// Issue 39, item 19: a dangling symlink among a kustomization's files is named as one, not
/// reported as a missing kustomization (the kustomization file itself), a missing resource, or
/// an unreadable generator file; kubectl fails on each too.
#[cfg(unix)]
#[test]
fn a_dangling_symlink_is_named_as_one() {
    let t = tempfile::tempdir().unwrap();
    let p = t.path();
    let write = |rel: &str, text: &str| {
        let f = p.join(rel);
        std::fs::create_dir_all(f.parent().unwrap()).unwrap();
        std::fs::write(f, text).unwrap();
    };
    let link = |rel: &str, target: &str| {
        let f = p.join(rel);
        std::fs::create_dir_all(f.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(target, f).unwrap();
    };
    link("root/kustomization.yaml", "nowhere.yaml");
    write("base/kustomization.yaml", "resources:\n- sub\n");
    link("base/sub/kustomization.yaml", "gone.yaml");
    write(
        "gen/kustomization.yaml",
        "configMapGenerator:\n- name: c\n  files:\n  - conf/a.txt\n  - conf/gone.txt\n",
    );
    write("gen/conf/a.txt", "a\n");
    link("gen/conf/gone.txt", "nowhere.txt");
    for (dir, says) in [
        (
            "root",
            "`kustomization.yaml` is a symbolic link to `nowhere.yaml`, which does not exist",
        ),
        (
            "base",
            "`sub/kustomization.yaml` is a symbolic link to `gone.yaml`, which does not exist",
        ),
        (
            "gen",
            "`conf/gone.txt` is a symbolic link to `nowhere.txt`, which does not exist",
        ),
    ] {
        let err = build(&RealFs, &p.join(dir), &BuildOptions::default()).unwrap_err();
        assert!(err.to_string().contains(says), "{dir}: {err}");
        assert!(
            !err.to_string().contains("no kustomization file"),
            "{dir}: {err}"
        );
        if kubectl_available() {
            assert!(kubectl_kustomize(&p.join(dir), &[]).is_err(), "{dir}");
        }
    }
}
