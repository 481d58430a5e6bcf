//! Stage 1, load: a platform directory → [`LoadedPlatform`].
//!
//! Reads `platform.yaml`, every component directory it references (`component.yaml`) and every
//! manifest file their `files:` generators name, through the [`FileSystem`] trait. Each text
//! is kept in [`Sources`] so any later stage can underline the line a value came from. Each
//! kiln document is checked against its JSON Schema (generated from `crate::spec`) before it
//! is turned into the raw spec types, so every schema violation of every file is reported in
//! one run, each at its own line.
//!
//! Invariant: nothing outside the platform repository root is ever read. Every path (a
//! component directory, a manifest file or directory, a kustomization directory, a generator
//! file) is resolved with symlinks followed and refused when it lands outside the root.

use crate::diag::{Errors, Loc, SourceId, Sources, Violation, schema_violations};
use crate::resource::{Origin, Resource};
use crate::spec::{ComponentFile, Generator, PlatformFile};
use miette::{Diagnostic, NamedSource, SourceSpan};
use serde::Deserialize;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::path::{Component as PathPart, Path, PathBuf};
use std::sync::{Arc, OnceLock};
use thiserror::Error;

pub use crate::fs::{FileSystem, RealFs};

/// The file that makes a directory a platform.
pub const PLATFORM_FILE: &str = "platform.yaml";

/// How to load: the variants of the load stage.
#[derive(Clone, Copy, Default)]
pub struct LoadOptions<'a> {
    /// The platform repository root: no file outside it is read. `None`: the nearest ancestor
    /// of the platform directory holding `.git`; failing that, the parent of a `platforms/`
    /// directory holding the platform; failing that, the platform directory itself.
    pub root: Option<&'a Path>,
    /// Keep only the component instances whose directory (canonical) is in the set: the
    /// others are dropped from the platform, as if `platform.yaml` did not list them, and
    /// their components are not read. For the incremental render (`crate::pipeline`), which
    /// evaluates again only the components whose plans it renders again; `platform.yaml` is
    /// still read and checked in full. `None`: everything.
    pub only: Option<&'a BTreeSet<PathBuf>>,
    /// The file system each component directory is loaded through: every file-system call
    /// of a component's load (its `component.yaml`, its `files:` manifests, its generator
    /// files, its kustomize tree's checks) goes through its own, every other call through
    /// the one given to [`load`]. The render journal records them apart
    /// ([`crate::cache::Journal::component_reads`]), so that a changed file names the
    /// components whose load it reaches. Per component, not "the current component", since
    /// the components load on several threads at once. `None`: the one given to [`load`].
    pub scopes: Option<&'a dyn Scopes>,
    /// The fetched tree of each instance with a `source` (by project and instance index),
    /// from the source stage (`crate::source`). A component read from a tree is confined
    /// to it: its paths are checked against the tree, not the repository.
    pub sources: Option<&'a BTreeMap<(usize, usize), SourceTree>>,
    /// The documents the source stage parsed already ([`crate::source::Resolved::parsed`]):
    /// load takes each from there instead of parsing it again. `None`: load parses.
    pub parsed: Option<&'a Parsed>,
}

/// A file system per component directory (see [`LoadOptions::scopes`]).
pub trait Scopes: Sync {
    /// The file system the load of the component in `dir` (canonical) reads through.
    fn scope<'s>(&'s self, dir: &Path) -> Box<dyn FileSystem + 's>;
}

impl std::fmt::Debug for LoadOptions<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoadOptions")
            .field("root", &self.root)
            .field("only", &self.only)
            .field("scopes", &self.scopes.is_some())
            .finish()
    }
}

/// A component directory found by the walk of `platform.yaml`, to load
/// ([`Loader::load_pending`]).
struct Pending<'t> {
    /// The directory (canonical).
    dir: PathBuf,
    /// The fetched tree it is confined to, if it was fetched.
    tree: Option<&'t SourceTree>,
    /// How many of the walk's errors were found before it: a serial load reports those
    /// before the component's own, and the rest after.
    errors_before: usize,
}

/// The kiln documents (`platform.yaml`, `component.yaml`) of one render, parsed once and
/// shared by the stages that read them (issue 38, item 8): the source stage scans every
/// `component.yaml` for charts, kustomize bases and its name before load reads it, and each
/// of the four readers parsed it again (at 10,000 components, a fifth of load and source).
///
/// Keyed by the text, not the path: each stage still reads the file through its own file
/// system (the journal records load's reads, [`LoadOptions::scopes`]), and gets the parsed
/// document only for the same bytes, so a file that changed between two reads is parsed
/// anew. A document is parsed at most once however many threads ask for it at once. Load
/// [`takes`](Parsed::take) each document out as it loads it, so nothing stays held past
/// load; a text that does not parse is not kept (each reader parses it again for its own
/// error, naming the file as it knows it).
#[derive(Debug, Default)]
///
/// Each reader before load gets the document shared, not a copy: the copies of three readers
/// were a sixth of the source stage and load at 10,000 components.
pub struct Parsed {
    docs: std::sync::Mutex<std::collections::HashMap<String, Arc<Slot>>>,
    parses: std::sync::atomic::AtomicUsize,
}

impl Parsed {
    /// The document in `text` (a file shown as `name`), parsed on first sight.
    pub fn parse(&self, name: &str, text: &str) -> Result<Arc<Value>, crate::yaml::YamlError> {
        match self
            .slot(text)
            .get_or_init(|| self.parse_new(name, text).ok())
        {
            Some(v) => Ok(v.clone()),
            None => crate::yaml::parse_one(name, text).map(Arc::new),
        }
    }

    /// [`Parsed::parse`], and forgets the document: for its last reader (load), which
    /// takes it without a copy when no other reader holds it.
    pub fn take(&self, name: &str, text: &str) -> Result<Value, crate::yaml::YamlError> {
        let slot = self.slot(text);
        let got = slot
            .get_or_init(|| self.parse_new(name, text).ok())
            .is_some();
        if let Ok(mut docs) = self.docs.lock() {
            docs.remove(text);
        }
        // The earlier readers are done with it by now: moved out, not copied.
        match Arc::try_unwrap(slot).map(|s| s.into_inner()) {
            Ok(Some(Some(v))) => Ok(Arc::unwrap_or_clone(v)),
            Err(shared) if got => Ok(shared
                .get()
                .cloned()
                .flatten()
                .map(Arc::unwrap_or_clone)
                .unwrap_or_default()),
            _ => crate::yaml::parse_one(name, text),
        }
    }

    /// Whether no document is held (load took every one).
    pub fn is_empty(&self) -> bool {
        self.docs.lock().map_or(true, |d| d.is_empty())
    }

    /// How many texts were parsed (not taken from the table) so far.
    pub fn parses(&self) -> usize {
        self.parses.load(std::sync::atomic::Ordering::Relaxed)
    }

    fn slot(&self, text: &str) -> Arc<Slot> {
        let mut docs = self
            .docs
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match docs.get(text) {
            Some(slot) => slot.clone(),
            None => docs.entry(text.to_string()).or_default().clone(),
        }
    }

    fn parse_new(&self, name: &str, text: &str) -> Result<Arc<Value>, crate::yaml::YamlError> {
        self.parses
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        crate::yaml::parse_one(name, text).map(Arc::new)
    }
}

/// One text's document in [`Parsed`]: parsed once, `None` when it does not parse.
type Slot = OnceLock<Option<Arc<Value>>>;

/// A component instance's fetched source tree (`components[].source`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceTree {
    /// The tree's root in the source cache (canonical).
    pub root: PathBuf,
    /// The component directory inside it (`source.path`).
    pub dir: PathBuf,
    /// How the rendered files' headers and messages about the component name it:
    /// `<repository>@<commit>/<path>`.
    pub label: String,
    /// How errors name the files in the tree: this, then the path from the tree's root
    /// (`https://host/org/app.git@v1.2.0:` then `deploy/component.yaml`), as `git show
    /// <ref>:<path>` takes them; the repository's URL without credentials, the ref as
    /// given (else the commit). Joined with [`shown_join`], never as a path: `Path::join`
    /// made the URL's `//` one slash (`git:/host/…`).
    pub shown_root: String,
    /// When the instance's `ref` names different commits in different environments
    /// (`ref: ${env.tier}`): the tree of each environment it is deployed to, by name; this
    /// tree is then the first environment's. Empty: one tree for every environment.
    pub environments: BTreeMap<String, SourceTree>,
}

impl SourceTree {
    /// The component directory as errors name it (`<url>@<ref>:deploy`).
    pub fn shown_dir(&self) -> String {
        let rel = self.dir.strip_prefix(&self.root).unwrap_or(Path::new(""));
        shown_join(&self.shown_root, &slashed(rel))
    }
}

/// `rel` (`/`-separated) inside the directory errors name `dir`: `dir/rel`, or `<url>@<ref>:rel`
/// inside a fetched tree's root (`<url>@<ref>:`, or `<url>@<ref>:.` as its directory).
pub fn shown_join(dir: &str, rel: &str) -> String {
    let dir = match dir.strip_suffix(".") {
        Some(root) if root.ends_with(':') => root,
        _ => dir,
    };
    match (rel.is_empty(), dir.ends_with(':')) {
        (true, true) => format!("{dir}."),
        (true, false) => dir.to_string(),
        (false, true) => format!("{dir}{rel}"),
        (false, false) => format!("{}/{rel}", dir.trim_end_matches('/')),
    }
}

/// The inverse of [`shown_join`]: `file`'s path inside `dir`, when it is inside.
pub fn shown_inside<'f>(dir: &str, file: &'f str) -> Option<&'f str> {
    let dir = match dir.strip_suffix(".") {
        Some(root) if root.ends_with(':') => root,
        _ => dir,
    };
    let rest = file.strip_prefix(dir)?;
    if dir.ends_with(':') {
        Some(rest)
    } else {
        rest.strip_prefix('/')
    }
}

/// A relative path, `/`-separated (as every name of a file kiln shows).
fn slashed(p: &Path) -> String {
    let parts: Vec<String> = p
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    parts.join("/")
}

/// Everything read for one platform, unvalidated beyond the JSON Schemas.
#[derive(Debug, Clone)]
pub struct LoadedPlatform {
    /// The repository root (canonical).
    pub root: PathBuf,
    /// The platform directory (canonical).
    pub dir: PathBuf,
    /// Every text read, for diagnostics.
    pub sources: Arc<Sources>,
    /// `platform.yaml`.
    pub file: SourceId,
    /// `platform.yaml` as parsed JSON (kept for references and spans).
    pub raw: Value,
    /// `platform.yaml` as spec types.
    pub spec: PlatformFile,
    /// Each distinct component directory, in the order first referenced.
    pub components: Vec<LoadedComponent>,
    /// `instances[p][i]`: the index in `components` of project `p`'s instance `i`.
    pub instances: Vec<Vec<usize>>,
    /// For an instance whose source follows a different commit per environment
    /// ([`SourceTree::environments`]): by (project, instance), the index in `components` of
    /// each environment's component.
    pub environment_components: BTreeMap<(usize, usize), BTreeMap<String, usize>>,
}

/// One component directory.
#[derive(Debug, Clone)]
pub struct LoadedComponent {
    /// The directory (canonical).
    pub dir: PathBuf,
    /// The directory relative to the root, `/`-separated; a fetched component's label
    /// ([`SourceTree::label`]).
    pub display_dir: String,
    /// The directory as errors name it, the files in it after it ([`shown_join`]): as
    /// `display_dir` for a local component, `<url>@<ref>:<path>` for a fetched one.
    pub shown_dir: String,
    /// `component.yaml`.
    pub file: SourceId,
    /// `component.yaml` as parsed JSON; `evaluate` resolves references in its `spec` values.
    pub raw: Value,
    /// `component.yaml` as spec types.
    pub spec: ComponentFile,
    /// Resources read by each `files:` generator, by generator index.
    pub files: BTreeMap<usize, Vec<Resource>>,
    /// Texts of the files `configMapGenerator`/`secretGenerator` entries name (`files`,
    /// `envs`), by the path as written (relative to the component directory).
    pub assets: BTreeMap<String, String>,
}

/// Why loading failed. Codes `kiln::load::<condition>`.
#[derive(Debug, Error, Diagnostic)]
pub enum LoadError {
    /// A file or directory could not be read.
    #[error("cannot {op} `{path}`: {source}")]
    #[diagnostic(
        code(kiln::load::io),
        help("check that the path exists and is readable")
    )]
    Io {
        op: &'static str,
        path: String,
        #[source]
        source: io::Error,
    },

    /// A file is not UTF-8 text (UTF-16, Latin-1, binary).
    #[error("cannot read `{path}`: {reason}")]
    #[diagnostic(
        code(kiln::load::not_utf8),
        help(
            "kiln reads YAML as UTF-8; convert the file (`iconv -f UTF-16 -t UTF-8`, or your editor's \"save with encoding\")"
        )
    )]
    NotUtf8 { path: String, reason: String },

    /// A YAML syntax error or a duplicate key.
    #[error(transparent)]
    #[diagnostic(transparent)]
    Yaml(Box<crate::yaml::YamlError>),

    /// A kiln document does not match its JSON Schema (an unknown field, a missing field, a
    /// value of the wrong type).
    #[error("{at}: {summary}")]
    #[diagnostic(code(kiln::load::schema_violation))]
    SchemaViolation {
        at: String,
        /// `did you mean …?` (an unknown field close to a known one), then where the schema is.
        #[help]
        help: String,
        /// The field, as a path (`spec.images[0].tag`).
        field: String,
        /// The validator's message, for the label.
        message: String,
        /// The message with the field: `` `spec.images[0].tag`: 1 is not of type "string" ``,
        /// or `` unknown field `colour` in `spec.environments[0]` ``.
        summary: String,
        schema: &'static str,
        #[source_code]
        src: NamedSource<String>,
        #[label("{message}")]
        span: Option<SourceSpan>,
    },

    /// A path in the spec resolves (after following symlinks) outside the repository root.
    #[error("{at}: path `{path}` resolves outside the platform repository root")]
    #[diagnostic(
        code(kiln::load::path_outside_root),
        help(
            "`{path}` resolves to `{resolved}`, which is not under `{root}`; kiln only reads files inside the repository (symlinks are followed)"
        )
    )]
    PathOutsideRoot {
        at: String,
        path: String,
        resolved: String,
        root: String,
        #[source_code]
        src: NamedSource<String>,
        #[label("leaves the repository")]
        span: Option<SourceSpan>,
    },

    /// A path in the spec does not exist.
    #[error("{at}: {what} `{path}` not found")]
    #[diagnostic(code(kiln::load::path_not_found))]
    PathNotFound {
        at: String,
        what: &'static str,
        path: String,
        #[help]
        help: String,
        #[source_code]
        src: NamedSource<String>,
        #[label("not found")]
        span: Option<SourceSpan>,
    },

    /// A path in the spec goes through a symbolic link whose target does not exist.
    #[error(
        "{at}: {what} `{path}`: `{link}` is a symbolic link to `{target}`, which does not exist"
    )]
    #[diagnostic(
        code(kiln::load::dangling_link),
        help("point the link at an existing file, or remove it and the entry naming it")
    )]
    DanglingLink {
        at: String,
        what: &'static str,
        path: String,
        link: String,
        target: String,
        #[source_code]
        src: NamedSource<String>,
        #[label("through a dangling link")]
        span: Option<SourceSpan>,
    },

    /// A directory named in `files:` holds no `*.yaml`/`*.yml` file: a listed entry that
    /// contributes nothing is a mistake (a misnamed file, files renamed to `.yml.tmpl`).
    #[error("{at}: directory `{path}` holds no *.yaml or *.yml file")]
    #[diagnostic(
        code(kiln::load::empty_directory),
        help(
            "`files:` reads the YAML files directly inside a directory (not recursively); list the files, or remove the entry"
        )
    )]
    EmptyDirectory {
        at: String,
        path: String,
        #[source_code]
        src: NamedSource<String>,
        #[label("no manifests here")]
        span: Option<SourceSpan>,
    },

    /// A component instance's `path` names no component: the directory does not exist or
    /// holds no `component.yaml`.
    #[error("{at}: unknown component `{path}`: {reason}")]
    #[diagnostic(code(kiln::load::unknown_component))]
    UnknownComponent {
        path: String,
        reason: String,
        at: String,
        #[help]
        help: String,
        #[source_code]
        src: NamedSource<String>,
        #[label("no component here")]
        span: Option<SourceSpan>,
    },

    /// A manifest document is not a Kubernetes object.
    #[error("{at}: document {doc} is not a Kubernetes object: {reason}")]
    #[diagnostic(
        code(kiln::load::invalid_resource),
        help("every document needs `apiVersion`, `kind` and `metadata.name`")
    )]
    InvalidResource {
        at: String,
        doc: usize,
        reason: String,
        #[source_code]
        src: NamedSource<String>,
        #[label("{reason}")]
        span: Option<SourceSpan>,
    },
}

impl From<crate::yaml::YamlError> for LoadError {
    fn from(e: crate::yaml::YamlError) -> Self {
        LoadError::Yaml(Box::new(e))
    }
}

impl LoadError {
    /// An I/O error, or [`LoadError::NotUtf8`] when the file was read but is not UTF-8.
    fn io(op: &'static str, path: String, source: io::Error) -> LoadError {
        match source
            .get_ref()
            .and_then(|e| e.downcast_ref::<crate::fs::NotUtf8>())
        {
            Some(why) => LoadError::NotUtf8 {
                path,
                reason: why.to_string(),
            },
            None => LoadError::Io { op, path, source },
        }
    }
}

/// A kiln file's generated schema and its validator (the schema names the known fields of an
/// unknown field's did-you-mean).
type Checked = (Value, jsonschema::Validator);

fn checked(schema: Value) -> Checked {
    let validator = jsonschema::validator_for(&schema).expect("generated schema is valid");
    (schema, validator)
}

fn platform_validator() -> &'static Checked {
    static V: OnceLock<Checked> = OnceLock::new();
    V.get_or_init(|| checked(crate::spec::platform_schema()))
}

fn component_validator() -> &'static Checked {
    static V: OnceLock<Checked> = OnceLock::new();
    V.get_or_init(|| checked(crate::spec::component_schema()))
}

struct Loader<'a> {
    fs: &'a dyn FileSystem,
    root: PathBuf,
    sources: Sources,
    errors: Vec<LoadError>,
    /// See [`LoadOptions::parsed`].
    parsed: Option<&'a Parsed>,
    /// Inside a fetched tree (`root` is its root): how errors name the root
    /// ([`SourceTree::shown_root`]); empty otherwise.
    shown_root: String,
}

/// Reads the platform in `platform_dir` (which holds `platform.yaml`) and every component it
/// references.
///
/// Errors: every [`LoadError`] found, together: I/O, YAML syntax and duplicate keys, schema
/// violations of each kiln document, paths that escape the root or do not exist, manifest
/// documents that are not objects. A component with errors is skipped, so the errors of the
/// others are still reported.
pub fn load(
    fs: &dyn FileSystem,
    platform_dir: &Path,
    opts: &LoadOptions,
) -> Result<LoadedPlatform, Errors<LoadError>> {
    let only = opts.only;
    let io_err = |op, path: &Path, source| {
        Errors::new(vec![LoadError::Io {
            op,
            path: path.display().to_string(),
            source,
        }])
    };
    let dir = fs
        .canonicalize(platform_dir)
        .map_err(|e| io_err("open platform directory", platform_dir, e))?;
    let dir = platform_dir_of(fs, dir);
    let root = match &opts.root {
        Some(r) => fs
            .canonicalize(r)
            .map_err(|e| io_err("open repository root", r, e))?,
        None => default_root(fs, &dir),
    };
    let mut ld = Loader {
        fs,
        root,
        sources: Sources::new(),
        errors: Vec::new(),
        parsed: opts.parsed,
        shown_root: String::new(),
    };

    let pf_path = dir.join(PLATFORM_FILE);
    let Some((file, raw, valid)) =
        ld.read_doc(&pf_path, platform_validator(), "platform.schema.json")
    else {
        return Err(Errors::new(ld.errors));
    };

    // The lock pins the fetched trees: read through the same file system, so that the render
    // journal sees a change of it (`kiln update`) as a change of the platform.
    if opts.sources.is_some_and(|s| !s.is_empty()) {
        let _ = ld.fs.read(&dir.join("kiln.lock"));
    }
    // Components are found in the raw document, so that even when `platform.yaml` has schema
    // violations the components are still read and their own errors reported in the same run.
    // The walk only finds them (each distinct directory once, in the order first referenced);
    // they are loaded after it, at once (`load_pending`).
    let mut pending: Vec<Pending> = Vec::new();
    let mut by_dir: BTreeMap<PathBuf, usize> = BTreeMap::new();
    let mut instances = Vec::new();
    let mut environment_slots: Vec<((usize, usize), String, usize)> = Vec::new();
    let mut dropped: Vec<(usize, usize)> = Vec::new();
    let projects = raw.pointer("/spec/projects").and_then(Value::as_array);
    for (p, project) in projects.into_iter().flatten().enumerate() {
        let mut ids = Vec::new();
        let list = project.get("components").and_then(Value::as_array);
        for (i, inst) in list.into_iter().flatten().enumerate() {
            // A component from another repository: its fetched tree, which becomes the
            // root every path of the component is checked against.
            let tree = opts.sources.and_then(|s| s.get(&(p, i)));
            let cdir = match (tree, inst.get("path").and_then(Value::as_str)) {
                (Some(tree), _) => {
                    let loc = Loc::new(file, source_pointer(inst, p, i));
                    match ld.resolve_in_tree(tree, &loc) {
                        Some(d) => d,
                        None => continue,
                    }
                }
                (None, Some(rel)) if !rel.is_empty() => {
                    let loc = Loc::new(file, format!("/spec/projects/{p}/components/{i}/path"));
                    match ld.resolve_component(&dir, rel, &loc) {
                        Some(d) => d,
                        None => continue,
                    }
                }
                _ => {
                    // Neither a path nor a fetched source (a caller that ran no source
                    // stage): the instance cannot be read.
                    let remote = inst.get("source").is_some();
                    // The source stage fetches nothing for a platform.yaml that breaks the
                    // schema (`source::resolve`); that violation is reported already, and
                    // this error would only repeat it once per remote instance.
                    if remote && !valid {
                        continue;
                    }
                    let loc = Loc::new(file, format!("/spec/projects/{p}/components/{i}"));
                    let sn = ld.sources.snippet(&loc);
                    ld.errors.push(LoadError::UnknownComponent {
                        path: String::new(),
                        reason: if remote {
                            "its `source` was not fetched (this command runs no source stage)".into()
                        } else {
                            "it names neither `path` nor `source`".into()
                        },
                        help: "give the component's folder in `path`, or its repository in `source: {git, ref, path}`; `kiln render`, `diff`, `publish`, `verify` and `promote` fetch sources".into(),
                        at: sn.at,
                        src: sn.src,
                        span: sn.span,
                    });
                    continue;
                }
            };
            if only.is_some_and(|only| !only.contains(&cdir)) {
                dropped.push((p, i));
                continue;
            }
            ids.push(ld.component_once(&cdir, tree, &mut pending, &mut by_dir));
            // Each environment's own commit of the instance's repository.
            for (env, t) in tree.map(|t| &t.environments).into_iter().flatten() {
                let loc = Loc::new(file, source_pointer(inst, p, i));
                let Some(edir) = ld.resolve_in_tree(t, &loc) else {
                    continue;
                };
                let e = ld.component_once(&edir, Some(t), &mut pending, &mut by_dir);
                environment_slots.push(((p, i), env.clone(), e));
            }
        }
        instances.push(ids);
    }
    let (components, index) = ld.load_pending(pending, opts.scopes);
    // Each instance's component, as a serial load numbers them: only those that loaded.
    let instances: Vec<Vec<usize>> = instances
        .into_iter()
        .map(|slots: Vec<usize>| slots.into_iter().filter_map(|s| index[s]).collect())
        .collect();
    let mut environment_components = BTreeMap::new();
    for (at, env, slot) in environment_slots {
        if let Some(e) = index[slot] {
            environment_components
                .entry(at)
                .or_insert_with(BTreeMap::new)
                .insert(env, e);
        }
    }
    // Instances left out by `only` leave the document too, so that `instances` still lines
    // up with `spec.projects[p].components` (highest index first: removal shifts the rest).
    // A project left without instances goes too (its parameters would name no component's
    // parameter, which validate refuses).
    let mut raw = raw;
    let mut instances = instances;
    let emptied: BTreeSet<usize> = dropped
        .iter()
        .map(|(p, _)| *p)
        .filter(|p| instances.get(*p).is_some_and(Vec::is_empty))
        .collect();
    for (p, i) in dropped.into_iter().rev() {
        if let Some(list) = raw
            .pointer_mut(&format!("/spec/projects/{p}/components"))
            .and_then(Value::as_array_mut)
        {
            list.remove(i);
        }
    }
    for p in emptied.into_iter().rev() {
        if let Some(list) = raw
            .pointer_mut("/spec/projects")
            .and_then(Value::as_array_mut)
        {
            list.remove(p);
            instances.remove(p);
        }
    }
    let spec = if valid {
        // From the value in place: a copy of a platform of 10,000 components is 1.4 MB.
        match PlatformFile::deserialize(&raw) {
            Ok(s) => Some(s),
            Err(e) => {
                ld.schema_error(file, "", e.to_string(), "platform.schema.json");
                None
            }
        }
    } else {
        None
    };
    let Some(spec) = spec.filter(|_| ld.errors.is_empty()) else {
        return Err(Errors::new(ld.errors));
    };

    let Loader {
        root,
        sources,
        errors,
        ..
    } = ld;
    Errors::check(errors, || LoadedPlatform {
        root,
        dir,
        sources: Arc::new(sources),
        file,
        raw,
        spec,
        components,
        instances,
        environment_components,
    })
}

/// The repository root a load of `platform_dir` with `root` uses (canonical; see
/// [`LoadOptions::root`]), without loading anything: the journal's recorded root must be it.
pub fn repository_root(
    fs: &dyn FileSystem,
    platform_dir: &Path,
    root: Option<&Path>,
) -> std::io::Result<PathBuf> {
    match root {
        Some(r) => fs.canonicalize(r),
        None => Ok(default_root(
            fs,
            &platform_dir_of(fs, fs.canonicalize(platform_dir)?),
        )),
    }
}

/// The platform directory of a canonical `path` given for it: the path itself, or the
/// directory holding it when it names the `platform.yaml` file (`kiln render
/// platforms/bank/platform.yaml` is `kiln render platforms/bank`).
fn platform_dir_of(fs: &dyn FileSystem, path: PathBuf) -> PathBuf {
    match path.parent() {
        Some(parent) if path.file_name() == Some(PLATFORM_FILE.as_ref()) && fs.is_file(&path) => {
            parent.to_path_buf()
        }
        _ => path,
    }
}

/// The default repository root for a canonical platform directory (see [`LoadOptions::root`]).
fn default_root(fs: &dyn FileSystem, dir: &Path) -> PathBuf {
    for a in dir.ancestors() {
        if fs.canonicalize(&a.join(".git")).is_ok() {
            return a.to_path_buf();
        }
    }
    match dir.parent() {
        Some(parent) if parent.file_name().is_some_and(|n| n == "platforms") => {
            parent.parent().unwrap_or(parent).to_path_buf()
        }
        _ => dir.to_path_buf(),
    }
}

impl Loader<'_> {
    /// `path` relative to the root, `/`-separated; the absolute path when outside. Inside a
    /// fetched tree, after how errors name its root (`<url>@<ref>:deploy/component.yaml`).
    fn display(&self, path: &Path) -> String {
        match path.strip_prefix(&self.root) {
            Ok(rel) if !self.shown_root.is_empty() => shown_join(&self.shown_root, &slashed(rel)),
            Ok(rel) => {
                let parts: Vec<String> = rel
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy().into_owned())
                    .collect();
                if parts.is_empty() {
                    ".".into()
                } else {
                    parts.join("/")
                }
            }
            Err(_) => path.display().to_string(),
        }
    }

    fn schema_error(
        &mut self,
        file: SourceId,
        pointer: &str,
        message: String,
        schema: &'static str,
    ) {
        let v = Violation {
            pointer: pointer.to_string(),
            key: false,
            message,
            help: None,
        };
        self.push_violation(file, v, schema);
    }

    fn push_violation(&mut self, file: SourceId, v: Violation, schema: &'static str) {
        let field = crate::diag::field_path(&v.pointer);
        let summary = if v.key {
            let parent = v.pointer.rsplit_once('/').map_or("", |(p, _)| p);
            format!("{} in `{}`", v.message, crate::diag::field_path(parent))
        } else {
            format!("`{field}`: {}", v.message)
        };
        let mut loc = Loc::new(file, v.pointer);
        loc.key = v.key;
        let sn = self.sources.snippet(&loc);
        let see = format!(
            "see schema/{schema} for the allowed fields; editors check it through the `# yaml-language-server` line"
        );
        self.errors.push(LoadError::SchemaViolation {
            help: match v.help {
                Some(guess) => format!("{guess} {see}"),
                None => see,
            },
            at: sn.at,
            field,
            summary,
            message: v.message,
            schema,
            src: sn.src,
            span: sn.span,
        });
    }

    /// Reads a single-document kiln file, checks it against `validator`. `None` (with errors
    /// recorded) when it cannot be read, parsed or is invalid.
    fn read_doc(
        &mut self,
        path: &Path,
        (schema_value, validator): &Checked,
        schema: &'static str,
    ) -> Option<(SourceId, Value, bool)> {
        let display = self.display(path);
        let text = match self.fs.read_to_string(path) {
            Ok(t) => t,
            Err(source) => {
                self.errors.push(LoadError::io("read", display, source));
                return None;
            }
        };
        let file = self.sources.add(display.clone(), text.as_str());
        let parsed = match self.parsed {
            Some(memo) => memo.take(&display, &text),
            None => crate::yaml::parse_one(&display, &text),
        };
        let value = match parsed {
            Ok(v) => v,
            Err(e) => {
                self.errors.push(e.into());
                return None;
            }
        };
        let violations = schema_violations(validator, Some(schema_value), &value);
        let valid = violations.is_empty();
        for v in violations {
            self.push_violation(file, v, schema);
        }
        Some((file, value, valid))
    }

    /// Resolves `rel` against `base`, following symlinks, and checks it stays in the root.
    /// `None` (with an error at `loc`) when it does not exist or escapes.
    fn resolve(
        &mut self,
        base: &Path,
        rel: &str,
        loc: &Loc,
        what: &'static str,
    ) -> Option<PathBuf> {
        let joined = base.join(rel);
        match self.fs.canonicalize(&joined) {
            Ok(p) if p.starts_with(&self.root) => Some(p),
            Ok(p) => {
                let sn = self.sources.snippet(loc);
                self.errors.push(LoadError::PathOutsideRoot {
                    at: sn.at,
                    path: rel.to_string(),
                    resolved: p.display().to_string(),
                    root: self.root.display().to_string(),
                    src: sn.src,
                    span: sn.span,
                });
                None
            }
            Err(_) => {
                let sn = self.sources.snippet(loc);
                // A path that does not exist may still be an attempt to leave the root
                // (`../../..`); say so, since that is the more useful message.
                let lexical = normalize(&joined);
                if !lexical.starts_with(&self.root) {
                    self.errors.push(LoadError::PathOutsideRoot {
                        at: sn.at,
                        path: rel.to_string(),
                        resolved: lexical.display().to_string(),
                        root: self.root.display().to_string(),
                        src: sn.src,
                        span: sn.span,
                    });
                } else if let Some((link, target)) = crate::fs::dangling_link(self.fs, &joined) {
                    // Not "not found": the name is there, the link leads nowhere (issue 39,
                    // item 19).
                    self.errors.push(LoadError::DanglingLink {
                        at: sn.at,
                        what,
                        path: rel.to_string(),
                        link: self.display(&link),
                        target: target.display().to_string(),
                        src: sn.src,
                        span: sn.span,
                    });
                } else {
                    let help = self.not_found_help(base, rel);
                    self.errors.push(LoadError::PathNotFound {
                        at: sn.at,
                        what,
                        path: rel.to_string(),
                        help,
                        src: sn.src,
                        span: sn.span,
                    });
                }
                None
            }
        }
    }

    /// What to say about a path that names nothing: that paths are relative to the file's
    /// directory only when that is the cause (the path exists from the repository root);
    /// otherwise the closest name in its directory, if one is close.
    fn not_found_help(&self, base: &Path, rel: &str) -> String {
        if self.fs.canonicalize(&self.root.join(rel)).is_ok() {
            return format!(
                "paths are relative to the directory of the file that names them (`{}`); `{rel}` exists relative to the repository root",
                self.display(base)
            );
        }
        // The first part of the path that does not exist, and the folder that holds it.
        let mut existing = base.to_path_buf();
        let mut missing = None;
        for part in Path::new(rel).components() {
            let next = existing.join(part);
            if self.fs.canonicalize(&next).is_err() {
                missing = Some(part.as_os_str().to_string_lossy().into_owned());
                break;
            }
            existing = next;
        }
        let Some(missing) = missing else {
            return "check the path".to_string();
        };
        let siblings: Vec<String> = self
            .fs
            .read_dir(&existing)
            .unwrap_or_default()
            .iter()
            .filter_map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
            .collect();
        match crate::diag::did_you_mean(&missing, siblings.iter().map(String::as_str)) {
            Some(m) => format!(
                "`{}` has no `{missing}`; did you mean `{m}`?",
                self.display(&existing)
            ),
            None => format!("`{}` has no `{missing}`", self.display(&existing)),
        }
    }

    /// The slot in `pending` of the component in `cdir`, added on first sight (with `tree`,
    /// which it is confined to, when it was fetched). Only the errors found so far come
    /// before its own (see [`Pending::errors_before`]).
    fn component_once<'t>(
        &self,
        cdir: &Path,
        tree: Option<&'t SourceTree>,
        pending: &mut Vec<Pending<'t>>,
        by_dir: &mut BTreeMap<PathBuf, usize>,
    ) -> usize {
        if let Some(&known) = by_dir.get(cdir) {
            return known;
        }
        pending.push(Pending {
            dir: cdir.to_path_buf(),
            tree,
            errors_before: self.errors.len(),
        });
        by_dir.insert(cdir.to_path_buf(), pending.len() - 1);
        pending.len() - 1
    }

    /// Loads the `pending` components on rayon's pool (issue 38, item 8: 10,000 component
    /// directories were a serial fifth of a large render before the render started), each
    /// through its own scope of `scopes` and with its own table of texts, then puts the
    /// results together in `pending`'s order, as a serial load would have them: the texts
    /// numbered in the order read, each component's errors after the platform's errors
    /// found before it and before those found after, the components numbered in order
    /// among those that loaded. Returns them and, by slot, each one's number (`None`: it
    /// failed).
    fn load_pending(
        &mut self,
        pending: Vec<Pending<'_>>,
        scopes: Option<&dyn Scopes>,
    ) -> (Vec<LoadedComponent>, Vec<Option<usize>>) {
        use rayon::prelude::*;
        let (fs, root, parsed) = (self.fs, &self.root, self.parsed);
        let loaded: Vec<(Option<LoadedComponent>, Sources, Vec<LoadError>)> = pending
            .par_iter()
            .map(|p| {
                // Dropped (its calls handed to the recorder) once the component is loaded.
                let scope = scopes.map(|s| s.scope(&p.dir));
                let mut one = Loader {
                    fs: scope.as_deref().unwrap_or(fs),
                    root: p.tree.map_or_else(|| root.clone(), |t| t.root.clone()),
                    sources: Sources::new(),
                    errors: Vec::new(),
                    parsed,
                    // A fetched component's files are named by the repository, the ref and
                    // the path inside it, not by the path in the source cache.
                    shown_root: p.tree.map_or_else(String::new, |t| t.shown_root.clone()),
                };
                let mut c = one.load_component(&p.dir);
                // Named by where it came from: the repository, the commit, the folder.
                if let (Some(tree), Some(c)) = (p.tree, c.as_mut()) {
                    c.display_dir = tree.label.clone();
                }
                (c, one.sources, one.errors)
            })
            .collect();
        let mut platform_errors = std::mem::take(&mut self.errors).into_iter();
        let mut taken = 0;
        let mut components = Vec::new();
        let mut index = Vec::with_capacity(pending.len());
        for (p, (c, sources, errors)) in pending.iter().zip(loaded) {
            self.errors
                .extend(platform_errors.by_ref().take(p.errors_before - taken));
            taken = p.errors_before;
            // The walk adds no text, so the component's follow those added before it.
            let offset = self.sources.files().len();
            for f in sources.files() {
                self.sources.add(f.name.clone(), f.text.clone());
            }
            self.errors.extend(errors);
            index.push(c.map(|mut c| {
                c.file += offset;
                components.push(c);
                components.len() - 1
            }));
        }
        self.errors.extend(platform_errors);
        (components, index)
    }

    /// A fetched tree's component directory: inside the tree, holding `component.yaml`. A
    /// `source.path` the tree lacks, or one without `component.yaml`, is an unknown
    /// component, with the nearest folder of the tree that holds one as its help.
    fn resolve_in_tree(&mut self, tree: &SourceTree, loc: &Loc) -> Option<PathBuf> {
        let rel = tree
            .dir
            .strip_prefix(&tree.root)
            .unwrap_or(Path::new(""))
            .display()
            .to_string();
        let rel = if rel.is_empty() { ".".to_string() } else { rel };
        let missing = self.fs.canonicalize(&tree.dir).is_err()
            && normalize(&tree.dir).starts_with(&tree.root)
            && crate::fs::dangling_link(self.fs, &tree.dir).is_none();
        let reason = if missing {
            "the fetched repository has no such folder"
        } else {
            let outer = std::mem::replace(&mut self.root, tree.root.clone());
            let found = self.resolve(&tree.root, &rel, loc, "component directory");
            self.root = outer;
            let cdir = found?;
            if self.fs.is_file(&cdir.join("component.yaml")) {
                return Some(cdir);
            }
            "the fetched folder has no component.yaml"
        };
        let help = self.nearest_in_tree(&tree.root, &rel);
        let sn = self.sources.snippet(loc);
        self.errors.push(LoadError::UnknownComponent {
            path: tree.label.clone(),
            reason: reason.to_string(),
            help,
            at: sn.at,
            src: sn.src,
            span: sn.span,
        });
        None
    }

    /// The help for a `source.path` (`rel`) that names no component in the fetched tree at
    /// `root`: the folder holding a `component.yaml` nearest to it, else those there are.
    fn nearest_in_tree(&self, root: &Path, rel: &str) -> String {
        let folders = component_folders(self.fs, root);
        let names = folders.iter().map(String::as_str);
        match crate::diag::did_you_mean(rel, names) {
            Some(m) => format!(
                "did you mean `{m}`? (`source.path` is the folder of the repository holding component.yaml)"
            ),
            None if folders.is_empty() => {
                "the repository holds no component.yaml at this ref; `source.path` names the folder that does".into()
            }
            None => {
                let shown: Vec<String> = folders.iter().take(5).map(|f| format!("`{f}`")).collect();
                format!(
                    "`source.path` names the folder of the repository holding component.yaml; the repository has: {}",
                    shown.join(", ")
                )
            }
        }
    }

    /// Resolves a component instance's `path`: inside the root, a directory holding
    /// `component.yaml`. Otherwise an error with the closest sibling directory as a hint.
    fn resolve_component(&mut self, base: &Path, rel: &str, loc: &Loc) -> Option<PathBuf> {
        // The path names the component in every `.gen.yaml`'s first line and in reports: a
        // newline or another control character would split that line (and forge a header).
        if rel.chars().any(char::is_control) {
            let sn = self.sources.snippet(loc);
            let field = crate::diag::field_path(&loc.pointer);
            let message = "a component path may not hold control characters (a newline, a tab)";
            self.errors.push(LoadError::SchemaViolation {
                help: "rename the directory, or fix the path's quoting".into(),
                at: sn.at,
                summary: format!("`{field}`: {message}"),
                field,
                message: message.into(),
                schema: "platform.schema.json",
                src: sn.src,
                span: sn.span,
            });
            return None;
        }
        let joined = base.join(rel);
        let exists = self.fs.canonicalize(&joined).is_ok();
        let lexical = normalize(&joined);
        if !exists && lexical.starts_with(&self.root) {
            return self.unknown_component(rel, &lexical, loc, "no such directory");
        }
        let cdir = self.resolve(base, rel, loc, "component directory")?;
        if !self.fs.is_file(&cdir.join("component.yaml")) {
            return self.unknown_component(rel, &cdir, loc, "the directory has no component.yaml");
        }
        Some(cdir)
    }

    fn unknown_component(
        &mut self,
        rel: &str,
        path: &Path,
        loc: &Loc,
        reason: &str,
    ) -> Option<PathBuf> {
        // Suggest a sibling directory that is a component and has a close name.
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let siblings: Vec<String> = path
            .parent()
            .and_then(|p| self.fs.read_dir(p).ok())
            .unwrap_or_default()
            .into_iter()
            .filter(|p| self.fs.is_file(&p.join("component.yaml")))
            .filter_map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
            .collect();
        let help = match crate::diag::did_you_mean(&name, siblings.iter().map(String::as_str)) {
            Some(m) => {
                let fixed = match rel.rsplit_once('/') {
                    Some((head, _)) => format!("{head}/{m}"),
                    None => m,
                };
                format!("did you mean `{fixed}`?")
            }
            None => "`path` is relative to the platform directory and names a directory holding component.yaml".into(),
        };
        let sn = self.sources.snippet(loc);
        self.errors.push(LoadError::UnknownComponent {
            path: rel.to_string(),
            reason: reason.to_string(),
            at: sn.at,
            help,
            src: sn.src,
            span: sn.span,
        });
        None
    }

    fn load_component(&mut self, cdir: &Path) -> Option<LoadedComponent> {
        let errors_before = self.errors.len();
        let (file, raw, valid) = self.read_doc(
            &cdir.join("component.yaml"),
            component_validator(),
            "component.schema.json",
        )?;
        if !valid {
            return None;
        }
        let spec = match ComponentFile::deserialize(&raw) {
            Ok(s) => s,
            Err(e) => {
                self.schema_error(file, "", e.to_string(), "component.schema.json");
                return None;
            }
        };
        let mut files = BTreeMap::new();
        let mut assets = BTreeMap::new();
        for (g, entry) in spec.spec.generators.iter().enumerate() {
            let gloc = Loc::new(file, format!("/spec/generators/{g}"));
            let generator = &entry.generator;
            match generator {
                // A list with a reference, an optional entry or a `when:` is read per
                // BuildPlan by the render (`render::read_files`).
                Generator::Files(list) if list.iter().any(per_plan) => {}
                Generator::Files(list) => {
                    let mut resources = Vec::new();
                    for (k, e) in list.iter().enumerate() {
                        let loc = gloc.join("files").join(k);
                        if let Some(path) = self.resolve(cdir, e.path(), &loc, "manifest file") {
                            self.read_manifests(&path, &loc, &mut resources);
                        }
                    }
                    files.insert(g, resources);
                }
                Generator::Kustomize(rel) if has_reference(rel) => {}
                Generator::Kustomize(rel) => {
                    let loc = gloc.join("kustomize");
                    if let Some(kdir) = self.resolve(cdir, rel, &loc, "kustomization directory") {
                        self.check_tree(&kdir, &loc, &mut BTreeSet::new());
                    }
                }
                Generator::ConfigMapGenerator(args) | Generator::SecretGenerator(args) => {
                    let key = if matches!(generator, Generator::ConfigMapGenerator(_)) {
                        "configMapGenerator"
                    } else {
                        "secretGenerator"
                    };
                    let entries = args
                        .files
                        .iter()
                        .map(|f| ("files", f))
                        .chain(args.envs.iter().map(|f| ("envs", f)));
                    for (k, (field, entry)) in entries.enumerate() {
                        // `files` entries may be `key=path`.
                        let rel = entry.split_once('=').map_or(entry.as_str(), |(_, p)| p);
                        if has_reference(rel) {
                            continue; // read per BuildPlan by the render
                        }
                        let idx = if field == "files" {
                            k
                        } else {
                            k - args.files.len()
                        };
                        let loc = gloc.join(key).join(field).join(idx);
                        if let Some(path) = self.resolve(cdir, rel, &loc, "generator file") {
                            match self.fs.read_to_string(&path) {
                                Ok(text) => {
                                    assets.insert(rel.to_string(), text);
                                }
                                Err(source) => self.errors.push(LoadError::io(
                                    "read",
                                    self.display(&path),
                                    source,
                                )),
                            }
                        }
                    }
                }
                Generator::Resources(_) => {}
                Generator::Helm(h) => {
                    let loc = gloc.join("helm");
                    // A pulled chart is the source stage's (`crate::source::charts`).
                    if !has_reference(&h.chart) && !h.is_remote() {
                        self.resolve(cdir, &h.chart, &loc.join("chart"), "chart directory");
                    }
                    for (k, f) in h.values_files.iter().enumerate() {
                        if !per_plan(f) {
                            let floc = loc.join("valuesFiles").join(k);
                            self.resolve(cdir, f.path(), &floc, "values file");
                        }
                    }
                }
            }
        }
        if self.errors.len() > errors_before {
            return None;
        }
        Some(LoadedComponent {
            dir: cdir.to_path_buf(),
            display_dir: self.display(cdir),
            shown_dir: self.display(cdir),
            file,
            raw,
            spec,
            files,
            assets,
        })
    }

    /// Reads a manifest file, or every `*.yaml`/`*.yml` file of a directory (sorted by name,
    /// not recursive), into `out`.
    fn read_manifests(&mut self, path: &Path, loc: &Loc, out: &mut Vec<Resource>) {
        if !self.fs.is_dir(path) {
            self.read_manifest_file(path, out);
            return;
        }
        let entries = match self.fs.read_dir(path) {
            Ok(e) => e,
            Err(source) => {
                self.errors
                    .push(LoadError::io("list directory", self.display(path), source));
                return;
            }
        };
        let mut found = false;
        for entry in yaml_entries(self.fs, entries) {
            found = true;
            let name = entry
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            // A symlink inside the directory may point anywhere; check each file too.
            if let Some(real) = self.resolve(path, &name, loc, "manifest file") {
                self.read_manifest_file(&real, out);
            }
        }
        if !found {
            let sn = self.sources.snippet(loc);
            self.errors.push(LoadError::EmptyDirectory {
                at: sn.at,
                path: self.display(path),
                src: sn.src,
                span: sn.span,
            });
        }
    }

    fn read_manifest_file(&mut self, path: &Path, out: &mut Vec<Resource>) {
        let display = self.display(path);
        let text = match self.fs.read_to_string(path) {
            Ok(t) => t,
            Err(source) => {
                self.errors.push(LoadError::io("read", display, source));
                return;
            }
        };
        let file = self.sources.add(display.clone(), text.as_str());
        let (resources, problems) = match manifest_resources(&display, &text) {
            Ok(r) => r,
            Err(e) => {
                self.errors.push(e.into());
                return;
            }
        };
        for NotAnObject {
            doc,
            pointer,
            reason,
        } in problems
        {
            let mut loc = Loc::new(file, pointer);
            loc.doc = doc;
            let sn = self.sources.snippet(&loc);
            self.errors.push(LoadError::InvalidResource {
                at: sn.at,
                doc,
                reason,
                src: sn.src,
                span: sn.span,
            });
        }
        out.extend(resources);
    }

    /// Checks that every file under a kustomization directory stays inside the root (the
    /// native engine reads them later through the same file system). `seen` holds the
    /// canonical directories already walked, so a symlink loop (`ln -s . loop`) ends the walk
    /// instead of recursing until the stack overflows.
    fn check_tree(&mut self, dir: &Path, loc: &Loc, seen: &mut BTreeSet<PathBuf>) {
        if !seen.insert(dir.to_path_buf()) {
            return;
        }
        let Ok(entries) = self.fs.read_dir(dir) else {
            return;
        };
        for entry in entries {
            let name = entry
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            // A link that leads nowhere reads nothing, so it cannot leave the root: kubectl
            // builds the directory unless the kustomization names the link, and then the
            // engine's error names it (issue 39, item 19; it was "kustomization file not
            // found").
            if self.fs.canonicalize(&entry).is_err()
                && crate::fs::dangling_link(self.fs, &entry).is_some()
            {
                continue;
            }
            if let Some(real) = self.resolve(dir, &name, loc, "kustomization file")
                && self.fs.is_dir(&real)
            {
                self.check_tree(&real, loc, seen);
            }
        }
    }
}

/// Whether a path holds a `${…}` reference (resolved per BuildPlan at evaluate).
pub fn has_reference(path: &str) -> bool {
    path.contains("${")
}

/// Whether a path entry is resolved per BuildPlan instead of at load: it has a reference,
/// is optional, or applies only in some environments.
fn per_plan(entry: &crate::spec::PathEntry) -> bool {
    has_reference(entry.path()) || entry.optional() || entry.when().is_some()
}

/// What makes `value` not a Kubernetes object: (JSON Pointer, reason).
/// The `*.yaml`/`*.yml` files among a directory's `entries` (its sorted listing), not
/// directories themselves: what a `files:` entry naming a directory reads, not recursive.
/// Load and render (for a path resolved per BuildPlan) both list directories through it.
pub fn yaml_entries(fs: &dyn FileSystem, entries: Vec<PathBuf>) -> Vec<PathBuf> {
    entries
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "yaml" || e == "yml"))
        .filter(|p| !fs.is_dir(p))
        .collect()
}

/// A document of a manifest file that is not a Kubernetes object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotAnObject {
    /// The document's index in the file.
    pub doc: usize,
    /// Where in it the problem is (empty: the document).
    pub pointer: &'static str,
    pub reason: String,
}

/// The documents of the manifest file `name` (text `text`) as resources, and the documents
/// that are not Kubernetes objects. Load and render read every manifest through it.
///
/// Errors: the YAML does not parse.
pub fn manifest_resources(
    name: &str,
    text: &str,
) -> Result<(Vec<Resource>, Vec<NotAnObject>), crate::yaml::YamlError> {
    let (mut resources, mut problems) = (Vec::new(), Vec::new());
    for (doc, value) in crate::yaml::parse_stream(name, text)?
        .into_iter()
        .enumerate()
    {
        match resource_problem(&value) {
            Some((pointer, reason)) => problems.push(NotAnObject {
                doc,
                pointer,
                reason,
            }),
            None => resources.push(Resource::new(
                value,
                Some(Origin {
                    file: name.to_string(),
                    document: doc,
                }),
            )),
        }
    }
    Ok((resources, problems))
}

/// Why `value` is not a Kubernetes object (the pointer to underline, and the reason), if it
/// is not one: the one rule for manifest files and inline resources.
pub fn resource_problem(value: &Value) -> Option<(&'static str, String)> {
    let Some(obj) = value.as_object() else {
        return Some(("", "not a mapping".into()));
    };
    for (field, pointer) in [("apiVersion", "/apiVersion"), ("kind", "/kind")] {
        let value = obj.get(field).and_then(Value::as_str);
        if value.is_none_or(str::is_empty) {
            return Some((
                if obj.contains_key(field) { pointer } else { "" },
                format!("missing `{field}`"),
            ));
        }
    }
    let name = value.pointer("/metadata/name").and_then(Value::as_str);
    if name.is_none_or(str::is_empty) {
        return Some(("/metadata", "missing `metadata.name`".into()));
    }
    None
}

/// Lexically removes `.` and `..` from a path (no file system access).
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            PathPart::ParentDir => {
                out.pop();
            }
            PathPart::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// Where an instance's `source` errors point: its `source.path` when it has one, else the
/// `source` mapping.
fn source_pointer(inst: &Value, p: usize, i: usize) -> String {
    let base = format!("/spec/projects/{p}/components/{i}/source");
    match inst.pointer("/source/path").and_then(Value::as_str) {
        Some(path) if !path.is_empty() => format!("{base}/path"),
        _ => base,
    }
}

/// The folders of the fetched tree at `root` that hold a `component.yaml`, relative to it
/// (`.` for the root), in sorted order; at most [`MAX_COMPONENT_FOLDERS`] folders are looked
/// into, `.git` and other hidden folders never.
fn component_folders(fs: &dyn FileSystem, root: &Path) -> Vec<String> {
    let mut found = Vec::new();
    let mut todo = vec![root.to_path_buf()];
    let mut seen = 0;
    while let Some(dir) = todo.pop() {
        seen += 1;
        if seen > MAX_COMPONENT_FOLDERS {
            break;
        }
        if fs.is_file(&dir.join("component.yaml")) {
            let rel = dir.strip_prefix(root).unwrap_or(&dir).display().to_string();
            found.push(if rel.is_empty() { ".".to_string() } else { rel });
        }
        let entries = fs.read_dir_kinds(&dir).unwrap_or_default();
        for (e, kind) in entries.into_iter().rev() {
            let hidden = e
                .file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with('.'));
            // A link is followed only while it stays in the tree.
            let dir = match kind {
                Some(k) => k == crate::fs::PlainKind::Dir,
                None => fs.canonicalize(&e).is_ok_and(|c| c.starts_with(root)) && fs.is_dir(&e),
            };
            if !hidden && dir {
                todo.push(e);
            }
        }
    }
    found.sort();
    found
}

/// How many folders of a fetched tree [`component_folders`] looks into: a did-you-mean is
/// not worth walking a monorepo for.
const MAX_COMPONENT_FOLDERS: usize = 2_000;

#[cfg(test)]
mod tests {
    use super::*;

    /// A fetched tree's files are named `<url>@<ref>:<path>`, its URL's `//` kept; a local
    /// component's as before; and the name is read back to the path inside.
    #[test]
    fn shown_names_join_and_split_as_text() {
        let root = "git://127.0.0.1:9418/app.git@v1.2.0:";
        assert_eq!(
            shown_join(root, "deploy/component.yaml"),
            "git://127.0.0.1:9418/app.git@v1.2.0:deploy/component.yaml"
        );
        assert_eq!(shown_join(root, ""), format!("{root}."));
        let top = shown_join(root, "");
        assert_eq!(
            shown_join(&top, "component.yaml"),
            format!("{root}component.yaml")
        );
        let dir = shown_join(root, "deploy");
        assert_eq!(
            shown_join(&dir, "k/cm.yaml"),
            format!("{root}deploy/k/cm.yaml")
        );
        assert_eq!(
            shown_inside(&dir, &format!("{root}deploy/k/cm.yaml")),
            Some("k/cm.yaml")
        );
        assert_eq!(
            shown_inside(&top, &format!("{root}cm.yaml")),
            Some("cm.yaml")
        );
        assert_eq!(
            shown_join("components/web", "cm.yaml"),
            "components/web/cm.yaml"
        );
        assert_eq!(
            shown_inside("components/web", "components/web/cm.yaml"),
            Some("cm.yaml")
        );
        assert_eq!(
            shown_inside("components/web", "components/webx/cm.yaml"),
            None
        );
    }

    /// Writes `files` (path → text) under a fresh temp dir, returns it.
    fn tree(files: &[(&str, &str)]) -> tempfile::TempDir {
        let t = tempfile::tempdir().unwrap();
        for (p, text) in files {
            let path = t.path().join(p);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        t
    }

    const PLATFORM: &str = "apiVersion: kiln/v1alpha1\nkind: Platform\nmetadata:\n  name: p\nspec:\n  clusters: [{name: c, server: https://c}]\n  environments:\n  - {name: dev, tier: nonprod, cluster: c}\n  projects:\n  - name: web\n    components:\n    - path: ../../components/a\n";
    const COMPONENT: &str = "apiVersion: kiln/v1alpha1\nkind: Component\nmetadata:\n  name: a\nspec:\n  generators:\n  - files: [manifests]\n";
    const DEPLOY: &str = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: a\n---\napiVersion: v1\nkind: Service\nmetadata:\n  name: a\n";

    fn opts(t: &tempfile::TempDir) -> LoadOptions<'_> {
        LoadOptions {
            root: Some(t.path()),
            ..Default::default()
        }
    }

    /// Issue 38 item 8: each kiln document of a render is parsed once. The source stage reads
    /// every `component.yaml` for its charts, its kustomize bases and (unnamed instances) its
    /// name, and load reads it again: four parses each, and two of `platform.yaml`, before.
    #[test]
    fn each_document_is_parsed_once_per_render() {
        let platform = PLATFORM.replace(
            "    - path: ../../components/a\n",
            "    - path: ../../components/a\n    - {name: a2, path: ../../components/a}\n    - path: ../../components/b\n",
        );
        let b = "apiVersion: kiln/v1alpha1\nkind: Component\nmetadata:\n  name: b\nspec:\n  generators:\n  - kustomize: base\n";
        let t = tree(&[
            ("platforms/p/platform.yaml", &platform),
            ("components/a/component.yaml", COMPONENT),
            ("components/a/manifests/deploy.yaml", DEPLOY),
            ("components/b/component.yaml", b),
            ("components/b/base/kustomization.yaml", "resources: []\n"),
        ]);
        let dir = t.path().join("platforms/p");
        let fetched = crate::pipeline::RenderOptions::new(&dir)
            .resolve_sources()
            .unwrap();
        let lp = load(
            &RealFs,
            &dir,
            &LoadOptions {
                parsed: Some(&fetched.parsed),
                ..opts(&t)
            },
        )
        .unwrap();
        assert_eq!(lp.components.len(), 2);
        assert_eq!(lp.components[1].raw["metadata"]["name"], "b");
        // platform.yaml, a's and b's component.yaml: once each.
        assert_eq!(fetched.parsed.parses(), 3);
        // Load took them all: nothing stays held for the rest of the render.
        assert!(fetched.parsed.is_empty());
    }

    /// A document changed between the source stage's read and load's is parsed anew: load
    /// sees the bytes it read, never the source stage's.
    #[test]
    fn a_document_changed_after_the_source_stage_is_parsed_again() {
        let parsed = Parsed::default();
        let old = parsed.parse("c", "a: 1\n").unwrap();
        assert_eq!(old["a"], 1);
        assert_eq!(parsed.take("c", "a: 2\n").unwrap()["a"], 2);
        assert_eq!(parsed.take("c", "a: 1\n").unwrap()["a"], 1);
        assert_eq!(parsed.parses(), 2);
        assert!(parsed.is_empty());
        // A text that does not parse gives the reader's own error, naming its file.
        let e = parsed
            .take("components/x/component.yaml", "a: [\n")
            .unwrap_err();
        assert!(e.to_string().contains("components/x/component.yaml"), "{e}");
    }

    /// Issue 38 item 9: the platform may be named by its `platform.yaml` as well as by its
    /// directory.
    #[test]
    fn a_platform_yaml_path_loads_its_platform() {
        let t = tree(&[
            ("platforms/p/platform.yaml", PLATFORM),
            ("components/a/component.yaml", COMPONENT),
            ("components/a/manifests/deploy.yaml", DEPLOY),
        ]);
        let dir = t.path().join("platforms/p");
        let by_dir = load(&RealFs, &dir, &LoadOptions::default()).unwrap();
        let by_file = load(&RealFs, &dir.join("platform.yaml"), &LoadOptions::default()).unwrap();
        assert_eq!((&by_file.dir, &by_file.root), (&by_dir.dir, &by_dir.root));
        assert_eq!(by_file.components.len(), 1);
        assert_eq!(
            repository_root(&RealFs, &dir.join("platform.yaml"), None).unwrap(),
            by_dir.root
        );
    }

    #[test]
    fn loads_platform_components_and_manifests() {
        let t = tree(&[
            ("platforms/p/platform.yaml", PLATFORM),
            ("components/a/component.yaml", COMPONENT),
            ("components/a/manifests/deploy.yaml", DEPLOY),
            ("components/a/manifests/notes.txt", "ignored"),
        ]);
        let lp = load(&RealFs, &t.path().join("platforms/p"), &opts(&t)).unwrap();
        assert_eq!(lp.components.len(), 1);
        assert_eq!(lp.instances, vec![vec![0]]);
        let c = &lp.components[0];
        assert_eq!(c.display_dir, "components/a");
        let res = &c.files[&0];
        assert_eq!(
            res.iter().map(|r| r.kind()).collect::<Vec<_>>(),
            ["Deployment", "Service"]
        );
        assert_eq!(res[1].origin.as_ref().unwrap().document, 1);
        assert_eq!(
            res[1].origin.as_ref().unwrap().file,
            "components/a/manifests/deploy.yaml"
        );
    }

    #[test]
    fn load_only_keeps_only_the_named_components_and_their_projects() {
        let platform = "apiVersion: kiln/v1alpha1\nkind: Platform\nmetadata:\n  name: p\nspec:\n  clusters: [{name: c, server: https://c}]\n  environments:\n  - {name: dev, tier: nonprod, cluster: c}\n  projects:\n  - name: web\n    components:\n    - path: ../../components/a\n    - path: ../../components/b\n  - name: ops\n    components:\n    - path: ../../components/a\n  - name: data\n    components:\n    - path: ../../components/b\n";
        let b = COMPONENT.replace("name: a", "name: b");
        let t = tree(&[
            ("platforms/p/platform.yaml", platform),
            ("components/a/component.yaml", COMPONENT),
            ("components/a/manifests/deploy.yaml", DEPLOY),
            ("components/b/component.yaml", &b),
            ("components/b/manifests/deploy.yaml", DEPLOY),
        ]);
        let dir = t.path().join("platforms/p");
        let b_dir = std::fs::canonicalize(t.path().join("components/b")).unwrap();
        let only = BTreeSet::from([b_dir.clone()]);
        let lp = load(
            &RealFs,
            &dir,
            &LoadOptions {
                only: Some(&only),
                ..opts(&t)
            },
        )
        .unwrap();
        assert_eq!(lp.components.len(), 1);
        assert_eq!(lp.components[0].dir, b_dir);
        // `ops` had only `a`: gone; `web` and `data` keep their `b`, lined up with `instances`.
        let names: Vec<&str> = lp
            .spec
            .spec
            .projects
            .iter()
            .map(|p| p.name.as_str())
            .collect();
        assert_eq!(names, ["web", "data"]);
        assert_eq!(lp.instances, vec![vec![0], vec![0]]);
        assert!(
            lp.spec
                .spec
                .projects
                .iter()
                .all(|p| p.components.len() == 1 && p.components[0].path == "../../components/b")
        );
        let all = load(&RealFs, &dir, &opts(&t)).unwrap();
        assert_eq!(all.instances, vec![vec![0, 1], vec![0], vec![1]]);
    }

    #[test]
    fn default_root_is_parent_of_platforms_dir() {
        let t = tree(&[
            ("platforms/p/platform.yaml", PLATFORM),
            ("components/a/component.yaml", COMPONENT),
            ("components/a/manifests/deploy.yaml", DEPLOY),
        ]);
        let lp = load(
            &RealFs,
            &t.path().join("platforms/p"),
            &LoadOptions::default(),
        )
        .unwrap();
        assert_eq!(lp.root, std::fs::canonicalize(t.path()).unwrap());
    }

    #[test]
    fn all_schema_violations_are_reported_with_lines() {
        let bad_platform = PLATFORM
            .replace("tier: nonprod", "tier: nonprod, colour: red")
            .replace("  - name: web\n", "  - name: web\n    bogus: 1\n");
        // The component's own violation is reported in the same run.
        let bad_component = COMPONENT.replace("  generators:", "  generatorz: []\n  generators:");
        let t = tree(&[
            ("platforms/p/platform.yaml", &bad_platform),
            ("components/a/component.yaml", &bad_component),
        ]);
        let errs = load(&RealFs, &t.path().join("platforms/p"), &opts(&t))
            .unwrap_err()
            .errors;
        let msgs: Vec<String> = errs.iter().map(|e| e.to_string()).collect();
        assert_eq!(msgs.len(), 3, "{msgs:?}");
        assert!(
            msgs[2].starts_with("components/a/component.yaml:6:"),
            "{msgs:?}"
        );
        assert!(
            msgs[0].starts_with("platforms/p/platform.yaml:8:"),
            "{msgs:?}"
        );
        assert!(msgs[0].contains("unknown field `colour`"), "{msgs:?}");
        assert!(
            msgs[1].starts_with("platforms/p/platform.yaml:11:"),
            "{msgs:?}"
        );
    }

    #[test]
    fn a_listed_directory_without_yaml_files_is_an_error() {
        let t = tree(&[
            ("platforms/p/platform.yaml", PLATFORM),
            ("components/a/component.yaml", COMPONENT),
            ("components/a/manifests/deploy.yaml.tmpl", DEPLOY),
        ]);
        let errs = load(&RealFs, &t.path().join("platforms/p"), &opts(&t))
            .unwrap_err()
            .errors;
        assert!(
            matches!(&errs[..], [LoadError::EmptyDirectory { .. }]),
            "{errs:?}"
        );
        assert!(
            errs[0]
                .to_string()
                .starts_with("components/a/component.yaml:7:"),
            "{}",
            errs[0]
        );
    }

    #[test]
    fn component_path_outside_root_is_refused() {
        let outside = tree(&[("component.yaml", COMPONENT)]);
        let p = PLATFORM.replace("../../components/a", &outside.path().display().to_string());
        let t = tree(&[("platforms/p/platform.yaml", &p)]);
        let errs = load(&RealFs, &t.path().join("platforms/p"), &opts(&t))
            .unwrap_err()
            .errors;
        assert!(
            matches!(&errs[..], [LoadError::PathOutsideRoot { .. }]),
            "{errs:?}"
        );
        assert!(
            errs[0]
                .to_string()
                .starts_with("platforms/p/platform.yaml:12:"),
            "{}",
            errs[0]
        );
    }

    /// A component directory whose name holds a newline exists on disk, but its path would
    /// split the `.gen.yaml` header line: refused at the field, nothing rendered.
    #[test]
    fn component_path_with_a_control_character_is_refused() {
        let t = tree(&[
            (
                "platforms/p/platform.yaml",
                &PLATFORM.replace("../../components/a", "\"../../components/a\\nb\""),
            ),
            ("components/a\nb/component.yaml", COMPONENT),
            ("components/a\nb/manifests/deploy.yaml", DEPLOY),
        ]);
        let errs = load(&RealFs, &t.path().join("platforms/p"), &opts(&t))
            .unwrap_err()
            .errors;
        assert!(
            matches!(&errs[..], [LoadError::SchemaViolation { .. }]),
            "{errs:?}"
        );
        let shown = errs[0].to_string();
        assert!(
            shown.starts_with("platforms/p/platform.yaml:12:")
                && shown.contains("control characters"),
            "{shown}"
        );
    }

    #[cfg(unix)]
    #[test]
    fn symlink_escaping_root_is_refused() {
        let outside = tree(&[("secret.yaml", DEPLOY)]);
        let t = tree(&[
            ("platforms/p/platform.yaml", PLATFORM),
            ("components/a/component.yaml", COMPONENT),
            ("components/a/manifests/deploy.yaml", DEPLOY),
        ]);
        std::os::unix::fs::symlink(
            outside.path().join("secret.yaml"),
            t.path().join("components/a/manifests/x.yaml"),
        )
        .unwrap();
        let errs = load(&RealFs, &t.path().join("platforms/p"), &opts(&t))
            .unwrap_err()
            .errors;
        assert!(
            matches!(&errs[..], [LoadError::PathOutsideRoot { .. }]),
            "{errs:?}"
        );
        assert!(
            errs[0]
                .to_string()
                .starts_with("components/a/component.yaml:7:"),
            "{}",
            errs[0]
        );
    }

    #[cfg(unix)]
    #[test]
    fn symlink_inside_a_kustomization_directory_is_refused() {
        let outside = tree(&[("leak.yaml", DEPLOY)]);
        let comp = COMPONENT.replace("  - files: [manifests]", "  - kustomize: base");
        let t = tree(&[
            ("platforms/p/platform.yaml", PLATFORM),
            ("components/a/component.yaml", &comp),
            (
                "components/a/base/kustomization.yaml",
                "resources: [leak.yaml]\n",
            ),
        ]);
        std::os::unix::fs::symlink(
            outside.path().join("leak.yaml"),
            t.path().join("components/a/base/leak.yaml"),
        )
        .unwrap();
        let errs = load(&RealFs, &t.path().join("platforms/p"), &opts(&t))
            .unwrap_err()
            .errors;
        assert!(
            matches!(&errs[..], [LoadError::PathOutsideRoot { .. }]),
            "{errs:?}"
        );
        assert!(
            errs[0]
                .to_string()
                .starts_with("components/a/component.yaml:7:"),
            "{}",
            errs[0]
        );
    }

    #[test]
    fn yaml_errors_and_invalid_documents_are_reported() {
        let t = tree(&[
            ("platforms/p/platform.yaml", PLATFORM),
            ("components/a/component.yaml", COMPONENT),
            (
                "components/a/manifests/deploy.yaml",
                "apiVersion: v1\nkind: ConfigMap\nmetadata: {}\n",
            ),
        ]);
        let errs = load(&RealFs, &t.path().join("platforms/p"), &opts(&t))
            .unwrap_err()
            .errors;
        assert!(
            matches!(&errs[..], [LoadError::InvalidResource { .. }]),
            "{errs:?}"
        );

        let t = tree(&[(
            "platforms/p/platform.yaml",
            "apiVersion: a\napiVersion: b\n",
        )]);
        let errs = load(&RealFs, &t.path().join("platforms/p"), &opts(&t))
            .unwrap_err()
            .errors;
        assert!(matches!(&errs[..], [LoadError::Yaml(_)]), "{errs:?}");
    }

    /// newcomer3's repro 08: one typo in a platform.yaml whose instances come from other
    /// repositories (so the source stage fetched nothing) gave one error for the typo and one
    /// "unknown component ``: its `source` was not fetched" per remote instance.
    #[test]
    fn a_schema_violation_is_not_repeated_for_each_unfetched_source() {
        let remote = "    - {name: a1, source: {git: \"https://git.test/a.git\", path: deploy}}\n    - {name: a2, source: {git: \"https://git.test/a.git\", path: deploy}, deployto: {tiers: [prod]}}\n";
        let platform = format!("{PLATFORM}{remote}");
        let t = tree(&[
            ("platforms/p/platform.yaml", platform.as_str()),
            ("components/a/component.yaml", COMPONENT),
            ("components/a/manifests/deploy.yaml", DEPLOY),
        ]);
        let errs = load(&RealFs, &t.path().join("platforms/p"), &opts(&t))
            .unwrap_err()
            .errors;
        assert!(
            matches!(&errs[..], [LoadError::SchemaViolation { .. }]),
            "{errs:#?}"
        );
        assert!(errs[0].to_string().contains("deployto"), "{}", errs[0]);
        // Without the typo, an instance nobody fetched is still an error of its own.
        let fixed = platform.replace("deployto", "deployTo");
        std::fs::write(t.path().join("platforms/p/platform.yaml"), fixed).unwrap();
        let errs = load(&RealFs, &t.path().join("platforms/p"), &opts(&t))
            .unwrap_err()
            .errors;
        assert_eq!(errs.len(), 2, "{errs:#?}");
        assert!(
            errs.iter()
                .all(|e| matches!(e, LoadError::UnknownComponent { .. })),
            "{errs:#?}"
        );
    }

    #[test]
    fn missing_component_is_reported_at_its_path() {
        let t = tree(&[
            (
                "platforms/p/platform.yaml",
                &PLATFORM.replace("components/a", "components/b"),
            ),
            ("components/a/component.yaml", COMPONENT),
            ("components/a/manifests/deploy.yaml", DEPLOY),
            ("components/b/README.md", "not a component"),
        ]);
        let errs = load(&RealFs, &t.path().join("platforms/p"), &opts(&t))
            .unwrap_err()
            .errors;
        assert!(
            matches!(&errs[..], [LoadError::UnknownComponent { .. }]),
            "{errs:?}"
        );
        assert!(
            errs[0].to_string().contains("has no component.yaml"),
            "{}",
            errs[0]
        );

        let t = tree(&[
            (
                "platforms/p/platform.yaml",
                &PLATFORM.replace("components/a", "components/aa"),
            ),
            ("components/a/component.yaml", COMPONENT),
        ]);
        let errs = load(&RealFs, &t.path().join("platforms/p"), &opts(&t))
            .unwrap_err()
            .errors;
        let LoadError::UnknownComponent { help, .. } = &errs[0] else {
            panic!("{errs:?}")
        };
        assert_eq!(help, "did you mean `../../components/a`?");
    }

    /// A file system that holds the read of `held` until `release` has been read (at most
    /// ten seconds), so that the component read later in load order finishes first, as it
    /// may on a busy pool. `waited_out`: the release never came, the components loaded one
    /// at a time.
    #[derive(Debug)]
    struct Gate {
        held: PathBuf,
        release: PathBuf,
        released: std::sync::Mutex<bool>,
        signal: std::sync::Condvar,
        waited_out: std::sync::atomic::AtomicBool,
    }

    impl Gate {
        fn new(held: PathBuf, release: PathBuf) -> Gate {
            Gate {
                held,
                release,
                released: std::sync::Mutex::new(false),
                signal: std::sync::Condvar::new(),
                waited_out: Default::default(),
            }
        }
    }

    impl FileSystem for Gate {
        fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
            if path == self.held {
                let released = self.released.lock().unwrap();
                let (released, wait) = self
                    .signal
                    .wait_timeout_while(released, std::time::Duration::from_secs(10), |r| !*r)
                    .unwrap();
                drop(released);
                if wait.timed_out() {
                    self.waited_out
                        .store(true, std::sync::atomic::Ordering::SeqCst);
                }
            }
            let r = RealFs.read(path);
            if path == self.release {
                *self.released.lock().unwrap() = true;
                self.signal.notify_all();
            }
            r
        }
        fn is_dir(&self, path: &Path) -> bool {
            RealFs.is_dir(path)
        }
        fn is_file(&self, path: &Path) -> bool {
            RealFs.is_file(path)
        }
        fn read_dir(&self, path: &Path) -> io::Result<Vec<PathBuf>> {
            RealFs.read_dir(path)
        }
        fn canonicalize(&self, path: &Path) -> io::Result<PathBuf> {
            RealFs.canonicalize(path)
        }
    }

    /// `load` on a pool of its own with `threads` threads.
    fn load_on(
        threads: usize,
        fs: &dyn FileSystem,
        dir: &Path,
        opts: &LoadOptions,
    ) -> Result<LoadedPlatform, Errors<LoadError>> {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap()
            .install(|| load(fs, dir, opts))
    }

    /// `platform.yaml` listing the components `names` in one project.
    fn platform_of(names: &[&str]) -> String {
        let mut p = PLATFORM.replace("    - path: ../../components/a\n", "");
        for n in names {
            p.push_str(&format!("    - path: ../../components/{n}\n"));
        }
        p
    }

    /// Issue 38 item 8: the components load at once, and the result is a serial load's: the
    /// texts numbered in the order read, the components in the order listed, each
    /// component's file-system calls recorded under it and no other, though the first
    /// component finishes last.
    #[test]
    fn components_load_at_once_with_a_serial_loads_numbering_and_reads() {
        let names = ["a", "b", "c", "d"];
        let component = |n: &str| COMPONENT.replace("name: a", &format!("name: {n}"));
        let deploy = |n: &str| DEPLOY.replace("name: a", &format!("name: {n}"));
        let mut files = vec![("platforms/p/platform.yaml".to_string(), platform_of(&names))];
        for n in names {
            files.push((format!("components/{n}/component.yaml"), component(n)));
            files.push((format!("components/{n}/manifests/deploy.yaml"), deploy(n)));
        }
        let refs: Vec<(&str, &str)> = files.iter().map(|(p, t)| (&p[..], &t[..])).collect();
        let t = tree(&refs);
        let root = t.path().canonicalize().unwrap();
        let gate = Gate::new(
            root.join("components/a/component.yaml"),
            root.join("components/d/manifests/deploy.yaml"),
        );
        let rec = crate::cache::Recorder::new(&gate);
        let dir = t.path().join("platforms/p");
        let lp = load_on(
            2,
            &rec,
            &dir,
            &LoadOptions {
                scopes: Some(&rec),
                ..opts(&t)
            },
        )
        .unwrap();
        assert!(
            !gate.waited_out.load(std::sync::atomic::Ordering::SeqCst),
            "the components loaded one at a time"
        );
        let shown: Vec<&str> = lp.sources.files().iter().map(|f| f.name.as_str()).collect();
        let mut expected = vec!["platforms/p/platform.yaml".to_string()];
        for n in names {
            expected.push(format!("components/{n}/component.yaml"));
            expected.push(format!("components/{n}/manifests/deploy.yaml"));
        }
        assert_eq!(shown, expected);
        assert_eq!(lp.instances, vec![vec![0, 1, 2, 3]]);
        for (k, (c, n)) in lp.components.iter().zip(names).enumerate() {
            assert_eq!(c.display_dir, format!("components/{n}"));
            assert_eq!(c.file, 1 + 2 * k);
            assert_eq!(lp.sources.get(c.file).text.as_ref(), component(n));
        }
        let scoped = rec.scoped_reads();
        let dirs: Vec<PathBuf> = scoped.iter().map(|c| c.dir.clone()).collect();
        let want: Vec<PathBuf> = names
            .iter()
            .map(|n| root.join("components").join(n))
            .collect();
        assert_eq!(dirs, want);
        for c in &scoped {
            for r in &c.reads {
                assert!(Path::new(&r.path).starts_with(&c.dir), "{r:?} under {c:?}");
            }
            let read = |f: &str| {
                let path = c.dir.join(f);
                c.reads
                    .iter()
                    .any(|r| r.op == "read" && Path::new(&r.path) == path)
            };
            assert!(
                read("component.yaml") && read("manifests/deploy.yaml"),
                "{c:?}"
            );
        }
        // The platform's own calls stay unscoped: platform.yaml, each component found.
        let unscoped = rec.reads();
        assert!(
            unscoped
                .iter()
                .all(|r| r.op != "read" || r.path.ends_with("platform.yaml")),
            "{unscoped:?}"
        );
    }

    /// Issue 38 item 8: errors of components loaded at once come in load order, each
    /// component's between the platform's errors found before it and those found after, not
    /// in the order the components finished.
    #[test]
    fn errors_of_components_loaded_at_once_come_in_load_order() {
        let names = ["a", "b", "missing", "c", "d"];
        let platform = platform_of(&names);
        let b = COMPONENT.replace("name: a", "name: b\n  colour: red");
        let d = COMPONENT.replace("name: a", "name: [d");
        let t = tree(&[
            ("platforms/p/platform.yaml", &platform),
            ("components/a/component.yaml", COMPONENT),
            ("components/a/manifests/deploy.yaml", DEPLOY),
            ("components/b/component.yaml", &b),
            ("components/c/component.yaml", COMPONENT),
            ("components/c/manifests/deploy.yaml", DEPLOY),
            ("components/d/component.yaml", &d),
        ]);
        let root = t.path().canonicalize().unwrap();
        let dir = t.path().join("platforms/p");
        let serial = load_on(1, &RealFs, &dir, &opts(&t)).unwrap_err().errors;
        let shown = |errs: &[LoadError]| errs.iter().map(|e| e.to_string()).collect::<Vec<_>>();
        // b's schema violation, the missing component, d's YAML error.
        assert!(
            matches!(
                &serial[..],
                [
                    LoadError::SchemaViolation { .. },
                    LoadError::UnknownComponent { .. },
                    LoadError::Yaml(_)
                ]
            ),
            "{serial:?}"
        );
        // b is held until d is read: d's error is found first.
        let gate = Gate::new(
            root.join("components/b/component.yaml"),
            root.join("components/d/component.yaml"),
        );
        let parallel = load_on(2, &gate, &dir, &opts(&t)).unwrap_err().errors;
        assert!(
            !gate.waited_out.load(std::sync::atomic::Ordering::SeqCst),
            "the components loaded one at a time"
        );
        assert_eq!(shown(&parallel), shown(&serial));
        assert!(shown(&parallel)[0].contains("colour"), "{parallel:?}");
    }
}
