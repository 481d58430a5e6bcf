//! Loading a chart as Helm v4's `pkg/chart/v2/loader` does: a directory (walked in lexical
//! order, `.helmignore` applied as `pkg/ignore` reads it, hidden files under `templates/`
//! skipped) or a `.tgz` archive; `Chart.yaml`, `values.yaml`, `values.schema.json`,
//! `requirements.yaml` (apiVersion v1), `templates/`, `charts/` (unpacked or packaged
//! subcharts) and every other file as `.Files`.
//!
//! What only `.Files` reaches (a chart's README, changelog, tests, `files/`, `crds/`) is not
//! read at load: a chart directory keeps each such file's path, and the render reads it
//! through the same [`FileSystem`] on first use ([`FileData::Deferred`], [`read_deferred`]).
//! Most of them are never used (ingress-nginx: 183 of its 230 files), and reading them was
//! half of loading the chart. An archive is inflated whole, as before.
//!
//! Symbolic links are followed as Helm follows them; the file system decides where they may
//! lead (see [`load_with`]).

use super::template::parse::{self, Slot};
use super::template::value::Value;
use super::yaml;
use kiln_base::fs::{FileSystem, PlainKind};
use std::collections::BTreeMap;
use std::path::Path;
use std::rc::Rc;
use std::sync::Arc;

/// A loaded chart.
#[derive(Clone)]
pub struct Chart {
    /// Chart.yaml as read (plus `dependencies` from requirements.yaml for v1 charts).
    pub meta: Value,
    pub name: String,
    pub version: String,
    pub api_version: String,
    pub kind_library: bool,
    /// values.yaml (an empty map when absent).
    pub values: Value,
    /// values.schema.json; compiled on a pool thread as the chart loads ([`Schema`]).
    pub schema: Option<Arc<Schema>>,
    /// `templates/...` paths and texts, in load order; each text's parse is begun on a pool
    /// thread as the chart loads ([`Slot`]).
    pub templates: Vec<(String, Arc<Slot>)>,
    /// Every other file (crds/ included), in load order; shared with each render's
    /// `.Files` instead of copied. A chart directory's are not read yet ([`FileData`]).
    pub files: Rc<ChartFiles>,
    /// Subcharts found under charts/, in load order.
    pub subcharts: Vec<Chart>,
    /// The declared dependencies (Chart.yaml or requirements.yaml).
    pub deps: Vec<Dependency>,
    /// Where it came from, for errors.
    pub origin: String,
}

/// A chart's values.schema.json. Its syntax is checked at load (a load error, as kiln has
/// always reported it); compiling it (jsonschema first checks it against its meta-schema)
/// needs only its text, so a pool job does both while the chart loads and renders
/// ([`super::ahead`]): the JSON parse, whose outcome the loader takes at the end of the
/// chart's files (`Schema::syntax`), then the compile, which the render takes.
/// traefik's 181 KB schema was a fifth of its render, and checking its syntax a tenth of
/// the loading thread's work.
pub struct Schema {
    text: Arc<str>,
    syntax: super::ahead::Ahead<Result<(), String>>,
    compiled: super::ahead::Ahead<Result<jsonschema::Validator, String>>,
}

impl Schema {
    fn new(text: Arc<str>) -> Arc<Schema> {
        Arc::new(Schema {
            text,
            syntax: Default::default(),
            compiled: Default::default(),
        })
    }

    /// Whether the text is JSON, and serde_json's reason when it is not: as parsed ahead,
    /// or checked now without building the document.
    fn syntax(&self) -> Result<(), String> {
        self.syntax.take().unwrap_or_else(|| {
            // serde_json's skipping parser words some errors otherwise, so a failure is
            // parsed again for the message a full parse gives.
            if serde_json::from_str::<serde::de::IgnoredAny>(&self.text).is_ok() {
                return Ok(());
            }
            let e = serde_json::from_str::<serde_json::Value>(&self.text).err();
            Err(e.map_or_else(|| "not valid JSON".to_string(), |e| e.to_string()))
        })
    }

    /// The compiled schema, or jsonschema's reason it is not a valid one: the one compiled
    /// ahead, or compiled now. Each render takes its own.
    pub fn validator(&self) -> Result<jsonschema::Validator, String> {
        self.compiled.take().unwrap_or_else(|| self.compile(None))
    }

    fn compile(&self, json: Option<serde_json::Value>) -> Result<jsonschema::Validator, String> {
        let json = match json {
            Some(j) => j,
            None => serde_json::from_str(&self.text).map_err(|e| e.to_string())?,
        };
        jsonschema::validator_for(&json).map_err(|e| e.to_string())
    }

    /// The pool's side: parses the text (the loader waits on this one), then compiles it.
    fn compile_ahead(&self) {
        let mut json = None;
        self.syntax.run(
            || match serde_json::from_str::<serde_json::Value>(&self.text) {
                Ok(j) => {
                    json = Some(j);
                    Ok(())
                }
                // The loader's verdict is the skipping parser's, which lets through what
                // a full parse refuses (a lone surrogate): that is the compile's error.
                Err(_) if serde_json::from_str::<serde::de::IgnoredAny>(&self.text).is_ok() => {
                    Ok(())
                }
                Err(e) => Err(e.to_string()),
            },
        );
        // A text the loader checked itself is parsed here for the compile.
        self.compiled.run(|| self.compile(json));
    }
}

/// A chart's `.Files`: each file's name inside the chart and its content, in load order.
#[derive(Clone, Debug, Default)]
pub struct ChartFiles(pub Vec<(String, FileData)>);

impl std::ops::Deref for ChartFiles {
    type Target = [(String, FileData)];
    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

/// A file's bytes as text, each invalid UTF-8 sequence replaced: what a CRD file prints as,
/// and what JSON and YAML make of the bytes (templates get Go's bytes: `encode::go_text`).
/// std's lossy conversion walks the bytes one by one; valid text, nearly every file,
/// goes through the word-at-a-time validator instead: traefik's CRDs took a sixth of its
/// render the other way.
pub fn lossy_text(d: &[u8]) -> String {
    match std::str::from_utf8(d) {
        Ok(t) => t.to_owned(),
        Err(_) => String::from_utf8_lossy(d).into_owned(),
    }
}

/// [`lossy_text`] of bytes that are the caller's to keep: valid text is not copied.
pub fn lossy_text_owned(d: Vec<u8>) -> String {
    String::from_utf8(d).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// A chart file's content.
#[derive(Clone, Debug)]
pub enum FileData {
    /// Read at load (every file of an archive; a directory's files the loader uses).
    Loaded(Vec<u8>),
    /// A file of a chart directory that only `.Files` (or `--include-crds`) reaches: where
    /// to read it, through the file system the chart was loaded with, when a render first
    /// uses it ([`read_deferred`]). A file nobody uses is never read.
    Deferred(std::path::PathBuf),
}

/// Reads a [`FileData::Deferred`] file as the loader would have: at most 5 MiB, a UTF-8
/// byte order mark dropped. The error names the file (`name`, inside the chart) and, for an
/// I/O error, where it was read. Helm's loader refuses such a file when it loads the chart;
/// kiln only when a template reads it (tests/helm/DIVERGENCES.md).
pub fn read_deferred(fs: &dyn FileSystem, name: &str, real: &Path) -> Result<Vec<u8>, String> {
    match fs.read_at_most(real, MAX_FILE_SIZE) {
        Ok(Some(data)) => Ok(strip_utf8_bom(data)),
        Ok(None) => Err(format!(
            "chart file {name:?} is larger than the maximum file size {MAX_FILE_SIZE}"
        )),
        Err(e) => Err(format!(
            "cannot read chart file {name:?} ({}): {e}",
            real.display()
        )),
    }
}

#[derive(Clone, Debug)]
pub struct Dependency {
    pub name: String,
    pub version: String,
    pub alias: String,
    pub condition: String,
    pub tags: Vec<String>,
    pub import_values: Vec<Value>,
    pub repository: String,
}

/// A chart that cannot be loaded.
#[derive(Debug, Clone)]
pub struct LoadError {
    pub file: String,
    pub line: Option<usize>,
    pub message: String,
}

type R<T> = Result<T, LoadError>;

fn err(file: &str, message: impl Into<String>) -> LoadError {
    LoadError {
        file: file.to_string(),
        line: None,
        message: message.into(),
    }
}

/// Loads the chart at `path` (a directory or a `.tgz`) through `fs`.
///
/// Symbolic links are followed, as Helm's loader (`pkg/chart/v2/loader/directory.go` with
/// `internal/sympath`) follows them; what a link may reach is the file system's rule: under
/// `kiln render` (a [`kiln_base::fs::RootedFs`]) a link out of the repository root is an error,
/// never a silently missing file. A link cycle and a link to nothing are errors too.
pub fn load_with(fs: &dyn FileSystem, path: &Path) -> R<Chart> {
    let shown = path.display().to_string();
    if fs.is_file(path) {
        let data = fs.read(path).map_err(|e| err(&shown, e.to_string()))?;
        return load_archive(&data, &shown);
    }
    if !fs.is_dir(path) {
        return Err(err(&shown, "no chart directory or archive at this path"));
    }
    let root = fs
        .canonicalize(path)
        .map_err(|e| err(&shown, e.to_string()))?;
    let mut todo = Vec::new();
    let rules = match fs.read_to_string(&path.join(".helmignore")) {
        Ok(t) => Ignore::parse(&t),
        Err(_) => Ignore::parse(""),
    }
    .map_err(|e| err(&format!("{shown}/.helmignore"), e))?;
    let walked = walk(fs, path, &mut vec![root], "", &rules, &mut todo);
    let files = read_all(fs, todo).map_err(|e| err(&shown, e))?;
    walked.map_err(|e| err(&shown, e))?;
    build(Some(fs), files, &shown)
}

/// Builds the chart and its unpacked subcharts from their files, after handing one pool
/// job every template text to parse ([`parse::parse_slots`]) and every values.schema.json
/// to compile, in the order below, while this thread goes on to Chart.yaml, values.yaml
/// and then the render's values: a render takes the trees from the other end
/// ([`Slot::take`]). A file taken for a template here that the loader then files otherwise
/// is still its bytes; a template missed here is parsed by the render.
fn build(fs: Option<&dyn FileSystem>, files: Vec<(String, FileData)>, shown: &str) -> R<Chart> {
    let mut ahead = AheadWork::default();
    let (mut template_bytes, mut schema_bytes) = (0, 0);
    for (name, data) in &files {
        if let FileData::Loaded(d) = data
            && let Ok(t) = std::str::from_utf8(d)
        {
            if is_template_path(name) {
                template_bytes += t.len();
                ahead
                    .templates
                    .insert(name.clone(), Slot::new(Arc::from(t)));
            } else if is_schema_path(name) {
                schema_bytes += t.len();
                ahead
                    .schemas
                    .insert(name.clone(), Schema::new(Arc::from(t)));
            }
        }
    }
    // The render takes deeper paths first, each depth in reverse order (Helm's order):
    // the pool starts at the other end.
    let mut order: Vec<(usize, &String, &Arc<Slot>)> = ahead
        .templates
        .iter()
        .map(|(n, s)| (n.matches('/').count(), n, s))
        .collect();
    order.sort_by(|a, b| (a.0, a.1).cmp(&(b.0, b.1)));
    let slots: Vec<Arc<Slot>> = order.into_iter().map(|(_, _, s)| s.clone()).collect();
    let schemas: Vec<Arc<Schema>> = ahead.schemas.values().cloned().collect();
    // One job, not one per kind of work: on two cores, a second job beside the render
    // thread took the render's core (traefik's render was 20-40 % slower with two pool
    // threads than with one). The render takes the trees when it starts and the compiled
    // schemas when it ends, so the templates go first, unless the schemas would then not
    // be compiled by its end: when compiling them costs as much as parsing the templates.
    // A byte of schema costs about twice a byte of template (callgrind: traefik's schema 66
    // instructions a byte, bitnami-postgresql's templates 33), so traefik's 181 KB of
    // schema go before its 142 KB of templates, and bitnami-postgresql's 4.5 KB after its
    // 243 KB. A schema nobody has started when the render's check needs it is compiled by
    // the check.
    let schemas_first = 2 * schema_bytes >= template_bytes;
    if !slots.is_empty() || !schemas.is_empty() {
        rayon::spawn(move || {
            let compile = || schemas.iter().for_each(|s| s.compile_ahead());
            if schemas_first {
                compile();
            }
            parse::parse_slots(&slots, &super::engine::resolve);
            if !schemas_first {
                compile();
            }
        });
    }
    from_files(fs, files, shown, "", &mut ahead)
}

/// What [`build`] hands to the pool before the loader files anything, by walk name: template
/// texts to parse and values.schema.json texts to compile. [`from_files`] takes each for
/// the chart file it belongs to; one it does not take (a file the loader files otherwise)
/// is work done for nothing, never a wrong result.
#[derive(Default)]
struct AheadWork {
    templates: BTreeMap<String, Arc<Slot>>,
    schemas: BTreeMap<String, Arc<Schema>>,
}

/// Whether a walk name is the values.schema.json of the chart or of an unpacked subchart
/// (`charts/<name>/`, at any depth).
fn is_schema_path(name: &str) -> bool {
    let mut rest = name;
    loop {
        if rest == "values.schema.json" {
            return true;
        }
        match rest.strip_prefix("charts/").and_then(|r| r.split_once('/')) {
            Some((_, r)) => rest = r,
            None => return false,
        }
    }
}

/// Whether a chart file (a walk name) is a template of the chart or of a subchart
/// unpacked under `charts/`.
fn is_template_path(name: &str) -> bool {
    let mut rest = name;
    loop {
        if rest.starts_with("templates/") {
            return true;
        }
        let Some((_, inner)) = rest.strip_prefix("charts/").and_then(|r| r.split_once('/')) else {
            return false;
        };
        rest = inner;
    }
}

/// Whether the loader itself uses the file named `name` (inside a chart): Chart.yaml, the
/// values, its schema, the lock and requirements files, `templates/`, and what makes the
/// subcharts under `charts/` (their own files by the same rule, or a packaged subchart).
/// The rest only `.Files` and `--include-crds` reach; those are read when a render uses
/// them. A file this answers `false` for and [`from_files`] needs after all is read there.
fn read_at_load(name: &str) -> bool {
    let archive = |n: &str| n.ends_with(".tgz") || n.ends_with(".tar.gz");
    match name {
        n if loader_reads(n) => true,
        n => match n.strip_prefix("charts/") {
            None => false,
            Some(rest) if rest.ends_with(".prov") => false,
            Some(rest) => match rest.split_once('/') {
                None => archive(rest),
                Some((cname, _)) if cname.starts_with(['_', '.']) => false,
                Some((_, inner)) => read_at_load(inner) || archive(inner),
            },
        },
    }
}

/// Whether [`from_files`] reads the chart's own file `name` (not its subcharts').
fn loader_reads(name: &str) -> bool {
    matches!(
        name,
        "Chart.yaml"
            | "values.yaml"
            | "values.schema.json"
            | "Chart.lock"
            | "requirements.lock"
            | "requirements.yaml"
    ) || name.starts_with("templates/")
}

/// Reads the files a walk found that the loader uses ([`read_at_load`]), in its order; the
/// others are kept as paths ([`FileData::Deferred`]). They are read on the pool's threads:
/// a chart is dozens of templates and each is four system calls. The first read error in
/// walk order is the one reported, as a walk that reads as it goes would report it; a walk
/// error found after the files read so far comes after their errors.
fn read_all(fs: &dyn FileSystem, todo: Vec<Found>) -> Result<Vec<(String, FileData)>, String> {
    use rayon::prelude::*;
    // A symbolic link is read now whatever it names: where it may lead is the file
    // system's rule (a link out of `kiln render`'s root is refused), and that refusal is a
    // load error, as in Helm, never a render that happens to read it.
    let read: Vec<Option<Result<Option<Vec<u8>>, std::io::Error>>> = todo
        .par_iter()
        .with_min_len(16)
        .map(|f| {
            (f.linked || read_at_load(&f.name)).then(|| fs.read_at_most(&f.path, MAX_FILE_SIZE))
        })
        .collect();
    let mut files = Vec::with_capacity(todo.len());
    for (f, data) in todo.into_iter().zip(read) {
        let data = match data {
            None => FileData::Deferred(f.path),
            Some(data) => FileData::Loaded(load_read(&f.name, data)?),
        };
        files.push((f.name, data));
    }
    Ok(files)
}

/// A file the loader reads, or the loader's error for it.
fn load_read(path: &str, data: Result<Option<Vec<u8>>, std::io::Error>) -> Result<Vec<u8>, String> {
    match data {
        // Refused on its size, as Helm refuses it on its `stat`, before reading it.
        Ok(None) => {
            let base = path.rsplit('/').next().unwrap_or(path);
            Err(format!(
                "chart file {base:?} is larger than the maximum file size {MAX_FILE_SIZE}"
            ))
        }
        Ok(Some(data)) => Ok(strip_utf8_bom(data)),
        Err(e) => Err(format!("{path}: {e}")),
    }
}

/// A file the walk found: its name in the chart, the path it was listed at, and whether
/// that path is a symbolic link.
struct Found {
    name: String,
    path: std::path::PathBuf,
    linked: bool,
}

/// Walks `base/rel` in lexical order; `seen` holds the real directories from the chart root
/// down to this one, so a link back up is reported instead of walked forever.
fn walk(
    fs: &dyn FileSystem,
    base: &Path,
    seen: &mut Vec<std::path::PathBuf>,
    rel: &str,
    rules: &Ignore,
    out: &mut Vec<Found>,
) -> Result<(), String> {
    let dir = if rel.is_empty() {
        base.to_path_buf()
    } else {
        base.join(rel)
    };
    let entries = fs
        .read_dir_kinds(&dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?;
    for (e, kind) in entries {
        let Some(name) = e.file_name().map(|n| n.to_string_lossy()) else {
            continue;
        };
        let path = if rel.is_empty() {
            name.to_string()
        } else {
            format!("{rel}/{name}")
        };
        // An entry that is no link is where it is listed: its real path is its directory's
        // (the last of `seen`) joined with its name, no resolving needed, and only a
        // directory needs it (for the cycle check).
        let (real, is_dir, is_file, linked) = match (kind, seen.last()) {
            (Some(PlainKind::Dir), Some(dir)) => (Some(dir.join(&*name)), true, false, false),
            (Some(PlainKind::File), Some(_)) => (None, false, true, false),
            _ => {
                let real = fs
                    .canonicalize(&e)
                    .map_err(|e2| format!("error evaluating symlink {path}: {e2}"))?;
                let is_dir = fs.is_dir(&real);
                let is_file = !is_dir && fs.is_file(&real);
                let linked = seen.last().is_none_or(|dir| real != dir.join(&*name));
                (Some(real), is_dir, is_file, linked)
            }
        };
        if rules.ignored(&path, is_dir) {
            continue;
        }
        if let (true, Some(real)) = (is_dir, real) {
            if seen.contains(&real) {
                return Err(format!(
                    "{path}: a symbolic link cycle (it leads back to `{}`)",
                    real.display()
                ));
            }
            seen.push(real);
            walk(fs, base, seen, &path, rules, out)?;
            seen.pop();
        } else if is_file {
            out.push(Found {
                name: path,
                path: e,
                linked,
            });
        } else {
            return Err(format!(
                "cannot load irregular file {path} as it has file mode type bits set"
            ));
        }
    }
    Ok(())
}

/// Helm's `archive.MaxDecompressedFileSize`: no chart file may be larger (5 MiB).
const MAX_FILE_SIZE: u64 = 5 * 1024 * 1024;
/// Helm's `archive.MaxDecompressedChartSize`: an archive inflates to less than this (100 MiB).
const MAX_CHART_SIZE: u64 = 100 * 1024 * 1024;

/// Loads a packaged chart: every entry under the archive's top directory.
pub fn load_archive(data: &[u8], shown: &str) -> R<Chart> {
    let gz = flate2::read::GzDecoder::new(data);
    let mut ar = tar::Archive::new(gz);
    let mut files: Vec<(String, Vec<u8>)> = Vec::new();
    let mut remaining = MAX_CHART_SIZE;
    let entries = ar.entries().map_err(|e| err(shown, e.to_string()))?;
    for entry in entries {
        let mut entry = entry.map_err(|e| err(shown, e.to_string()))?;
        if !entry.header().entry_type().is_file() {
            continue;
        }
        let path = entry
            .path()
            .map_err(|e| err(shown, e.to_string()))?
            .to_string_lossy()
            .replace('\\', "/");
        let Some((_, inner)) = path.split_once('/') else {
            continue;
        };
        if inner.split('/').any(|p| p == "..") {
            return Err(err(
                shown,
                format!("chart archive entry {path:?} leaves the chart"),
            ));
        }
        // Helm's limits, checked on the header before anything is inflated: a small archive
        // cannot make the loader hold gigabytes.
        let size = entry.header().size().unwrap_or(u64::MAX);
        if size > remaining {
            return Err(err(
                shown,
                format!("decompressed chart is larger than the maximum size {MAX_CHART_SIZE}"),
            ));
        }
        if size > MAX_FILE_SIZE {
            return Err(err(
                shown,
                format!(
                    "decompressed chart file {path:?} is larger than the maximum file size {MAX_FILE_SIZE}"
                ),
            ));
        }
        let mut buf = Vec::new();
        std::io::Read::read_to_end(&mut std::io::Read::take(&mut entry, remaining), &mut buf)
            .map_err(|e| err(shown, e.to_string()))?;
        remaining -= buf.len() as u64;
        if (buf.len() as u64) < size || remaining == 0 {
            return Err(err(
                shown,
                format!("decompressed chart is larger than the maximum size {MAX_CHART_SIZE}"),
            ));
        }
        files.push((inner.to_string(), strip_utf8_bom(buf)));
    }
    // No `.helmignore` here, and no hidden-template default either: Helm's archive loader
    // (pkg/chart/loader/archive) takes every file; `helm package` applied the rules when it
    // made the archive.
    files.sort_by(|a, b| walk_order(&a.0, &b.0));
    let files = files
        .into_iter()
        .map(|(n, d)| (n, FileData::Loaded(d)))
        .collect();
    build(None, files, shown)
}

/// Directory-walk order: path segments compared one by one.
fn walk_order(a: &str, b: &str) -> std::cmp::Ordering {
    a.split('/').cmp(b.split('/'))
}

/// The file as text, borrowed: values.yaml and Chart.yaml are parsed in place, not copied.
fn text<'a>(name: &str, data: &'a [u8], shown: &str) -> R<&'a str> {
    std::str::from_utf8(data).map_err(|_| err(&format!("{shown}/{name}"), "not UTF-8 text"))
}

fn read_yaml(name: &str, data: &[u8], shown: &str) -> R<Value> {
    let t = text(name, data, shown)?;
    yaml::parse_one(t).map_err(|e| LoadError {
        file: format!("{shown}/{name}"),
        line: Some(e.line),
        message: e.to_string(),
    })
}

fn read_yaml_strings(name: &str, data: &[u8], shown: &str) -> R<Value> {
    let t = text(name, data, shown)?;
    yaml::parse_one_strings(t).map_err(|e| LoadError {
        file: format!("{shown}/{name}"),
        line: Some(e.line),
        message: e.to_string(),
    })
}

/// Helm's loaders drop a UTF-8 byte order mark from the start of every chart file, read from
/// a directory or an archive (pkg/chart/v2/loader/directory.go, pkg/chart/loader/archive/
/// archive.go: `bytes.TrimPrefix(data, utf8bom)`), so `.Files.Get` never sees one.
fn strip_utf8_bom(mut data: Vec<u8>) -> Vec<u8> {
    if data.starts_with(&[0xEF, 0xBB, 0xBF]) {
        data.drain(..3);
    }
    data
}

/// A chart's files sorted into its parts, after Helm v4.2.3's `LoadFiles`
/// (pkg/chart/v2/loader/load.go). A deferred file the loader needs (one [`read_at_load`]
/// did not foresee) is read here, through `fs`; the others stay deferred, for `.Files`.
/// `prefix` is where these files are in the walk (`charts/x/` for a subchart), the key of
/// a template's slot in `ahead`.
fn from_files(
    fs: Option<&dyn FileSystem>,
    files: Vec<(String, FileData)>,
    shown: &str,
    prefix: &str,
    ahead: &mut AheadWork,
) -> R<Chart> {
    let mut schema_at = None;
    let chart = chart_from_files(fs, files, shown, prefix, ahead, &mut schema_at);
    // The schema's syntax, checked on the pool while the rest loaded. Helm meets it where
    // the schema is in load order: an error before it returned before it was reached, and
    // one after it (a later file, a subchart) comes second.
    if let Some((schema, file)) = schema_at {
        schema.syntax().map_err(|m| err(&file, m))?;
    }
    chart
}

/// [`from_files`] but for the schema's syntax: the schema found, with its file for the
/// error, is left in `schema_at`.
fn chart_from_files(
    fs: Option<&dyn FileSystem>,
    files: Vec<(String, FileData)>,
    shown: &str,
    prefix: &str,
    ahead: &mut AheadWork,
    schema_at: &mut Option<(Arc<Schema>, String)>,
) -> R<Chart> {
    let mut meta = None;
    let mut values = Value::map(BTreeMap::new());
    let mut schema = None;
    let mut templates = Vec::new();
    let mut other = Vec::new();
    let mut requirements = None;
    let mut v1_files = Vec::new();
    let mut sub: BTreeMap<String, Vec<(String, FileData)>> = BTreeMap::new();
    let mut sub_order: Vec<String> = Vec::new();
    let bytes = |name: &str, data: FileData| -> R<Vec<u8>> {
        match (data, fs) {
            (FileData::Loaded(d), _) => Ok(d),
            (FileData::Deferred(real), Some(fs)) => {
                load_read(name, fs.read_at_most(&real, MAX_FILE_SIZE)).map_err(|e| err(shown, e))
            }
            (FileData::Deferred(_), None) => Err(err(shown, format!("{name}: not read"))),
        }
    };
    for (name, data) in files {
        // What only `.Files` reaches, and what goes to a subchart, keeps its `FileData`.
        if let Some(rest) = name.strip_prefix("charts/") {
            if rest.ends_with(".prov") {
                other.push((name, data));
                continue;
            }
            let cname = rest.split('/').next().unwrap_or("").to_string();
            if !sub.contains_key(&cname) {
                sub_order.push(cname.clone());
            }
            let rest = rest.to_string();
            sub.entry(cname).or_default().push((rest, data));
            continue;
        }
        if !loader_reads(&name) {
            other.push((name, data));
            continue;
        }
        let data = bytes(&name, data)?;
        match name.as_str() {
            "Chart.yaml" => meta = Some(read_yaml_strings(&name, &data, shown)?),
            "values.yaml" => {
                let t = text(&name, &data, shown)?;
                values = Value::Map(super::values::load_values(t).map_err(|e| LoadError {
                    file: format!("{shown}/{name}"),
                    line: Some(e.line),
                    message: format!("cannot load values.yaml: {e}"),
                })?);
            }
            "values.schema.json" => {
                let t = text(&name, &data, shown)?;
                let walked = format!("{prefix}{name}");
                let s = ahead
                    .schemas
                    .remove(&walked)
                    .unwrap_or_else(|| Schema::new(Arc::from(t)));
                *schema_at = Some((s.clone(), format!("{shown}/{name}")));
                schema = Some(s);
            }
            // The lock files are read (a broken one fails the load) but are not `.Files`;
            // requirements.yaml and requirements.lock are, for apiVersion v1 charts only.
            "Chart.lock" => {
                read_yaml(&name, &data, shown)?;
            }
            "requirements.lock" => {
                read_yaml(&name, &data, shown)?;
                v1_files.push((name, FileData::Loaded(data)));
            }
            "requirements.yaml" => {
                requirements = Some(read_yaml_strings(&name, &data, shown)?);
                v1_files.push((name, FileData::Loaded(data)));
            }
            _ => {
                let walked = format!("{prefix}{name}");
                let slot = match ahead.templates.remove(&walked) {
                    Some(slot) => slot,
                    None => {
                        let t = String::from_utf8(data)
                            .map_err(|_| err(&format!("{shown}/{name}"), "not UTF-8 text"))?;
                        Slot::new(Arc::from(t))
                    }
                };
                templates.push((name, slot));
            }
        }
    }
    let Some(meta) = meta else {
        return Err(err(shown, "Chart.yaml file is missing"));
    };
    let Value::Map(mm) = &meta else {
        return Err(err(
            &format!("{shown}/Chart.yaml"),
            "Chart.yaml is not a mapping",
        ));
    };
    let get = |k: &str| {
        mm.borrow()
            .get(k)
            .map(super::funcs::conv::s)
            .unwrap_or_default()
    };
    let name = get("name");
    if name.is_empty() {
        return Err(err(
            &format!("{shown}/Chart.yaml"),
            "validation: chart.metadata.name is required",
        ));
    }
    // A chart without apiVersion is a v1 chart (Helm 2 accepted those).
    let api_version = get("apiVersion");
    if api_version.is_empty() || api_version == "v1" {
        other.extend(v1_files);
    }
    let kind_library = get("type") == "library";
    let version = get("version");
    // Dependencies: Chart.yaml (v2) or requirements.yaml (v1).
    let dep_source = if api_version == "v1" || mm.borrow().get("dependencies").is_none() {
        requirements.as_ref().and_then(|r| match r {
            Value::Map(m) => m.borrow().get("dependencies").cloned(),
            _ => None,
        })
    } else {
        None
    }
    .or_else(|| mm.borrow().get("dependencies").cloned());
    let mut deps = Vec::new();
    if let Some(Value::List(l)) = &dep_source {
        for d in l.iter() {
            let Value::Map(dm) = d else { continue };
            let dm = dm.borrow();
            let g = |k: &str| dm.get(k).map(super::funcs::conv::s).unwrap_or_default();
            deps.push(Dependency {
                name: g("name"),
                version: g("version"),
                alias: g("alias"),
                condition: g("condition"),
                tags: match dm.get("tags") {
                    Some(Value::List(t)) => t.iter().map(super::funcs::conv::s).collect(),
                    _ => Vec::new(),
                },
                import_values: match dm.get("import-values") {
                    Some(Value::List(t)) => t.to_vec(),
                    _ => Vec::new(),
                },
                repository: g("repository"),
            });
        }
    }
    let mut subcharts = Vec::new();
    for cname in sub_order {
        // `charts/_x` and `charts/.x` are not subcharts (load.go: `strings.IndexAny(n, "_.") == 0`).
        if cname.starts_with(['_', '.']) {
            continue;
        }
        let mut files = sub.remove(&cname).unwrap_or_default();
        let sub_shown = format!("{shown}/charts/{cname}");
        if files.len() == 1 && files[0].0.ends_with(".tgz")
            || files.len() == 1 && files[0].0.ends_with(".tar.gz")
        {
            let (n, data) = files.remove(0);
            subcharts.push(load_archive(
                &bytes(&format!("charts/{n}"), data)?,
                &sub_shown,
            )?);
            continue;
        }
        let inner: Vec<(String, FileData)> = files
            .into_iter()
            .filter_map(|(n, d)| n.split_once('/').map(|(_, r)| (r.to_string(), d)))
            .collect();
        if inner.is_empty() {
            continue;
        }
        let sub_prefix = format!("{prefix}charts/{cname}/");
        subcharts.push(from_files(fs, inner, &sub_shown, &sub_prefix, ahead)?);
    }
    Ok(Chart {
        meta,
        name,
        version,
        api_version,
        kind_library,
        values,
        schema,
        templates,
        files: Rc::new(ChartFiles(other)),
        subcharts,
        deps,
        origin: shown.to_string(),
    })
}

/// `.helmignore` rules (`pkg/ignore/rules.go`), each pattern compiled once: the walk asks
/// every rule about every entry, and matching was a seventh of loading a chart.
struct Ignore {
    rules: Vec<Rule>,
}

struct Rule {
    matcher: Matcher,
    negate: bool,
    must_dir: bool,
    kind: RuleKind,
}

enum RuleKind {
    Root,
    Path,
    Base,
}

/// A `filepath.Match` pattern, with the two shapes most rules have (`.DS_Store`, `*.tmp`)
/// matched without the general matcher.
enum Matcher {
    /// No metacharacter: the name must equal it.
    Exact(String),
    /// `*` then no metacharacter: the name ends with it and has no `/` before.
    Suffix(String),
    /// Anything else, as chars.
    Glob(Vec<char>),
}

impl Matcher {
    fn new(pattern: &str) -> Matcher {
        let plain = |t: &str| !t.contains(['*', '?', '[', '\\']);
        if plain(pattern) {
            Matcher::Exact(pattern.to_string())
        } else if let Some(rest) = pattern.strip_prefix('*')
            && plain(rest)
        {
            Matcher::Suffix(rest.to_string())
        } else {
            Matcher::Glob(pattern.chars().collect())
        }
    }

    fn matches(&self, name: &str) -> bool {
        match self {
            Matcher::Exact(p) => p == name,
            Matcher::Suffix(p) => name
                .strip_suffix(p.as_str())
                .is_some_and(|head| !head.contains('/')),
            Matcher::Glob(p) => glob_chars(p, name, '^'),
        }
    }
}

impl Ignore {
    /// The rules of a `.helmignore`, or `pkg/ignore`'s error for the first rule it refuses:
    /// a `**` anywhere in it, or a pattern `filepath.Match` calls malformed.
    fn parse(text: &str) -> Result<Ignore, String> {
        // `AddDefaults` (hidden files under templates/). Helm appends it after the file's
        // rules; every rule can only add a reason to ignore, so the order is no matter.
        let mut rules = vec![Rule {
            matcher: Matcher::new("templates/.?*"),
            negate: false,
            must_dir: false,
            kind: RuleKind::Path,
        }];
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        for line in text.lines() {
            let mut l = line.trim();
            if l.is_empty() || l.starts_with('#') {
                continue;
            }
            if l.contains("**") {
                return Err("double-star (**) syntax is not supported".into());
            }
            if !go_pattern_valid(l) {
                return Err("syntax error in pattern".into());
            }
            let negate = l.starts_with('!');
            if negate {
                l = &l[1..];
            }
            let must_dir = l.ends_with('/');
            let l = l.trim_end_matches('/');
            let (kind, pattern) = if let Some(p) = l.strip_prefix('/') {
                (RuleKind::Root, p)
            } else if l.contains('/') {
                (RuleKind::Path, l)
            } else {
                (RuleKind::Base, l)
            };
            rules.push(Rule {
                matcher: Matcher::new(pattern),
                negate,
                must_dir,
                kind,
            });
        }
        Ok(Ignore { rules })
    }

    fn ignored(&self, path: &str, is_dir: bool) -> bool {
        // The base name once per entry, not once per rule: most rules are base-name rules,
        // and splitting every walked path again for each was a sixth of loading
        // ingress-nginx (239 entries, 17 rules).
        let base = path.rsplit_once('/').map_or(path, |(_, b)| b);
        for r in &self.rules {
            if r.must_dir && !is_dir {
                // A negated directory rule ignores every file; a plain one none.
                if r.negate {
                    return true;
                }
                continue;
            }
            let target = match r.kind {
                RuleKind::Base => base,
                _ => path,
            };
            if r.matcher.matches(target) != r.negate {
                return true;
            }
        }
        false
    }
}

/// Go's `filepath.Match` (`*`, `?`, `[...]`, `\` escapes; `*` does not cross `/`).
pub fn glob_match(pattern: &str, name: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    glob_chars(&p, name, '^')
}

/// [`glob_match`] over a pattern already split into chars; the name is walked in place.
/// `negator` opens a negated class: `^` for Go's `filepath.Match`, `!` for gobwas/glob
/// (`.Files.Glob`); in each, the other one is a plain member of the class.
fn glob_chars(p: &[char], n: &str, negator: char) -> bool {
    let mut chars = n.chars();
    let first = chars.next();
    let after = chars.as_str();
    match p.first() {
        None => n.is_empty(),
        Some('*') => {
            let rest = &p[1..];
            if glob_chars(rest, n, negator) {
                return true;
            }
            for (i, c) in n.char_indices() {
                if c == '/' {
                    break;
                }
                if glob_chars(rest, &n[i + c.len_utf8()..], negator) {
                    return true;
                }
            }
            false
        }
        Some('?') => first.is_some_and(|c| c != '/') && glob_chars(&p[1..], after, negator),
        Some('[') => {
            let Some(c) = first else { return false };
            let mut i = 1;
            let negate = p.get(1) == Some(&negator);
            if negate {
                i += 1;
            }
            let mut hit = false;
            let mut first = true;
            while i < p.len() && (p[i] != ']' || first) {
                first = false;
                let lo = if p[i] == '\\' && i + 1 < p.len() {
                    i += 1;
                    p[i]
                } else {
                    p[i]
                };
                if i + 2 < p.len() && p[i + 1] == '-' && p[i + 2] != ']' {
                    if lo <= c && c <= p[i + 2] {
                        hit = true;
                    }
                    i += 3;
                } else {
                    if lo == c {
                        hit = true;
                    }
                    i += 1;
                }
            }
            if i >= p.len() {
                return false;
            }
            hit != negate && c != '/' && glob_chars(&p[i + 1..], after, negator)
        }
        Some('\\') if p.len() > 1 => first == Some(p[1]) && glob_chars(&p[2..], after, negator),
        Some(c) => first == Some(*c) && glob_chars(&p[1..], after, negator),
    }
}

/// gobwas/glob with `/` as separator, as `.Files.Glob` matches: `*` stays within a path
/// segment, `**` crosses them, `{a,b}` alternatives, `?` and classes as `filepath.Match`.
pub fn glob_match_double(pattern: &str, name: &str) -> bool {
    if let (Some(open), Some(close)) = (pattern.find('{'), pattern.find('}'))
        && open < close
    {
        {
            let (pre, rest) = pattern.split_at(open);
            let alts = &rest[1..close - open];
            let post = &rest[close - open + 1..];
            return alts
                .split(',')
                .any(|a| glob_match_double(&format!("{pre}{a}{post}"), name));
        }
    }
    if let Some(i) = pattern.find("**") {
        let (pre, post) = (&pattern[..i], &pattern[i + 2..]);
        for j in (0..=name.len()).filter(|&j| name.is_char_boundary(j)) {
            if !gobwas_piece(pre, &name[..j]) {
                continue;
            }
            for k in (j..=name.len()).filter(|&k| name.is_char_boundary(k)) {
                if glob_match_double(post, &name[k..]) {
                    return true;
                }
            }
        }
        return false;
    }
    gobwas_piece(pattern, name)
}

/// A gobwas/glob pattern without `**` or `{…}`: as `filepath.Match`, but `[!…]` negates.
fn gobwas_piece(pattern: &str, name: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    glob_chars(&p, name, '!')
}

/// Whether Go's `filepath.Match` accepts `pattern` (its `ErrBadPattern` rules: `matchChunk`
/// and `getEsc`, Go 1.25; Match checks the whole pattern even where the name fails early).
/// A class needs its `]` and at least one member, a member or a range end cannot be `-` or
/// `]` unescaped or missing, and a `\` must escape something.
fn go_pattern_valid(pattern: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    // getEsc: one member (maybe escaped), and something must follow it.
    let esc = |i: &mut usize| -> bool {
        match p.get(*i) {
            None | Some('-') | Some(']') => return false,
            Some('\\') => {
                *i += 1;
                if *i >= p.len() {
                    return false;
                }
            }
            _ => {}
        }
        *i += 1;
        *i < p.len()
    };
    let mut i = 0;
    while i < p.len() {
        match p[i] {
            '[' => {
                i += 1;
                if i >= p.len() {
                    return false;
                }
                if p[i] == '^' {
                    i += 1;
                }
                let mut ranges = 0;
                loop {
                    if p.get(i) == Some(&']') && ranges > 0 {
                        i += 1;
                        break;
                    }
                    if !esc(&mut i) {
                        return false;
                    }
                    if p[i] == '-' {
                        i += 1;
                        if !esc(&mut i) {
                            return false;
                        }
                    }
                    ranges += 1;
                }
            }
            '\\' => {
                if i + 1 >= p.len() {
                    return false;
                }
                i += 2;
            }
            _ => i += 1,
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The pre-pass hands the pool the schemas of the chart and of unpacked subcharts at
    /// any depth, and nothing else with that base name.
    #[test]
    fn schema_paths_are_the_charts_and_unpacked_subcharts() {
        for yes in [
            "values.schema.json",
            "charts/sub/values.schema.json",
            "charts/a/charts/b/values.schema.json",
        ] {
            assert!(is_schema_path(yes), "{yes}");
        }
        for no in [
            "templates/values.schema.json",
            "files/values.schema.json",
            "charts/values.schema.json",
            "charts/sub/files/values.schema.json",
            "values.schema.jsonx",
        ] {
            assert!(!is_schema_path(no), "{no}");
        }
    }

    /// What real Helm v4.2.3 answers (helm-python-sdk `Chart.load` with the rule as the
    /// whole .helmignore): `**` and malformed patterns fail the load; the rest load.
    #[test]
    fn helmignore_refuses_what_pkg_ignore_refuses() {
        let refused = [
            ("**/x", "double-star (**) syntax is not supported"),
            ("a[", "syntax error in pattern"),
            ("abc\\", "syntax error in pattern"),
            ("[]a", "syntax error in pattern"),
            ("[a-]", "syntax error in pattern"),
            ("![x", "syntax error in pattern"),
            ("x/[^", "syntax error in pattern"),
            ("[a-\\", "syntax error in pattern"),
            ("*[", "syntax error in pattern"),
        ];
        for (rule, want) in refused {
            match Ignore::parse(&format!("# a comment\n{rule}\n")) {
                Err(e) => assert_eq!(e, want, "{rule:?}"),
                Ok(_) => panic!("{rule:?} was accepted"),
            }
        }
        for rule in [
            "# **",
            "[^x]*.txt",
            "[!a]bc",
            "\\*x",
            "[a-c]?",
            "*.[ch]",
            "a/b/",
            "!keep",
            "[\\]]",
            "a]",
        ] {
            assert!(Ignore::parse(rule).is_ok(), "{rule:?}");
        }
        // `[!a]` is the class of `!` and `a` in filepath.Match: Go negates with `^` only.
        let r = Ignore::parse("[!a]bc\n").unwrap();
        assert!(r.ignored("abc", false) && r.ignored("!bc", false));
        assert!(!r.ignored("bbc", false));
        let r = Ignore::parse("[^a]bc\n").unwrap();
        assert!(!r.ignored("abc", false) && r.ignored("bbc", false));
    }

    #[test]
    fn files_glob_negates_with_a_bang_as_gobwas_does() {
        assert!(glob_match_double("[!a]bc", "bbc") && !glob_match_double("[!a]bc", "abc"));
        assert!(glob_match_double("[^a]bc", "^bc") && glob_match_double("[^a]bc", "abc"));
        assert!(!glob_match_double("[^a]bc", "bbc"));
    }

    /// One pool job per chart, schemas first (chart and unpacked subchart), then templates:
    /// once the job has parsed the (last) template, every schema was compiled before it.
    /// With a job per kind of work, the tiny template was parsed while the large schema
    /// was still compiling on the other pool thread.
    #[test]
    fn the_ahead_job_compiles_every_schema_before_it_parses() {
        let props: Vec<String> = (0..3000)
            .map(|i| format!("\"p{i}\": {{\"type\": \"string\", \"pattern\": \"^a{i}[0-9]+$\"}}"))
            .collect();
        let big = format!(
            "{{\"type\": \"object\", \"properties\": {{{}}}}}",
            props.join(", ")
        );
        let mut fs = kiln_base::fs::MemFs::new();
        fs.add_file("/c/Chart.yaml", "apiVersion: v2\nname: c\nversion: 1.0.0\n")
            .add_file("/c/values.schema.json", "{\"type\": \"object\"}")
            .add_file("/c/templates/t.yaml", "a: {{ .Values.a }}\n")
            .add_file(
                "/c/charts/sub/Chart.yaml",
                "apiVersion: v2\nname: sub\nversion: 1.0.0\n",
            )
            .add_file("/c/charts/sub/values.schema.json", big.as_str());
        for _ in 0..5 {
            let c = load_with(&fs, Path::new("/c")).expect("loads");
            let slot = &c.templates[0].1;
            let mut waited = 0;
            while !slot.is_parsed_ahead() {
                assert!(waited < 30_000, "the template was never parsed ahead");
                std::thread::sleep(std::time::Duration::from_millis(1));
                waited += 1;
            }
            let sub = &c.subcharts[0];
            for s in [&c.schema, &sub.schema] {
                let s = s.as_ref().expect("a schema");
                assert!(
                    s.compiled.is_done(),
                    "a schema compiled after the templates"
                );
            }
        }
    }

    /// The pool's parse of a schema gives the loader its syntax: once the job is done the
    /// loader's check takes that outcome instead of scanning the text again, and a broken
    /// schema gives the message of the loader's own check.
    #[test]
    fn a_schema_parsed_ahead_answers_the_loaders_syntax_check() {
        let good = Schema::new(Arc::from("{\"type\": \"object\"}"));
        good.compile_ahead();
        assert!(good.syntax.is_done() && good.compiled.is_done());
        assert_eq!(good.syntax(), Ok(()));
        assert!(!good.syntax.is_done(), "taken");
        let text = "{\"type\": \"object\",\n \"properties\": }";
        let bad = Schema::new(Arc::from(text));
        bad.compile_ahead();
        let ahead = bad.syntax();
        let own = Schema::new(Arc::from(text)).syntax();
        assert_eq!(ahead, own);
        assert_eq!(
            ahead.unwrap_err(),
            "expected value at line 2 column 16",
            "serde_json's message"
        );
        // What only a full parse refuses passes the loader either way (the render's
        // compile refuses it).
        let surrogate = r#"{"description": "\ud800"}"#;
        let s = Schema::new(Arc::from(surrogate));
        s.compile_ahead();
        assert_eq!(s.syntax(), Ok(()));
        assert!(s.validator().is_err());
        assert_eq!(Schema::new(Arc::from(surrogate)).syntax(), Ok(()));
    }

    /// Helm meets the schema where it is in load order: its error wins over a later file's
    /// (values.yaml) and over a subchart's, and loses to an earlier one's (Chart.yaml).
    #[test]
    fn a_broken_schema_is_the_error_where_it_is_in_load_order() {
        let mut fs = kiln_base::fs::MemFs::new();
        fs.add_file("/c/Chart.yaml", "apiVersion: v2\nname: c\nversion: 1.0.0\n")
            .add_file("/c/values.schema.json", "{\"type\": ")
            .add_file("/c/values.yaml", "a: [\n")
            .add_file("/c/charts/sub/Chart.yaml", "name: [\n");
        let e = load_with(&fs, Path::new("/c")).err().expect("a load error");
        assert_eq!(e.file, "/c/values.schema.json", "{}", e.message);
        assert_eq!(e.message, "EOF while parsing a value at line 1 column 9");
        fs.add_file("/c/Chart.yaml", "name: [\n");
        let e = load_with(&fs, Path::new("/c")).err().expect("a load error");
        assert_eq!(e.file, "/c/Chart.yaml", "{}", e.message);
    }

    /// Valid text is taken as it is, invalid bytes replaced as std's lossy conversion does.
    #[test]
    fn lossy_text_is_stds_lossy_conversion() {
        for b in [
            &b"plain ascii"[..],
            "caf\u{e9} \u{1F600}".as_bytes(),
            b"bad \xff\xfe bytes \xe2\x82",
            b"",
        ] {
            let want = String::from_utf8_lossy(b).into_owned();
            assert_eq!(lossy_text(b), want);
            assert_eq!(lossy_text_owned(b.to_vec()), want);
        }
    }

    /// A small schema beside large templates waits for them: the render needs the trees
    /// when it starts and the schema only when it ends. Once the job has compiled the
    /// schema, every template was parsed ahead.
    #[test]
    fn a_small_schema_is_compiled_after_the_templates_are_parsed() {
        let big: String = (0..2000)
            .map(|i| format!("k{i}: {{{{ .Values.a | default \"x\" | quote }}}}\n"))
            .collect();
        let mut fs = kiln_base::fs::MemFs::new();
        fs.add_file("/c/Chart.yaml", "apiVersion: v2\nname: c\nversion: 1.0.0\n")
            .add_file("/c/values.schema.json", "{\"type\": \"object\"}")
            .add_file("/c/templates/a.yaml", big.as_str())
            .add_file("/c/templates/b.yaml", big.as_str());
        for _ in 0..5 {
            let c = load_with(&fs, Path::new("/c")).expect("loads");
            let schema = c.schema.as_ref().expect("a schema");
            let mut waited = 0;
            while !schema.compiled.is_done() {
                assert!(waited < 30_000, "the schema was never compiled ahead");
                std::thread::sleep(std::time::Duration::from_millis(1));
                waited += 1;
            }
            for (name, slot) in &c.templates {
                assert!(slot.is_parsed_ahead(), "{name} parsed after the schema");
            }
        }
    }

    /// A file the loader reads (a template) over 5 MiB fails the load, as in Helm; a file
    /// only `.Files` reaches is not read at load, so it fails the render that reads it.
    #[test]
    fn files_over_five_mib_fail_the_load_as_in_helm() {
        let mut fs = kiln_base::fs::MemFs::new();
        fs.add_file("/c/Chart.yaml", "apiVersion: v2\nname: c\nversion: 1.0.0\n")
            .add_file("/c/big.bin", "x".repeat(5 * 1024 * 1024 + 1))
            .add_file("/c/fits.bin", "x".repeat(5 * 1024 * 1024));
        let c = load_with(&fs, Path::new("/c")).expect("`.Files` is read when used");
        let big = c.files.iter().find(|(n, _)| n == "big.bin").unwrap();
        let FileData::Deferred(real) = &big.1 else {
            panic!("read at load")
        };
        assert_eq!(
            read_deferred(&fs, "big.bin", real).unwrap_err(),
            "chart file \"big.bin\" is larger than the maximum file size 5242880"
        );
        let fits = c.files.iter().find(|(n, _)| n == "fits.bin").unwrap();
        assert_eq!(contents(&fs, fits).len(), 5 * 1024 * 1024);
        fs.add_file("/c/templates/big.yaml", "x".repeat(5 * 1024 * 1024 + 1));
        let e = load_with(&fs, Path::new("/c"))
            .err()
            .expect("a template over 5 MiB is refused");
        assert_eq!(
            e.message,
            "chart file \"big.yaml\" is larger than the maximum file size 5242880"
        );
    }

    fn tgz(entries: &[(&str, &[u8])]) -> Vec<u8> {
        let mut b = tar::Builder::new(flate2::write::GzEncoder::new(
            Vec::new(),
            flate2::Compression::fast(),
        ));
        for (name, data) in entries {
            let mut h = tar::Header::new_gnu();
            h.set_size(data.len() as u64);
            h.set_mode(0o644);
            h.set_cksum();
            b.append_data(&mut h, name, *data).unwrap();
        }
        b.into_inner().unwrap().finish().unwrap()
    }

    #[test]
    fn archives_keep_every_file_and_have_helms_size_limits() {
        // Helm's archive loader applies no .helmignore and no hidden-template default.
        let data = tgz(&[
            ("c/Chart.yaml", b"apiVersion: v2\nname: c\nversion: 1.0.0\n"),
            ("c/.helmignore", b"notes.txt\n"),
            ("c/notes.txt", b"kept"),
            ("c/templates/.hidden.yaml", b"kind: ConfigMap\n"),
        ]);
        let c = load_archive(&data, "c.tgz").unwrap();
        let files: Vec<&str> = c.files.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(files, [".helmignore", "notes.txt"]);
        assert_eq!(c.templates.len(), 1);
        let big = vec![b'x'; 5 * 1024 * 1024 + 1];
        let data = tgz(&[
            ("c/Chart.yaml", b"apiVersion: v2\nname: c\nversion: 1.0.0\n"),
            ("c/big.bin", &big),
        ]);
        let e = load_archive(&data, "c.tgz").err().expect("refused");
        assert_eq!(
            e.message,
            "decompressed chart file \"c/big.bin\" is larger than the maximum file size 5242880"
        );
    }

    #[test]
    fn globs_like_go() {
        assert!(glob_match("*.tgz", "a.tgz"));
        assert!(!glob_match("*.yaml", "a/b.yaml"));
        assert!(glob_match("files/*.conf", "files/x.conf"));
        assert!(glob_match("[a-c]?", "bz"));
        assert!(glob_match("templates/.?*", "templates/.hidden"));
        assert!(glob_match_double("files/**.yaml", "files/a/b.yaml"));
        assert!(glob_match_double("{a,b}/*", "b/x"));
    }

    /// A `.Files` file's content, read as a render reads it.
    fn contents(fs: &dyn FileSystem, (name, data): &(String, FileData)) -> Vec<u8> {
        match data {
            FileData::Loaded(d) => d.clone(),
            FileData::Deferred(real) => read_deferred(fs, name, real).unwrap(),
        }
    }

    fn chart_tree() -> kiln_base::fs::MemFs {
        let mut fs = kiln_base::fs::MemFs::new();
        fs.add_file(
            "/repo/chart/Chart.yaml",
            "apiVersion: v2\nname: c\nversion: 1.0.0\n",
        )
        .add_file("/repo/chart/templates/cm.yaml", "kind: ConfigMap\n")
        .add_file("/repo/shared/common.conf", "inside the root\n")
        .add_file("/outside/secret.conf", "outside the root\n");
        fs
    }

    /// Links are followed as Helm follows them (a file shared from elsewhere in the
    /// repository is part of the chart); the rooted view of `kiln render` refuses one that
    /// leaves the repository root, with an error naming the file, instead of dropping it.
    #[test]
    fn symlinks_are_followed_inside_the_root_and_refused_outside() {
        use kiln_base::fs::RootedFs;
        let mut fs = chart_tree();
        fs.add_symlink("/repo/chart/files/common.conf", "../../shared/common.conf");
        let rooted = RootedFs::new(&fs, "/repo");
        let c = load_with(&rooted, Path::new("/repo/chart")).unwrap();
        let got: Vec<&str> = c.files.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(got, ["files/common.conf"]);
        assert_eq!(contents(&rooted, &c.files[0]), b"inside the root\n");

        fs.add_symlink("/repo/chart/files/secret.conf", "/outside/secret.conf");
        let rooted = RootedFs::new(&fs, "/repo");
        let e = load_with(&rooted, Path::new("/repo/chart")).err().unwrap();
        assert!(
            e.message.contains("files/secret.conf")
                && e.message.contains("outside the repository root"),
            "{}",
            e.message
        );
        // A linked directory out of the root is refused the same way.
        let mut fs = chart_tree();
        fs.add_symlink("/repo/chart/files", "/outside");
        let rooted = RootedFs::new(&fs, "/repo");
        let e = load_with(&rooted, Path::new("/repo/chart")).err().unwrap();
        assert!(
            e.message.contains("outside the repository root"),
            "{}",
            e.message
        );
    }

    #[test]
    fn symlink_cycles_and_dangling_links_are_errors() {
        let mut fs = chart_tree();
        fs.add_symlink("/repo/chart/files/again", "..");
        let e = load_with(&fs, Path::new("/repo/chart")).err().unwrap();
        assert!(
            e.message.contains("files/again: a symbolic link cycle"),
            "{}",
            e.message
        );
        let mut fs = chart_tree();
        fs.add_symlink("/repo/chart/files/gone.conf", "nowhere.conf");
        let e = load_with(&fs, Path::new("/repo/chart")).err().unwrap();
        assert!(
            e.message
                .contains("error evaluating symlink files/gone.conf"),
            "{}",
            e.message
        );
    }

    /// The same on the real disk, where plain entries skip resolving (`plain_kind`):
    /// nested plain directories, a linked file and a linked directory are read, a link back
    /// up is a cycle, a dangling link an error.
    #[cfg(unix)]
    #[test]
    fn real_disk_charts_follow_links_and_catch_cycles() {
        use std::os::unix::fs::symlink;
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        std::fs::create_dir_all(root.join("shared/dir")).unwrap();
        std::fs::write(root.join("shared/common.conf"), "c\n").unwrap();
        std::fs::write(root.join("shared/dir/x.txt"), "x\n").unwrap();
        let chart = root.join("chart");
        std::fs::create_dir_all(chart.join("files/deep/er")).unwrap();
        std::fs::create_dir_all(chart.join("templates")).unwrap();
        std::fs::write(
            chart.join("Chart.yaml"),
            "apiVersion: v2\nname: c\nversion: 1.0.0\n",
        )
        .unwrap();
        std::fs::write(chart.join("templates/a.yaml"), "a: 1\n").unwrap();
        std::fs::write(chart.join("files/deep/er/z.txt"), "z\n").unwrap();
        symlink("../../shared/common.conf", chart.join("files/common.conf")).unwrap();
        symlink("../../shared/dir", chart.join("files/linked")).unwrap();
        let fs = kiln_base::fs::RealFs;
        let c = load_with(&fs, &chart).unwrap();
        let got: Vec<(&str, Vec<u8>)> = c
            .files
            .iter()
            .map(|f| (f.0.as_str(), contents(&fs, f)))
            .collect();
        assert_eq!(
            got,
            [
                ("files/common.conf", b"c\n".to_vec()),
                ("files/deep/er/z.txt", b"z\n".to_vec()),
                ("files/linked/x.txt", b"x\n".to_vec()),
            ]
        );
        assert_eq!(c.templates.len(), 1);

        symlink("../..", chart.join("files/deep/up")).unwrap();
        let e = load_with(&fs, &chart).err().unwrap();
        assert!(
            e.message.contains("files/deep/up: a symbolic link cycle"),
            "{}",
            e.message
        );
        std::fs::remove_file(chart.join("files/deep/up")).unwrap();
        symlink("nowhere", chart.join("files/gone.conf")).unwrap();
        let e = load_with(&fs, &chart).err().unwrap();
        assert!(
            e.message
                .contains("error evaluating symlink files/gone.conf"),
            "{}",
            e.message
        );
    }

    /// The compiled shapes (exact, `*suffix`) answer as the general matcher does.
    #[test]
    fn compiled_patterns_match_as_filepath_match() {
        let patterns = [
            ".DS_Store",
            "*.tmp",
            "*~",
            "*",
            "",
            "a/b",
            "*/x",
            "*.[ch]",
            "t?st",
            "\\*x",
            "*é",
        ];
        let names = [
            ".DS_Store",
            "x.tmp",
            "a/x.tmp",
            ".tmp",
            "tmp",
            "f~",
            "a/f~",
            "",
            "a/b",
            "a/x",
            "b.c",
            "test",
            "*x",
            "café",
            "a/café",
            "x.tmp/",
        ];
        for p in patterns {
            for n in names {
                assert_eq!(
                    Matcher::new(p).matches(n),
                    glob_match(p, n),
                    "{p:?} against {n:?}"
                );
            }
        }
        assert!(matches!(Matcher::new("*.tmp"), Matcher::Suffix(_)));
        assert!(matches!(Matcher::new(".git"), Matcher::Exact(_)));
        assert!(glob_match("*é", "café") && !glob_match("*.tmp", "a/x.tmp"));
    }

    #[test]
    fn helmignore_rules() {
        let r = Ignore::parse("# c\n.git/\n*.tmp\n/ci\n").unwrap();
        assert!(r.ignored(".git", true));
        assert!(!r.ignored(".git", false));
        assert!(r.ignored("x/y.tmp", false));
        assert!(r.ignored("ci", true));
        assert!(!r.ignored("x/ci", true));
    }
}
