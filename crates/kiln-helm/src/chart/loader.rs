//! Loading a chart directory, after Helm v4.2.3 `pkg/chart/v2/loader/directory.go` and
//! `load.go`: the walk (lexical order, `.helmignore` applied, hidden files under
//! `templates/` skipped), the files filed into a [`Chart`] (`LoadFiles`), and the values
//! files as `loader.LoadValues` and `MergeMaps` read them. The chart's templates are handed
//! to the pool to parse ahead with the name resolver the caller gives ([`load_with`]).

use super::archive::{MAX_FILE_SIZE, load_archive};
use super::ignore::Ignore;
use super::*;

/// A function name's id in the table the render will run the templates with, `None` for a
/// name no function has (the render's `engine::resolve`): the parsed trees hold the ids.
pub type Resolve = fn(&str) -> Option<FuncId>;
use crate::template::value::{Dict, Map, new_map};

pub(super) type R<T> = Result<T, LoadError>;

pub(super) fn err(file: &str, message: impl Into<String>) -> LoadError {
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
///
/// `resolve` names the functions the templates may call ([`Resolve`]): the loader parses them
/// ahead on the pool, before any render has a function table.
pub fn load_with(fs: &dyn FileSystem, path: &Path, resolve: Resolve) -> R<Chart> {
    let shown = path.display().to_string();
    if fs.is_file(path) {
        let data = fs.read(path).map_err(|e| err(&shown, e.to_string()))?;
        return load_archive(&data, &shown, resolve);
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
    // A chart of many files has work for more threads from its reads on (the reads, then
    // the parse ahead); a small one is known only once read (`build`).
    let reads = todo.iter().filter(|f| f.linked || read_at_load(&f.name));
    let archive = |f: &&Found| f.name.ends_with(".tgz") || f.name.ends_with(".tar.gz");
    if reads.clone().count() + READS_PER_ARCHIVE * reads.filter(archive).count()
        >= READS_FOR_A_THREAD
    {
        kiln_base::pool::widen();
    }
    let files = read_all(fs, todo).map_err(|e| err(&shown, e))?;
    walked.map_err(|e| err(&shown, e))?;
    build(Some(fs), files, &shown, resolve)
}

/// Template text, plus schema text counted twice, below which nothing is parsed ahead: a
/// thread started for less cost a render more than it saved. Measured by wall time on two
/// cores (ADR 0055): nats (25 KB), alertmanager (27 KB), metrics-server and podinfo render
/// as fast or faster with no second thread, and ingress-nginx (88 KB) as fast, each with
/// 10-16 % less CPU; bitnami-postgresql, traefik, prometheus and cert-manager render 9-20 %
/// faster with one.
const AHEAD_FOR_A_THREAD: usize = 128 * 1024;

/// Files to read at load from which a chart directory starts the pool's threads before it
/// reads them (a subchart archive counts as [`READS_PER_ARCHIVE`]): such a chart has
/// [`AHEAD_FOR_A_THREAD`] of text or near it, and its reads and the parse ahead then run
/// on them from the start (ADR 0055: bitnami-redis, grafana and external-secrets were 3-7 %
/// slower when the threads started only after the reads). nats reads 22 files.
const READS_FOR_A_THREAD: usize = 32;

/// What a subchart archive counts for in [`READS_FOR_A_THREAD`]: it is read, unpacked and
/// its files parsed.
const READS_PER_ARCHIVE: usize = 16;

/// Builds the chart and its unpacked subcharts from their files, after handing one pool
/// job (when there is [`AHEAD_FOR_A_THREAD`] of it) every template text to parse
/// ([`parse::parse_slots`]) and every values.schema.json to compile, in the order below,
/// while this thread goes on to Chart.yaml, values.yaml and then the render's values: a
/// render takes the trees from the other end ([`Slot::take`]). A file taken for a template
/// here that the loader then files otherwise is still its bytes; a template missed here is
/// parsed by the render.
pub(super) fn build(
    fs: Option<&dyn FileSystem>,
    mut files: Vec<(String, FileData)>,
    shown: &str,
    resolve: Resolve,
) -> R<Chart> {
    let mut ahead = AheadWork {
        templates: BTreeMap::new(),
        schemas: BTreeMap::new(),
        resolve,
    };
    let (mut template_bytes, mut schema_bytes) = (0, 0);
    for (name, data) in &mut files {
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
            } else {
                continue;
            }
            // The text now lives in its slot or schema, which `from_files` takes by name:
            // the file's buffer is freed here, not after the whole chart, so the next
            // copy reuses its memory instead of faulting in fresh pages (datadog: 470 of
            // 3,400 page faults, a tenth of its process; issue 37, ADR 0049). A subchart's
            // `.prov` is the one such path `from_files` files otherwise (as `.Files`): it
            // keeps its bytes.
            if !name.ends_with(".prov") {
                *d = Vec::new();
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
    // Less than that, and the render parses each template as it reaches it, on its own
    // thread; the check compiles a schema when it needs it (kiln_base::pool).
    if template_bytes + 2 * schema_bytes >= AHEAD_FOR_A_THREAD {
        kiln_base::pool::widen();
        rayon::spawn(move || {
            let compile = || schemas.iter().for_each(|s| s.parse_ahead());
            if schemas_first {
                compile();
            }
            parse::parse_slots(&slots, &resolve);
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
pub(super) struct AheadWork {
    templates: BTreeMap<String, Arc<Slot>>,
    schemas: BTreeMap<String, Arc<Schema>>,
    /// The caller's name resolver, for the packaged subcharts met on the way.
    resolve: Resolve,
}

/// Whether a walk name is the values.schema.json of the chart or of an unpacked subchart
/// (`charts/<name>/`, at any depth).
pub(super) fn is_schema_path(name: &str) -> bool {
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
pub(super) fn is_template_path(name: &str) -> bool {
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
pub(super) fn read_at_load(name: &str) -> bool {
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
pub(super) fn loader_reads(name: &str) -> bool {
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
pub(super) fn read_all(
    fs: &dyn FileSystem,
    todo: Vec<Found>,
) -> Result<Vec<(String, FileData)>, String> {
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
pub(super) fn load_read(
    path: &str,
    data: Result<Option<Vec<u8>>, std::io::Error>,
) -> Result<Vec<u8>, String> {
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
pub(super) struct Found {
    name: String,
    path: std::path::PathBuf,
    linked: bool,
}

/// Walks `base/rel` in lexical order; `seen` holds the real directories from the chart root
/// down to this one, so a link back up is reported instead of walked forever.
pub(super) fn walk(
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

/// Directory-walk order: path segments compared one by one.
pub(super) fn walk_order(a: &str, b: &str) -> std::cmp::Ordering {
    a.split('/').cmp(b.split('/'))
}

/// The file as text, borrowed: values.yaml and Chart.yaml are parsed in place, not copied.
pub(super) fn text<'a>(name: &str, data: &'a [u8], shown: &str) -> R<&'a str> {
    std::str::from_utf8(data).map_err(|_| err(&format!("{shown}/{name}"), "not UTF-8 text"))
}

pub(super) fn read_yaml(name: &str, data: &[u8], shown: &str) -> R<Value> {
    let t = text(name, data, shown)?;
    yaml::parse_one(t).map_err(|e| LoadError {
        file: format!("{shown}/{name}"),
        line: Some(e.line),
        message: e.to_string(),
    })
}

pub(super) fn read_yaml_strings(name: &str, data: &[u8], shown: &str) -> R<Value> {
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
pub(super) fn strip_utf8_bom(mut data: Vec<u8>) -> Vec<u8> {
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
pub(super) fn from_files(
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
pub(super) fn chart_from_files(
    fs: Option<&dyn FileSystem>,
    files: Vec<(String, FileData)>,
    shown: &str,
    prefix: &str,
    ahead: &mut AheadWork,
    schema_at: &mut Option<(Arc<Schema>, String)>,
) -> R<Chart> {
    let mut meta = None;
    let mut values = Value::map(Dict::new());
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
                values = Value::Map(load_values(t).map_err(|e| LoadError {
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
            .map(crate::template::fmt::s)
            .unwrap_or_default()
    };
    let name = get("name");
    let version = get("version");
    if let Err(e) = validate_metadata(&name, &version, &get("type")) {
        return Err(err(&format!("{shown}/Chart.yaml"), &e));
    }
    // A chart without apiVersion is a v1 chart (Helm 2 accepted those).
    let api_version = get("apiVersion");
    if api_version.is_empty() || api_version == "v1" {
        other.extend(v1_files);
    }
    let kind_library = get("type") == "library";
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
            let g = |k: &str| dm.get(k).map(crate::template::fmt::s).unwrap_or_default();
            deps.push(Dependency {
                name: g("name"),
                version: g("version"),
                alias: g("alias"),
                condition: g("condition"),
                tags: match dm.get("tags") {
                    Some(Value::List(t)) => t.iter().map(crate::template::fmt::s).collect(),
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
                ahead.resolve,
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
/// Helm's `mergeMaps` for `-f` files: maps merge deeply, anything else replaces.
pub fn merge_user(dst: &Map, src: &Map) {
    let entries: Vec<(std::rc::Rc<str>, Value)> = src
        .borrow()
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    for (k, v) in entries {
        let cur = dst.borrow().get(&k).cloned();
        match (&v, cur) {
            (Value::Map(sm), Some(Value::Map(dm))) => merge_user(&dm, sm),
            _ => {
                dst.borrow_mut().insert(k, v);
            }
        }
    }
}

/// Why a values file cannot be read: its 1-based line and the message.
#[derive(Debug, Clone)]
pub struct ValuesError {
    pub line: usize,
    pub message: String,
}

impl std::fmt::Display for ValuesError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// Helm's `loader.LoadValues` (pkg/chart/v2/loader/load.go, v4.2.3), for a chart's
/// values.yaml and for `-f` files alike (pkg/cli/values/options.go calls it too): the text is
/// cut into documents as apimachinery's `YAMLReader` cuts it (a line starting with `---`,
/// followed by nothing but spaces or a comment), each document is read as a map, and the
/// maps are merged in order with `MergeMaps` (maps deeply, anything else replaced). A document
/// of only comments adds nothing; one that is not a map is an error, as is a `---` line with
/// text after it. Lines in errors count from the top of the file, not of the document.
pub fn load_values(text: &str) -> Result<Map, ValuesError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let out = new_map();
    let mut doc_start = 0;
    let mut doc_line = 1;
    let mut line_no = 1;
    let mut pos = 0;
    let read = |doc: &str, first_line: usize| -> Result<(), ValuesError> {
        if doc.is_empty() {
            return Ok(());
        }
        let v = super::yaml::parse_one(doc).map_err(|e| {
            let line = e.line + first_line - 1;
            ValuesError {
                line,
                message: format!("yaml: line {line}: {}", e.message),
            }
        })?;
        match v {
            // The first map is taken as it is: merging it into the empty table would only
            // copy its entries (it is read here, so nothing else holds it).
            Value::Map(m) if out.borrow().is_empty() => {
                std::mem::swap(&mut *out.borrow_mut(), &mut *m.borrow_mut());
            }
            Value::Map(m) => merge_user(&out, &m),
            Value::Nil => {}
            other => {
                let kind = match other {
                    Value::List(_) => "array",
                    Value::Bool(_) => "bool",
                    Value::Int(_) | Value::Float(_) => "number",
                    _ => "string",
                };
                return Err(ValuesError {
                    line: first_line,
                    message: format!(
                        "cannot unmarshal yaml document: error unmarshaling JSON: while decoding JSON: json: cannot unmarshal {kind} into Go value of type map[string]interface {{}}"
                    ),
                });
            }
        }
        Ok(())
    };
    // Most files have no `---` line: then the whole text is one document, and the lines
    // need not be walked.
    if !text.starts_with("---") && !text.contains("\n---") {
        pos = text.len();
    }
    while pos < text.len() {
        let end = (super::yaml::find_newline(text.as_bytes(), pos) + 1).min(text.len());
        let line = &text[pos..end];
        if let Some(rest) = line.strip_prefix("---") {
            let trimmed = rest.trim();
            if !trimmed.is_empty() && !trimmed.starts_with('#') {
                return Err(ValuesError {
                    line: line_no,
                    message: format!(
                        "error reading yaml document: invalid Yaml document separator: {trimmed}"
                    ),
                });
            }
            // A separator ends a document that has text; before any, it is the document's
            // own first line (the reader keeps it).
            if pos > doc_start {
                read(&text[doc_start..pos], doc_line)?;
                doc_start = end;
                doc_line = line_no + 1;
            }
        }
        pos = end;
        line_no += 1;
    }
    read(&text[doc_start..], doc_line)?;
    Ok(out)
}

/// Helm's `Metadata.Validate` (pkg/chart/v2/metadata.go, v4.2.3), in its order, for the fields
/// kiln reads: the name (required, not `.`/`..`, no path), the version (required, and
/// `semver.NewVersion` must read it) and the type (`application`, `library` or none). The
/// loader has already given an empty `apiVersion` the value `v1`.
fn validate_metadata(name: &str, version: &str, kind: &str) -> Result<(), String> {
    use crate::template::fmt::go_quote;
    if name.is_empty() {
        return Err("validation: chart.metadata.name is required".into());
    }
    if name == "." || name == ".." {
        return Err(format!(
            "validation: chart.metadata.name {} is not allowed",
            go_quote(name)
        ));
    }
    // `filepath.Base(name) != name`: a separator or a trailing slash.
    if name.contains('/') {
        return Err(format!(
            "validation: chart.metadata.name {} is invalid",
            go_quote(name)
        ));
    }
    if version.is_empty() {
        return Err("validation: chart.metadata.version is required".into());
    }
    if crate::sprig::semver::Version::parse(version).is_err() {
        return Err(format!(
            "validation: chart.metadata.version {} is invalid",
            go_quote(version)
        ));
    }
    if !matches!(kind, "" | "application" | "library") {
        return Err("validation: chart.metadata.type must be application or library".into());
    }
    Ok(())
}
