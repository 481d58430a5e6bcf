//! The pipeline end to end, as the CLI (and tests) call it: load → validate → evaluate →
//! render → emit → write, each stage's errors wrapped in one [`KilnError`].
//!
//! `kiln render` is [`run_render`], `kiln show platform|buildplans` are [`show_platform`] and
//! [`show_buildplans`], `kiln schema` is [`schema`]. [`build`] stops before `write` and returns
//! the [`ArtifactSet`], for `diff`, `verify`, `publish` and the golden tests.
//!
//! Invariant: only [`run_render`] writes, and only after every earlier stage succeeded, so on
//! any error the previous output is left exactly as it was.

use crate::artifact::{ArtifactSet, Scope};
use crate::diag::Errors;
use crate::emit::{Layout, emit};
use crate::evaluate::{BuildPlan, EvaluateError, Selection, evaluate};
use crate::fs::FileSystem as _;
use crate::load::{LoadError, LoadOptions, RealFs, load};
use crate::render::RenderError;
use crate::validate::{Platform, ValidateError, validate};
use crate::write::{WriteError, WriteReport, write_scoped};
use miette::Diagnostic;
use std::path::{Path, PathBuf};
use thiserror::Error;

/// Any error of the pipeline: the stage that stopped it, with every error that stage found.
/// Renders through miette with each error's file, line and help.
#[derive(Debug, Error, Diagnostic)]
pub enum KilnError {
    #[error(transparent)]
    #[diagnostic(transparent)]
    Load(Errors<LoadError>),
    #[error(transparent)]
    #[diagnostic(transparent)]
    Validate(Errors<ValidateError>),
    #[error(transparent)]
    #[diagnostic(transparent)]
    Evaluate(Errors<EvaluateError>),
    #[error(transparent)]
    #[diagnostic(transparent)]
    Render(Errors<RenderError>),
    #[error(transparent)]
    #[diagnostic(transparent)]
    Kargo(Errors<crate::kargo::KargoError>),
    /// The schema directory given to `--schema-dir` could not be read.
    #[error(transparent)]
    #[diagnostic(transparent)]
    Schemas(crate::check::CheckError),
    /// `--schema-dir` checks found problems in the generated Kargo/Argo CD objects.
    #[error(transparent)]
    #[diagnostic(transparent)]
    Check(Errors<crate::check::Finding>),
    #[error(transparent)]
    #[diagnostic(transparent)]
    Write(WriteError),
    /// `spec.secrets: forbid` and the rendered tree would hold Secrets.
    #[error("the rendered tree would hold {} Secret{}: {}", names.len(), if names.len() == 1 { "" } else { "s" }, names.join(", "))]
    #[diagnostic(
        code(kiln::emit::secret_forbidden),
        help(
            "platform.yaml sets `spec.secrets: forbid`; deliver these Secrets another way (External Secrets, Sealed Secrets), or drop the setting to render them with a warning"
        )
    )]
    SecretsForbidden { names: Vec<String> },
}

impl KilnError {
    /// Each individual error, for printers that report them one by one.
    pub fn diagnostics(&self) -> Vec<&dyn Diagnostic> {
        fn all<E: Diagnostic>(e: &Errors<E>) -> Vec<&dyn Diagnostic> {
            e.errors.iter().map(|e| e as &dyn Diagnostic).collect()
        }
        match self {
            KilnError::Load(e) => all(e),
            KilnError::Validate(e) => all(e),
            KilnError::Evaluate(e) => all(e),
            KilnError::Render(e) => all(e),
            KilnError::Kargo(e) => all(e),
            KilnError::Schemas(e) => vec![e],
            KilnError::Check(e) => all(e),
            KilnError::Write(e) => vec![e],
            KilnError::SecretsForbidden { .. } => vec![self],
        }
    }
}

/// What `kiln render` does.
#[derive(Debug, Clone)]
pub struct RenderOptions {
    /// The platform directory (holds `platform.yaml`).
    pub platform_dir: PathBuf,
    /// The output directory (`--write-to`, default `deploy`).
    pub write_to: PathBuf,
    /// `--layout`.
    pub layout: Layout,
    /// `--project`, `--environment`, `--component`, `-l`.
    pub selection: Selection,
    /// The repository root; `None` for the default (see [`LoadOptions::root`]).
    pub root: Option<PathBuf>,
    /// `--schema-dir`: check the generated Kargo and Argo CD objects against these schemas
    /// before anything is written.
    pub schema_dir: Option<PathBuf>,
}

impl RenderOptions {
    /// Defaults: write to `deploy`, service layout, everything selected.
    pub fn new(platform_dir: impl Into<PathBuf>) -> Self {
        RenderOptions {
            platform_dir: platform_dir.into(),
            write_to: PathBuf::from("deploy"),
            layout: Layout::Service,
            selection: Selection::default(),
            root: None,
            schema_dir: None,
        }
    }
}

/// What `kiln render` did.
#[derive(Debug, Clone)]
pub struct RenderSummary {
    /// Number of BuildPlans rendered.
    pub plans: usize,
    /// Number of files in the rendered tree.
    pub files: usize,
    /// What the write changed.
    pub report: WriteReport,
    /// Kargo expressions (`${{ … }}`) left in rendered manifests, which reach the cluster
    /// as text ([`crate::kargo::expressions`]); printed as warnings.
    pub expressions: Vec<crate::kargo::expressions::ExpressionInManifest>,
    /// The Secrets in the rendered tree (see [`secrets_in`]), for the CLI's warning.
    pub secrets: Vec<String>,
}

/// Every `kind: Secret` document in `set`, as `file (namespace/name)`, in path order. kiln
/// never prints their values; the names are what `spec.secrets` and the warning report.
pub fn secrets_in(set: &ArtifactSet) -> Vec<String> {
    let mut out = Vec::new();
    for (path, bytes) in &set.files {
        let Ok(text) = std::str::from_utf8(bytes) else {
            continue;
        };
        // kiln's emitter writes `kind:` at the start of a line; skip files without Secrets
        // rather than parse every file.
        if !text.starts_with("kind: Secret") && !text.contains("\nkind: Secret") {
            continue;
        }
        let Ok(docs) = crate::yaml::parse_stream(path, text) else {
            continue;
        };
        for doc in docs {
            if doc.get("kind").and_then(serde_json::Value::as_str) != Some("Secret") {
                continue;
            }
            let meta = |k: &str| {
                doc.pointer(&format!("/metadata/{k}"))
                    .and_then(serde_json::Value::as_str)
                    .map(str::to_string)
            };
            let name = meta("name").unwrap_or_default();
            let id = match meta("namespace") {
                Some(ns) => format!("{ns}/{name}"),
                None => name,
            };
            out.push(format!("{path} ({id})"));
        }
    }
    out
}

/// Output format of `kiln show`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ShowFormat {
    #[default]
    Yaml,
    Json,
}

/// load + validate.
pub fn load_platform(platform_dir: &Path, root: Option<&Path>) -> Result<Platform, KilnError> {
    let opts = LoadOptions {
        root: root.map(Path::to_path_buf),
    };
    let loaded = load(&RealFs, platform_dir, &opts).map_err(KilnError::Load)?;
    validate(loaded).map_err(KilnError::Validate)
}

/// load + validate + evaluate.
pub fn plan(
    platform_dir: &Path,
    root: Option<&Path>,
    selection: &Selection,
) -> Result<(Platform, Vec<BuildPlan>), KilnError> {
    let platform = load_platform(platform_dir, root)?;
    let plans = evaluate(&platform, selection).map_err(KilnError::Evaluate)?;
    Ok((platform, plans))
}

/// Everything up to emit: the rendered tree in memory. `progress(done, total)` is called as
/// plans finish (from worker threads).
pub fn build_with_progress(
    opts: &RenderOptions,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> Result<(Platform, Vec<BuildPlan>, ArtifactSet), KilnError> {
    build_slice_with_progress(opts, progress).map(|s| (s.platform, s.plans, s.set))
}

/// A render of the selected slice, with what `publish`, `diff` and `verify` need besides the
/// files: the [`Scope`] the selection covers and the input files the render read.
#[derive(Debug, Clone)]
pub struct Slice {
    pub platform: Platform,
    pub plans: Vec<BuildPlan>,
    pub set: ArtifactSet,
    /// Where the selection may prune and compare (see [`Scope`] for the rule).
    pub scope: Scope,
    /// Every file load and render read: path relative to the repository root (`/`-separated;
    /// absolute when outside it) → `sha256:` of its bytes. The spec digest is taken over it.
    pub inputs: std::collections::BTreeMap<String, String>,
}

/// [`build_with_progress`], returning the [`Slice`].
pub fn build_slice_with_progress(
    opts: &RenderOptions,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> Result<Slice, KilnError> {
    let fs = RecordingFs::default();
    let load_opts = LoadOptions {
        root: opts.root.clone(),
    };
    let loaded = load(&fs, &opts.platform_dir, &load_opts).map_err(KilnError::Load)?;
    let platform = validate(loaded).map_err(KilnError::Validate)?;
    let plans = evaluate(&platform, &opts.selection).map_err(KilnError::Evaluate)?;
    let done = std::sync::atomic::AtomicUsize::new(0);
    let total = plans.len();
    let tick = || {
        progress(
            done.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1,
            total,
        )
    };
    // Every file the render reads (kustomize bases included) must lie inside the root.
    let rooted = crate::fs::RootedFs::new(&fs, platform.root.clone());
    let rendered = crate::render::render_with(&plans, &platform.sources, &rooted, &tick)
        .map_err(KilnError::Render)?;
    let mut set = emit(&rendered, opts.layout);
    let filtered = opts.selection != Selection::default();
    // Kargo and Argo CD objects are per project and always complete for the projects
    // rendered, even when the selection narrows environments or components: a Stage graph
    // cut in half would not apply. A filtered render covers exactly the projects with at
    // least one selected plan (`-c frontend` only frontend's project, `-l tier=nope` none),
    // and not the platform-wide bootstrap objects.
    let projects: Vec<String> = if filtered {
        let p: std::collections::BTreeSet<String> =
            plans.iter().map(|b| b.project.clone()).collect();
        p.into_iter().collect()
    } else {
        Vec::new()
    };
    let kargo = crate::kargo::KargoOptions {
        layout: opts.layout,
        projects,
        cluster_kinds: crate::kargo::cluster_kinds(&rendered),
    };
    let before: std::collections::BTreeSet<String> = set.paths().map(str::to_string).collect();
    if !(filtered && plans.is_empty()) {
        crate::kargo::emit_into(&mut set, "", &platform, &plans, &kargo)
            .map_err(KilnError::Kargo)?;
    }
    let scope = if filtered {
        let mut dirs: std::collections::BTreeSet<String> = rendered
            .iter()
            .map(|r| format!("{}/", crate::emit::component_dir(r, opts.layout)))
            .collect();
        dirs.extend(
            set.paths()
                .filter(|p| !before.contains(*p))
                .filter_map(|p| p.rsplit_once('/').map(|(d, _)| format!("{d}/"))),
        );
        Scope::Dirs(dirs)
    } else {
        Scope::All
    };
    if platform.secrets == crate::spec::SecretPolicy::Forbid {
        let names = secrets_in(&set);
        if !names.is_empty() {
            return Err(KilnError::SecretsForbidden { names });
        }
    }
    if let Some(dir) = &opts.schema_dir {
        let schemas = crate::check::SchemaSet::load(dir).map_err(KilnError::Schemas)?;
        let report =
            crate::check::validate_artifacts(&set, &schemas).map_err(KilnError::Schemas)?;
        if !report.is_clean() {
            return Err(KilnError::Check(Errors::new(report.findings)));
        }
    }
    let inputs = fs.inputs(&platform.root);
    Ok(Slice {
        platform,
        plans,
        set,
        scope,
        inputs,
    })
}

/// The real file system, remembering a digest of every file read, so provenance can name
/// exactly the inputs of a render (not a guess at which files matter).
#[derive(Default)]
struct RecordingFs {
    read: std::sync::Mutex<std::collections::BTreeMap<PathBuf, String>>,
}

impl RecordingFs {
    fn inputs(&self, root: &Path) -> std::collections::BTreeMap<String, String> {
        let read = self.read.lock().map(|r| r.clone()).unwrap_or_default();
        let root = RealFs
            .canonicalize(root)
            .unwrap_or_else(|_| root.to_path_buf());
        read.into_iter()
            .map(|(path, digest)| {
                let abs = RealFs.canonicalize(&path).unwrap_or(path);
                let shown = match abs.strip_prefix(&root) {
                    Ok(rel) => rel
                        .components()
                        .map(|c| c.as_os_str().to_string_lossy())
                        .collect::<Vec<_>>()
                        .join("/"),
                    Err(_) => abs.display().to_string(),
                };
                (shown, digest)
            })
            .collect()
    }
}

impl crate::fs::FileSystem for RecordingFs {
    fn read(&self, path: &Path) -> std::io::Result<Vec<u8>> {
        let bytes = RealFs.read(path)?;
        if let Ok(mut read) = self.read.lock() {
            read.insert(path.to_path_buf(), crate::git::spec_digest(&bytes));
        }
        Ok(bytes)
    }
    fn is_dir(&self, path: &Path) -> bool {
        RealFs.is_dir(path)
    }
    fn is_file(&self, path: &Path) -> bool {
        RealFs.is_file(path)
    }
    fn read_dir(&self, path: &Path) -> std::io::Result<Vec<PathBuf>> {
        RealFs.read_dir(path)
    }
    fn canonicalize(&self, path: &Path) -> std::io::Result<PathBuf> {
        RealFs.canonicalize(path)
    }
}

/// Everything up to emit, without progress reporting.
pub fn build(opts: &RenderOptions) -> Result<ArtifactSet, KilnError> {
    build_with_progress(opts, &|_, _| {}).map(|(_, _, set)| set)
}

/// `kiln render`: build, then write into `opts.write_to`.
pub fn run_render(opts: &RenderOptions) -> Result<RenderSummary, KilnError> {
    run_render_with_progress(opts, &|_, _| {})
}

/// [`run_render`] with a progress callback (see [`build_with_progress`]).
pub fn run_render_with_progress(
    opts: &RenderOptions,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> Result<RenderSummary, KilnError> {
    let Slice {
        platform,
        plans,
        set,
        scope,
        ..
    } = build_slice_with_progress(opts, progress)?;
    // Pruning a directory that holds the sources would delete them; refuse such targets.
    let sources: Vec<PathBuf> = std::iter::once(platform.dir.clone())
        .chain(platform.components.iter().map(|c| c.dir.clone()))
        .collect();
    crate::write::check_target(&opts.write_to, &platform.root, &sources)
        .map_err(KilnError::Write)?;
    // A filtered render prunes only inside its slice, so `--project web` never deletes the
    // other projects' files, and a selection that matches nothing writes nothing.
    let report = if scope.is_empty() {
        Ok(WriteReport::default())
    } else {
        write_scoped(&set, &opts.write_to, &|p| scope.contains(p))
    }
    .map_err(KilnError::Write)?;
    Ok(RenderSummary {
        plans: plans.len(),
        files: set.len(),
        report,
        expressions: crate::kargo::expressions::scan(&set),
        secrets: secrets_in(&set),
    })
}

fn format_value(value: &serde_json::Value, format: ShowFormat) -> String {
    match format {
        ShowFormat::Yaml => crate::yaml::to_yaml(value),
        ShowFormat::Json => {
            let mut s =
                serde_json::to_string_pretty(value).expect("a JSON value always serializes");
            s.push('\n');
            s
        }
    }
}

/// `kiln show platform`: the validated model (defaults filled in) as YAML or JSON.
pub fn show_platform(
    platform_dir: &Path,
    root: Option<&Path>,
    format: ShowFormat,
) -> Result<String, KilnError> {
    let platform = load_platform(platform_dir, root)?;
    let value = serde_json::to_value(&platform).expect("the model always serializes");
    Ok(format_value(&value, format))
}

/// `kiln show buildplans`: the selected BuildPlans as a YAML or JSON list.
pub fn show_buildplans(
    platform_dir: &Path,
    root: Option<&Path>,
    selection: &Selection,
    format: ShowFormat,
) -> Result<String, KilnError> {
    let (_, plans) = plan(platform_dir, root, selection)?;
    let value = serde_json::to_value(&plans).expect("plans always serialize");
    Ok(format_value(&value, format))
}

/// Which schema `kiln schema` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SchemaKind {
    Platform,
    Component,
}

/// `kiln schema [platform|component]`: the JSON Schema(s), as committed under `schema/`. Both
/// kinds: a JSON object `{"platform": …, "component": …}`.
pub fn schema(kind: Option<SchemaKind>) -> String {
    match kind {
        Some(SchemaKind::Platform) => crate::spec::schema_text(&crate::spec::platform_schema()),
        Some(SchemaKind::Component) => crate::spec::schema_text(&crate::spec::component_schema()),
        None => crate::spec::schema_text(&serde_json::json!({
            "platform": crate::spec::platform_schema(),
            "component": crate::spec::component_schema(),
        })),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::validate::tests::{COMPONENT, ENVS, PROJECTS, platform_yaml, tree};

    fn fixture() -> tempfile::TempDir {
        tree(&[
            ("platforms/p/platform.yaml", &platform_yaml(ENVS, PROJECTS)),
            ("components/a/component.yaml", COMPONENT),
        ])
    }

    #[test]
    fn show_buildplans_lists_selected_plans_as_yaml_or_json() {
        let t = fixture();
        let dir = t.path().join("platforms/p");
        let sel = Selection {
            environments: vec!["prod".into()],
            ..Default::default()
        };
        let json = show_buildplans(&dir, Some(t.path()), &sel, ShowFormat::Json).unwrap();
        let v: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(v.as_array().map(Vec::len), Some(1));
        assert_eq!(v[0]["parameters"]["replicas"], 4);
        let yaml = show_buildplans(
            &dir,
            Some(t.path()),
            &Selection::default(),
            ShowFormat::Yaml,
        )
        .unwrap();
        let docs = crate::yaml::parse_one("plans", &yaml).unwrap();
        assert_eq!(docs.as_array().map(Vec::len), Some(2));
    }

    #[test]
    fn show_platform_fills_defaults() {
        let t = fixture();
        let yaml = show_platform(
            &t.path().join("platforms/p"),
            Some(t.path()),
            ShowFormat::Yaml,
        )
        .unwrap();
        let v = crate::yaml::parse_one("platform", &yaml).unwrap();
        assert_eq!(
            v["environments"][0]["namespace"],
            "${project.name}-${env.name}"
        );
        assert_eq!(v["projects"][0]["components"][0]["component"], "a");
    }

    #[test]
    fn run_render_writes_and_errors_write_nothing() {
        let t = fixture();
        let mut opts = RenderOptions::new(t.path().join("platforms/p"));
        opts.root = Some(t.path().to_path_buf());
        opts.write_to = t.path().join("out");
        let s = run_render(&opts).unwrap();
        assert_eq!((s.plans, s.files), (2, 4));
        assert!(run_render(&opts).unwrap().report.is_noop());

        opts.selection.projects = vec!["nope".into()];
        opts.write_to = t.path().join("out2");
        let err = run_render(&opts).unwrap_err();
        assert!(matches!(err, KilnError::Evaluate(_)), "{err}");
        assert_eq!(err.diagnostics().len(), 1);
        assert!(!opts.write_to.exists());
    }

    #[test]
    fn schema_prints_one_or_both_kinds() {
        let p: serde_json::Value =
            serde_json::from_str(&schema(Some(SchemaKind::Platform))).unwrap();
        assert_eq!(p["title"], "kiln Platform");
        let both: serde_json::Value = serde_json::from_str(&schema(None)).unwrap();
        assert_eq!(both["component"]["title"], "kiln Component");
    }
}
