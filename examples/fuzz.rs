//! The fuzz harness, on stable Rust: mutates the project's own inputs with a fixed seed and
//! runs `render`, `kustomize`, `validate` and `helm template` in process on each mutant
//! (the Helm target adds random templates to the charts of `tests/helm/charts/`; the deep
//! target generates kustomize base chains and charts nested hundreds deep), in memory
//! (`kiln::fs::MemFs`). It fails on any panic, and on any case that takes longer than the
//! per-case time limit (a hang). A stack overflow aborts the process, which fails too.
//!
//! ```text
//! cargo run --release --example fuzz -- --seconds 600          # on demand
//! cargo run --release --example fuzz -- --seconds 30           # .ci/run
//! cargo run --release --example fuzz -- --case 1234            # replay one case
//! cargo run --release --example fuzz -- --seconds 3600 --only helm   # one target, an hour
//! ```
//!
//! Inputs: `platforms/` + `components/` and every platform under `tests/fixtures/` (render),
//! every `tests/kustomize/*/input` (kustomize), and every YAML file of those (validate).
//! Mutations: bytes (flip, insert, delete, duplicate, interesting tokens), lines (delete,
//! duplicate, swap, re-indent, splice from another file) and YAML structure (replace, delete
//! or copy a node of the parsed document, then write it back). Case `n` of seed `s` is always
//! the same input, so a failure is replayed with `--case n`; its files are written to
//! `$CARGO_TARGET_DIR/fuzz-failures/case-<n>/` (default `target/`).
#![allow(clippy::disallowed_methods)] // a dev tool: it reads the corpus from disk

use kiln::fs::MemFs;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// One input tree and what to run on it.
#[derive(Clone)]
struct Corpus {
    kind: Kind,
    /// Files, relative to the tree root.
    files: Vec<(String, Vec<u8>)>,
    /// The directory to run on, relative to the root (platform dir or kustomization dir).
    entry: String,
}

#[derive(Clone, Copy, Debug)]
enum Kind {
    Render,
    Kustomize,
    Validate,
    /// A chart of `tests/helm/charts/` with a random template and random values, through
    /// `helm template` (under a small budget: a case never runs for long).
    Helm,
    /// Deep structure: a chain of kustomize bases, values and templates nested hundreds
    /// deep (generated, not mutated).
    Deep,
}

/// How many kinds there are (each gets an equal share of the cases).
const KINDS: usize = 5;

/// xorshift64*: small, deterministic, no dependency.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }
    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

const TOKENS: &[&str] = &[
    "${params.replicas}",
    "${params.",
    "${env.name}",
    "${{ vars.x }}",
    "&a ",
    "*a",
    "<<: *a",
    "[",
    "]",
    "{",
    "}",
    "- ",
    ": ",
    "\t",
    "\u{feff}",
    "\0",
    "'",
    "\"",
    "\n---\n",
    "../",
    "/",
    "..",
    "~",
    "null",
    "!!binary ",
    "!!int ",
    "0x",
    "1e400",
    "-9223372036854775809",
    "|-\n  ",
    ">\n",
    "? ",
    "#",
    "kind: Secret",
    "namespace: ../../etc",
    "name: Frontend_PDB",
    "resources: [/etc]",
];

fn mutate_bytes(rng: &mut Rng, bytes: &mut Vec<u8>) {
    let len = bytes.len();
    match rng.below(6) {
        0 if len > 0 => {
            let i = rng.below(len);
            bytes[i] ^= 1 << rng.below(8);
        }
        1 => {
            let i = rng.below(len + 1);
            bytes.insert(i, rng.next() as u8);
        }
        2 if len > 0 => {
            let i = rng.below(len);
            let n = rng.below(16).min(len - i);
            bytes.drain(i..i + n);
        }
        3 if len > 0 => {
            let i = rng.below(len);
            let n = rng.below(64).min(len - i);
            let chunk = bytes[i..i + n].to_vec();
            let at = rng.below(len + 1);
            bytes.splice(at..at, chunk);
        }
        _ => {
            let t = rng.pick(TOKENS).as_bytes().to_vec();
            let i = rng.below(len + 1);
            bytes.splice(i..i, t);
        }
    }
}

fn mutate_lines(rng: &mut Rng, bytes: &mut Vec<u8>, donor: &[u8]) {
    let text = String::from_utf8_lossy(bytes).into_owned();
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    if lines.is_empty() {
        lines.push(String::new());
    }
    let n = lines.len();
    let i = rng.below(n);
    match rng.below(6) {
        0 => {
            lines.remove(i);
        }
        1 => {
            let l = lines[i].clone();
            lines.insert(i, l);
        }
        2 => {
            let j = rng.below(n);
            lines.swap(i, j);
        }
        3 => lines[i] = format!("  {}", lines[i]),
        4 => lines[i] = lines[i].trim_start().to_string(),
        _ => {
            let donor = String::from_utf8_lossy(donor);
            let dl: Vec<&str> = donor.lines().collect();
            if !dl.is_empty() {
                lines.insert(i, rng.pick(&dl).to_string());
            }
        }
    }
    *bytes = (lines.join("\n") + "\n").into_bytes();
}

fn random_value(rng: &mut Rng) -> Value {
    match rng.below(9) {
        0 => Value::Null,
        1 => Value::Bool(rng.below(2) == 0),
        2 => serde_json::json!(rng.next() as i64),
        3 => Value::String(rng.pick(TOKENS).to_string()),
        4 => Value::String("x".repeat(rng.below(100_000))),
        5 => Value::Array(vec![]),
        6 => serde_json::json!({}),
        7 => {
            // Deep nesting, up to past the reader's limit.
            let mut v = Value::Null;
            for _ in 0..rng.below(300) {
                v = Value::Array(vec![v]);
            }
            v
        }
        _ => Value::String(format!(
            "${{params.{}}}",
            rng.pick(&["replicas", "x", "a.b"])
        )),
    }
}

/// A random node of `v` (by walking down), as a mutable reference.
fn random_node<'a>(rng: &mut Rng, v: &'a mut Value) -> &'a mut Value {
    let mut cur = v;
    loop {
        let stop = rng.below(3) == 0;
        let next_index = match &*cur {
            Value::Object(m) if !m.is_empty() && !stop => Some(rng.below(m.len())),
            Value::Array(a) if !a.is_empty() && !stop => Some(rng.below(a.len())),
            _ => None,
        };
        match next_index {
            Some(i) => {
                cur = match cur {
                    Value::Object(m) => m.values_mut().nth(i).expect("index in range"),
                    Value::Array(a) => &mut a[i],
                    _ => unreachable!(),
                }
            }
            None => return cur,
        }
    }
}

fn mutate_structure(rng: &mut Rng, bytes: &mut Vec<u8>) {
    let Ok(text) = std::str::from_utf8(bytes) else {
        return;
    };
    let Ok(mut docs) = kiln::yaml::parse_stream("fuzz.yaml", text) else {
        return;
    };
    if docs.is_empty() {
        return;
    }
    let d = rng.below(docs.len());
    let donor = random_node(rng, &mut docs[d].clone()).clone();
    let node = random_node(rng, &mut docs[d]);
    match rng.below(4) {
        0 => *node = random_value(rng),
        1 => *node = donor,
        2 => {
            if let Value::Object(m) = node
                && !m.is_empty()
            {
                let k = m
                    .keys()
                    .nth(rng.below(m.len()))
                    .cloned()
                    .unwrap_or_default();
                m.shift_remove(&k);
            }
        }
        _ => {
            if let Value::Object(m) = node {
                let key = rng.pick(&[
                    "name",
                    "namespace",
                    "resources",
                    "kind",
                    "labels",
                    "patches",
                    "files",
                    "bases",
                    "components",
                ]);
                m.insert(key.to_string(), random_value(rng));
            }
        }
    }
    let out: Vec<String> = docs.iter().map(kiln::yaml::to_yaml).collect();
    *bytes = out.join("---\n").into_bytes();
}

/// Words a random template is made of: operands and functions of every group, with the
/// arguments a chart would give them and ones it should not.
const OPERANDS: &[&str] = &[
    ".Values.a",
    ".Values.b.c",
    ".Values.missing",
    "$",
    ".",
    "$x",
    "\"s\"",
    "\"%.70000f\"",
    "1",
    "-3",
    "1.5",
    "1e3",
    "nil",
    "true",
    ".Release.Name",
    ".Chart",
    ".Subcharts",
    ".Capabilities.KubeVersion.Version",
    ".Files",
    "(list 1 \"a\" nil)",
    "(dict \"a\" 1)",
    "\"{{ .Values.a }}\"",
    "\"{{ tpl .t . }}\"",
    "100000000000",
];
const FUNCS: &[&str] = &[
    "upper",
    "trunc",
    "printf",
    "include \"t\"",
    "tpl",
    "default",
    "hasKey",
    "dig \"a\"",
    "toYaml",
    "fromYaml",
    "toJson",
    "fromJson",
    "index",
    "slice",
    "until",
    "repeat",
    "indent",
    "nindent",
    "quote",
    "keys",
    "pluck \"a\"",
    "set",
    "get",
    "merge",
    "list",
    "dict",
    "add",
    "mul",
    "div",
    "mod",
    "len",
    "eq",
    "lt",
    "and",
    "or",
    "not",
    "required \"r\"",
    "b64enc",
    "sha256sum",
    "regexReplaceAll \"a+\"",
    "semverCompare \">1\"",
    "date \"2006\"",
    "dateInZone \"15:04\"",
    "duration",
    "toDate \"2006\"",
    "genPrivateKey",
    "uuidv4",
    "randAlphaNum",
    "splitList \",\"",
    "join \",\"",
    "deepCopy",
    "print",
    "fail",
    "tuple",
];

/// A random pipeline, nested up to `depth` parentheses deep.
fn random_pipeline(rng: &mut Rng, depth: usize) -> String {
    let mut cmds = Vec::new();
    for _ in 0..1 + rng.below(3) {
        let mut words = vec![rng.pick(FUNCS).to_string()];
        for _ in 0..rng.below(4) {
            words.push(if depth > 0 && rng.below(4) == 0 {
                format!("({})", random_pipeline(rng, depth - 1))
            } else {
                rng.pick(OPERANDS).to_string()
            });
        }
        cmds.push(words.join(" "));
    }
    cmds.join(" | ")
}

/// A random template: actions, branches, ranges, defines and variables around pipelines.
fn random_template(rng: &mut Rng) -> Vec<u8> {
    let mut t = String::from("{{- $x := .Values.a }}\n");
    for _ in 0..1 + rng.below(6) {
        let p = random_pipeline(rng, 3);
        t.push_str(&match rng.below(8) {
            0 => format!("{{{{ if {p} }}}}a{{{{ else }}}}b{{{{ end }}}}\n"),
            1 => format!("{{{{ range $i, $v := {p} }}}}{{{{ $v }}}}{{{{ break }}}}{{{{ end }}}}\n"),
            2 => format!("{{{{ with {p} }}}}{{{{ . }}}}{{{{ end }}}}\n"),
            3 => format!("{{{{ define \"t\" }}}}{{{{ {p} }}}}{{{{ end }}}}\n"),
            4 => format!("{{{{ $x = {p} }}}}{{{{ $y = 1 }}}}\n"),
            _ => format!("k: {{{{ {p} }}}}\n"),
        });
    }
    t.into_bytes()
}

/// A generated case of deep structure: a chain of kustomize bases, or a chart whose values
/// and template nest hundreds deep.
fn deep(rng: &mut Rng) -> Corpus {
    let n = 1 + rng.below(600);
    let mut files = Vec::new();
    if rng.below(2) == 0 {
        for i in 0..n {
            let body = if i + 1 == n {
                "resources: [cm.yaml]\n".to_string()
            } else {
                format!("resources: [../k{}]\nnamePrefix: p{i}-\n", i + 1)
            };
            files.push((format!("k{i}/kustomization.yaml"), body.into_bytes()));
        }
        files.push((
            format!("k{}/cm.yaml", n - 1),
            b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n".to_vec(),
        ));
        return Corpus {
            kind: Kind::Kustomize,
            files,
            entry: "k0".into(),
        };
    }
    let values = format!("a: {}1{}\n", "{x: ".repeat(n), "}".repeat(n));
    let template = match rng.below(3) {
        0 => format!("{{{{ {}1{} }}}}", "(".repeat(n), ")".repeat(n)),
        1 => format!("{}x{}", "{{ if true }}".repeat(n), "{{ end }}".repeat(n)),
        _ => "{{ toYaml .Values }}{{ toJson .Values | fromJson | deepCopy | len }}".into(),
    };
    files.push((
        "c/Chart.yaml".into(),
        b"apiVersion: v2\nname: c\nversion: 0.1.0\n".to_vec(),
    ));
    files.push(("c/values.yaml".into(), values.into_bytes()));
    files.push(("c/templates/t.yaml".into(), template.into_bytes()));
    Corpus {
        kind: Kind::Helm,
        files,
        entry: "c".into(),
    }
}

/// The mutant of `corpus` for case `n` of `seed`.
fn mutant(corpora: &[Corpus], seed: u64, n: u64, only: Option<usize>) -> Corpus {
    let mut rng = Rng::new(seed ^ n.wrapping_mul(0xD1B5_4A32_D192_ED03));
    // Each kind gets an equal share of the cases, however many inputs it has.
    let kind = rng.below(KINDS);
    let kind = only.unwrap_or(kind);
    if kind == Kind::Deep as usize {
        return deep(&mut rng);
    }
    let of_kind: Vec<&Corpus> = corpora.iter().filter(|c| c.kind as usize == kind).collect();
    let mut c = if of_kind.is_empty() {
        rng.pick(corpora).clone()
    } else {
        (*rng.pick(&of_kind)).clone()
    };
    let yaml: Vec<usize> = (0..c.files.len())
        .filter(|&i| c.files[i].0.ends_with(".yaml") || c.files[i].0.ends_with(".yml"))
        .collect();
    let edits = 1 + rng.below(3);
    for _ in 0..edits {
        let target = if yaml.is_empty() {
            rng.below(c.files.len())
        } else {
            *rng.pick(&yaml)
        };
        let donor = c.files[rng.below(c.files.len())].1.clone();
        let bytes = &mut c.files[target].1;
        if matches!(c.kind, Kind::Helm) && rng.below(2) == 0 {
            c.files.push((
                format!("{}/templates/fuzz.yaml", c.entry),
                random_template(&mut rng),
            ));
            continue;
        }
        match rng.below(3) {
            0 => mutate_bytes(&mut rng, bytes),
            1 => mutate_lines(&mut rng, bytes, &donor),
            _ => mutate_structure(&mut rng, bytes),
        }
    }
    c
}

const ROOT: &str = "/r";

fn mem_fs(c: &Corpus) -> MemFs {
    let mut fs = MemFs::new();
    fs.add_dir(format!("{ROOT}/.git"));
    for (p, b) in &c.files {
        fs.add_file(format!("{ROOT}/{p}"), b);
    }
    fs
}

/// Runs one case; an `Err` is never a failure (bad input must be an error), only a panic is.
fn run(c: &Corpus) {
    let fs = mem_fs(c);
    let entry = PathBuf::from(format!("{ROOT}/{}", c.entry));
    match c.kind {
        Kind::Render => {
            let mut opts = kiln::pipeline::RenderOptions::new(&entry);
            opts.fs = Arc::new(fs);
            if let Err(e) = kiln::pipeline::build(&opts, &|_, _| {}).map(|b| b.set) {
                // Errors must render without panicking, too.
                let _ = format!("{:?}", miette::Report::new(e));
            }
        }
        Kind::Kustomize => {
            let opts = kiln::kustomize::BuildOptions::default();
            if let Err(e) = kiln::kustomize::build(&fs, &entry, &opts) {
                let _ = format!("{:?}", miette::Report::new(e));
            }
        }
        Kind::Helm => {
            let mut opts = kiln::helm::TemplateOptions::new(&entry, "rel");
            opts.include_crds = true;
            // A small budget: a random template may loop for ever within Helm's semantics.
            opts.budget = kiln::helm::template::exec::Budget {
                steps: 2_000_000,
                output_bytes: 16 << 20,
            };
            if let Err(e) = kiln::helm::template_with(&fs, &opts) {
                let _ = format!("{:?}", miette::Report::new(e));
            }
        }
        Kind::Deep => unreachable!("deep cases are generated as Kustomize or Helm cases"),
        Kind::Validate => {
            let mut set = kiln::artifact::ArtifactSet::new();
            for (p, b) in &c.files {
                set.insert(p.as_str(), b.clone());
            }
            let schemas = kiln::check::SchemaSet::empty();
            if let Ok(report) = kiln::check::validate_artifacts(&set, &schemas) {
                for f in report.findings {
                    let _ = format!("{:?}", miette::Report::new(f));
                }
            }
        }
    }
}

fn read_tree(root: &Path, rel: &str, out: &mut Vec<(String, Vec<u8>)>) {
    let Ok(entries) = std::fs::read_dir(root.join(rel)) else {
        return;
    };
    let mut entries: Vec<_> = entries.flatten().collect();
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let name = e.file_name().to_string_lossy().into_owned();
        let child = if rel.is_empty() {
            name
        } else {
            format!("{rel}/{name}")
        };
        let Ok(t) = e.file_type() else { continue };
        if t.is_dir() {
            read_tree(root, &child, out);
        } else if t.is_file()
            && let Ok(bytes) = std::fs::read(e.path())
        {
            out.push((child, bytes));
        }
    }
}

fn corpora(repo: &Path) -> Vec<Corpus> {
    let mut out = Vec::new();
    // Render: the repository's own platforms, and every fixture holding platforms/.
    let mut trees = vec![repo.to_path_buf()];
    if let Ok(rd) = std::fs::read_dir(repo.join("tests/fixtures/kargo")) {
        let mut dirs: Vec<PathBuf> = rd.flatten().map(|e| e.path()).collect();
        dirs.sort();
        trees.extend(dirs.into_iter().filter(|d| d.join("platforms").is_dir()));
    }
    for tree in trees {
        let mut files = Vec::new();
        read_tree(&tree, "platforms", &mut files);
        read_tree(&tree, "components", &mut files);
        let mut platforms: Vec<String> = files
            .iter()
            .filter_map(|(p, _)| p.strip_suffix("/platform.yaml").map(str::to_string))
            .collect();
        platforms.sort();
        for p in platforms {
            out.push(Corpus {
                kind: Kind::Render,
                files: files.clone(),
                entry: p,
            });
        }
    }
    // Kustomize: every case's input directory.
    if let Ok(rd) = std::fs::read_dir(repo.join("tests/kustomize")) {
        let mut cases: Vec<PathBuf> = rd.flatten().map(|e| e.path()).collect();
        cases.sort();
        for case in cases.into_iter().filter(|c| c.join("input").is_dir()) {
            let mut files = Vec::new();
            read_tree(&case, "input", &mut files);
            let sub = std::fs::read_to_string(case.join("root"))
                .map(|s| format!("input/{}", s.trim()))
                .unwrap_or_else(|_| "input".into());
            out.push(Corpus {
                kind: Kind::Kustomize,
                files: files.clone(),
                entry: sub,
            });
            out.push(Corpus {
                kind: Kind::Validate,
                files,
                entry: String::new(),
            });
        }
    }
    // Helm: every chart written here, with its subcharts.
    let charts = repo.join("tests/helm/charts");
    let mut dirs = Vec::new();
    for top in std::fs::read_dir(&charts).into_iter().flatten().flatten() {
        if top.path().join("Chart.yaml").exists() {
            dirs.push(top.path());
        } else {
            for inner in std::fs::read_dir(top.path())
                .into_iter()
                .flatten()
                .flatten()
            {
                if inner.path().join("Chart.yaml").exists() {
                    dirs.push(inner.path());
                }
            }
        }
    }
    dirs.sort();
    for d in dirs {
        let mut files = Vec::new();
        let rel = d
            .strip_prefix(&charts)
            .unwrap_or(&d)
            .to_string_lossy()
            .into_owned();
        read_tree(&charts, &rel, &mut files);
        out.push(Corpus {
            kind: Kind::Helm,
            files,
            entry: rel,
        });
    }
    out
}

fn main() {
    let mut seconds = 30u64;
    let mut seed = 0x6b69_6c6e_u64; // "kiln"
    let mut only: Option<u64> = None;
    let mut limit = 20u64;
    let mut target: Option<usize> = None;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        if a == "--only" {
            let names = ["render", "kustomize", "validate", "helm", "deep"];
            let name = args.next().unwrap_or_default();
            target = Some(
                names
                    .iter()
                    .position(|n| *n == name)
                    .unwrap_or_else(|| panic!("--only takes one of {names:?}")),
            );
            continue;
        }
        let mut val = || {
            args.next()
                .and_then(|v| v.parse::<u64>().ok())
                .expect("a number")
        };
        match a.as_str() {
            "--seconds" => seconds = val(),
            "--seed" => seed = val(),
            "--case" => only = Some(val()),
            "--case-timeout" => limit = val(),
            other => panic!(
                "unknown argument {other} (--seconds N, --seed N, --case N, --case-timeout S, --only KIND)"
            ),
        }
    }
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let corpora = Arc::new(corpora(&repo));
    assert!(
        !corpora.is_empty(),
        "no corpus found under {}",
        repo.display()
    );
    // Diagnostics are formatted by the CLI's own reporter; panics are reported by the
    // harness, once, with the case number.
    kiln::cli::install_reporter();
    std::panic::set_hook(Box::new(|_| {}));
    let start = Instant::now();
    let mut n = only.unwrap_or(0);
    let mut counts = [0u64; KINDS];
    loop {
        let case = mutant(&corpora, seed, n, target);
        counts[case.kind as usize] += 1;
        let (tx, rx) = std::sync::mpsc::channel();
        let job = case.clone();
        std::thread::Builder::new()
            .name(format!("case-{n}"))
            .stack_size(64 << 20)
            .spawn(move || {
                let result = std::panic::catch_unwind(|| run(&job)).map_err(|p| {
                    p.downcast_ref::<String>()
                        .cloned()
                        .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                        .unwrap_or_default()
                });
                let _ = tx.send(result);
            })
            .expect("spawn a case thread");
        let failure = match rx.recv_timeout(Duration::from_secs(limit)) {
            Ok(Ok(())) => None,
            Ok(Err(panic)) => Some(format!("panic: {panic}")),
            Err(_) => Some(format!("no result within {limit} s (a hang)")),
        };
        if let Some(why) = failure {
            let target = std::env::var_os("CARGO_TARGET_DIR")
                .map_or_else(|| repo.join("target"), PathBuf::from);
            let dir = target.join(format!("fuzz-failures/case-{n}"));
            for (p, b) in &case.files {
                let path = dir.join(p);
                if let Some(parent) = path.parent() {
                    let _ = std::fs::create_dir_all(parent);
                }
                let _ = std::fs::write(path, b);
            }
            eprintln!(
                "fuzz: case {n} ({:?} on `{}`, seed {seed}) failed: {why}\n  files: {}\n  replay: cargo run --release --example fuzz -- --seed {seed} --case {n}",
                case.kind,
                case.entry,
                dir.display()
            );
            std::process::exit(1);
        }
        n += 1;
        if only.is_some() || start.elapsed() >= Duration::from_secs(seconds) {
            break;
        }
    }
    println!(
        "fuzz: {} cases clean in {:.0?} (render {}, kustomize {}, validate {}, helm {}; seed {seed})",
        counts.iter().sum::<u64>(),
        start.elapsed(),
        counts[0],
        counts[1],
        counts[2],
        counts[3]
    );
    // The plain closing line CI reads.
    println!("fuzz: {} passed, 0 failed", counts.iter().sum::<u64>());
}
