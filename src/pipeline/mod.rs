//! The pipeline end to end, as the CLI (and tests) call it: load → validate → evaluate →
//! render → emit → write, each stage's errors wrapped in one [`KilnError`].
//!
//! `kiln render` is [`run_render`], `kiln show platform|buildplans` are [`show_platform`] and
//! [`show_buildplans`], `kiln schema` is [`schema`]. [`build`] stops before `write` and returns
//! the [`ArtifactSet`], for `diff`, `verify`, `publish` and the golden tests.
//!
//! Each stage has one entry, its variants in its options: [`load`] (`LoadOptions`: a subset
//! of components, the journal's per-component recording), [`crate::render::render`] (each
//! plan through the render cache and emitted on its worker), [`emit`] (component
//! directories, Kargo and Argo CD together) and [`write()`] (`WriteOptions`: the slice, what
//! the last write left). The full render, the incremental one and `kiln merge` all call
//! them.
//!
//! This file is the stage chain, the page to read first. Beside it: `incremental` (the
//! render journal, and the incremental render that re-renders only what changed), `shard`
//! (`--shard I/N` and `kiln merge`) and `show` (`kiln show`, `kiln schema`); the render cache
//! itself is [`crate::cache`].
//!
//! Invariant: only [`run_render`] writes, and only after every earlier stage succeeded, so on
//! any error the previous output is left exactly as it was.

use crate::artifact::{ArtifactSet, Scope};
use crate::cache::Replayed;
use crate::diag::{Errors, Repeated};
use crate::emit::{Layout, emit, emit_each, emit_plan};
use crate::evaluate::{BuildPlan, EvaluateError, Selection, evaluate};
use crate::load::{FileSystem, LoadError, LoadOptions, RealFs, load};
use crate::render::RenderError;
use crate::validate::{Platform, ValidateError, validate};
use crate::write::{WriteError, WriteOptions, WriteReport, write};
use miette::Diagnostic;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};
use thiserror::Error;

mod incremental;
mod retain;
mod shard;
mod show;
mod stream;

use incremental::*;
pub use shard::*;
pub use show::*;
use stream::Stream;

/// Any error of the pipeline: the stage that stopped it, with every error that stage found.
/// Renders through miette with each error's file, line and help.
#[derive(Debug, Error, Diagnostic)]
pub enum KilnError {
    #[error(transparent)]
    #[diagnostic(transparent)]
    Source(crate::source::SourceStageError),
    #[error(transparent)]
    #[diagnostic(transparent)]
    Load(Errors<LoadError>),
    #[error(transparent)]
    #[diagnostic(transparent)]
    Validate(Errors<ValidateError>),
    #[error(transparent)]
    #[diagnostic(transparent)]
    Evaluate(Errors<Repeated<EvaluateError>>),
    #[error(transparent)]
    #[diagnostic(transparent)]
    Render(Errors<Repeated<RenderError>>),
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
    /// Rendered objects the Kubernetes API server would refuse (`crate::conform`).
    #[error(transparent)]
    #[diagnostic(transparent)]
    Conform(Errors<Repeated<crate::conform::Finding>>),
    /// `spec.validation` cannot be used (an unknown rule, an unreadable CRD file, an
    /// unknown Kubernetes version).
    #[error("{0}")]
    #[diagnostic(
        code(kiln::k8s::validation),
        help("see `spec.validation` and `clusters[].kubeVersion` in the README")
    )]
    ConformSetup(String),
    #[error(transparent)]
    #[diagnostic(transparent)]
    Write(WriteError),
    /// `spec.secrets: forbid` and the rendered tree would hold Secrets.
    #[error("the rendered tree would hold {} Secret{}: {}", names.len(), if names.len() == 1 { "" } else { "s" }, secret_list(names))]
    #[diagnostic(
        code(kiln::emit::secret_forbidden),
        help(
            "platform.yaml sets `spec.secrets: forbid`; deliver these Secrets another way (External Secrets, Sealed Secrets), or drop the setting to render them with a warning"
        )
    )]
    SecretsForbidden { names: Vec<String> },
    #[error(transparent)]
    #[diagnostic(transparent)]
    Merge(MergeError),
}

impl KilnError {
    /// Each individual error, for printers that report them one by one.
    pub fn diagnostics(&self) -> Vec<&dyn Diagnostic> {
        fn all<E: Diagnostic>(e: &Errors<E>) -> Vec<&dyn Diagnostic> {
            e.errors.iter().map(|e| e as &dyn Diagnostic).collect()
        }
        match self {
            KilnError::Source(e) => vec![e],
            KilnError::Load(e) => all(e),
            KilnError::Validate(e) => all(e),
            KilnError::Evaluate(e) => all(e),
            KilnError::Render(e) => all(e),
            KilnError::Kargo(e) => all(e),
            KilnError::Schemas(e) => vec![e],
            KilnError::Check(e) => all(e),
            KilnError::Conform(e) => all(e),
            KilnError::ConformSetup(_) => vec![self],
            KilnError::Write(e) => vec![e],
            KilnError::Merge(e) => vec![e],
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
    /// Where every input is read from: the real disk, or a [`crate::fs::MemFs`] in tests
    /// and the fuzz harness. Only `write` touches the disk itself.
    pub fs: Arc<dyn FileSystem>,
    /// The render cache directory (`--cache-dir`, CLI default
    /// `$XDG_CACHE_HOME/kiln/<digest of the checkout's path>`); `None`: no cache
    /// (`--no-cache`, and the library's default). A directory with a symbolic link in its
    /// path is not used ([`crate::cache::check_dir`]).
    pub cache_dir: Option<PathBuf>,
    /// The file holding the key the cache's entries and journal are authenticated under
    /// (CLI default `$XDG_CACHE_HOME/kiln/key`, created on first use); never in the checkout.
    /// `None`: a key for this process only (entries of other processes are misses).
    pub cache_key: Option<PathBuf>,
    /// `--shard i/N`: render only this shard's BuildPlans.
    pub shard: Option<Shard>,
    /// Without Kargo, `kiln publish --per-environment`: the Applications track branch
    /// `<prefix><env>` (see [`crate::kargo::KargoOptions::environment_branches`]).
    pub environment_branches: Option<String>,
    /// Components in other repositories (`components[].source`): the cache, credentials,
    /// limits and `--locked`/`--offline` (issue 33, [`crate::source`]).
    pub sources: crate::source::SourceOptions,
    /// How Git sources authenticate (the CLI: `RemoteAuth::from_env`, as `kiln publish`).
    pub source_auth: crate::git::RemoteAuth,
    /// Validate the rendered objects against the Kubernetes API (`crate::conform`); on by
    /// default, `--no-validate` turns it off.
    pub validate: bool,
    /// `--strict`: a kind with no schema is an error, not a warning.
    pub strict_kinds: bool,
}

/// Wall time of each stage of one render (`kiln render --timings`). `render` is the parallel
/// phase (each BuildPlan rendered, then emitted on the same worker); `render_cpu` and
/// `emit_cpu` split it, summed over worker threads (each worker's CPU clock, so a worker
/// waiting for a core on a loaded machine adds nothing). `emit` is the rest of emit: Kargo and
/// Argo CD objects, the tree assembled, `--schema-dir` checks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Timings {
    /// The source stage (`crate::source::resolve`: fetches, and the scan of every
    /// `component.yaml` for charts and kustomize bases), and the journal's check of the last
    /// render when one is kept.
    pub source: Duration,
    /// Reading `platform.yaml` and every component (`crate::load::load`); for a render the
    /// journal skips, its check.
    pub load: Duration,
    /// Turning the loaded spec into the typed platform (`crate::validate::validate`): names,
    /// references, the environment graph.
    pub spec: Duration,
    pub evaluate: Duration,
    pub render: Duration,
    pub render_cpu: Duration,
    pub emit_cpu: Duration,
    /// The Kubernetes validation of each BuildPlan's objects on the worker that rendered
    /// it (`crate::conform::Validation::check_plan`), summed over worker threads: part of
    /// `render`.
    pub validate_cpu: Duration,
    pub emit: Duration,
    /// The end of the Kubernetes validation (`crate::conform::Validation::finish`: custom
    /// resources against every CRD, conflicts between Applications), part of `emit`.
    pub validate: Duration,
    pub write: Duration,
    /// The part of the write done while the render ran (files staged on a thread of their
    /// own while the next piece rendered), and while the Kargo and Argo CD files were
    /// generated: inside `render`'s and `emit`'s wall time, not `write`'s.
    pub write_overlapped: Duration,
}

impl Timings {
    /// The stages' wall times added up.
    pub fn total(&self) -> Duration {
        self.source + self.load + self.spec + self.evaluate + self.render + self.emit + self.write
    }
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
            fs: Arc::new(RealFs),
            cache_dir: None,
            cache_key: None,
            shard: None,
            environment_branches: None,
            sources: Default::default(),
            source_auth: Default::default(),
            validate: true,
            strict_kinds: false,
        }
    }

    /// The source stage for this render ([`crate::source::resolve`]).
    pub fn resolve_sources(&self) -> Result<crate::source::Resolved, KilnError> {
        let note = kiln_source::git::note_offered;
        let callbacks = || crate::git::remote_callbacks_noting(&self.source_auth, &note);
        crate::source::resolve(
            self.fs.as_ref(),
            &self.platform_dir,
            &self.sources,
            &callbacks,
        )
        .map_err(KilnError::Source)
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
    /// Where the time went.
    pub timings: Timings,
    /// Cache hits and misses (zero without a cache).
    pub cache: crate::cache::CacheStats,
    /// Kargo expressions (`${{ … }}`) left in rendered manifests, which reach the cluster
    /// as text ([`crate::kargo::expressions`]); printed as warnings.
    pub expressions: Vec<crate::kargo::expressions::ExpressionInManifest>,
    /// The Secrets in the rendered tree (see [`secrets_in`]), for the CLI's warning.
    pub secrets: Vec<String>,
    /// Warnings of the Kubernetes validation (`crate::conform`) and the render's (chart
    /// values no template read), one line each.
    pub validation_warnings: Vec<String>,
    /// The validation's warnings as `-o json` gives them ([`crate::conform::Finding::to_json`]).
    pub validation_findings: Vec<serde_json::Value>,
    /// `true` when the journal proved the render would change nothing and every stage was
    /// skipped ([`crate::cache::Journal`]).
    pub journal: bool,
    /// `Some(n)` when only the `n` BuildPlans whose render reads changed were rendered
    /// again, the rest of the tree reused (see [`crate::cache::Journal`]).
    pub incremental: Option<usize>,
}

/// Every `kind: Secret` document in `set`, as `file (namespace/name)`, in path order. kiln
/// never prints their values; the names are what `spec.secrets` and the warning report.
pub fn secrets_in(set: &ArtifactSet) -> Vec<String> {
    secrets_by_file(set).into_iter().map(|(_, s)| s).collect()
}

/// [`secrets_in`], each with its file. On rayon's pool, in path order; a file is parsed
/// only for its documents that hold a Secret (at 100,000 BuildPlans, parsing each whole
/// file that held one was about 3 % of a render's CPU, on one thread).
fn secrets_by_file(set: &ArtifactSet) -> Vec<(String, String)> {
    use rayon::prelude::*;
    let files: Vec<(&String, &Vec<u8>)> = set.files.iter().collect();
    files
        .par_iter()
        .map(|(path, bytes)| secrets_of_file(path, bytes))
        .collect::<Vec<_>>()
        .into_iter()
        .flatten()
        .collect()
}

/// The Secrets of one file of kiln's emitter, as [`secrets_by_file`] lists them.
fn secrets_of_file(path: &str, bytes: &[u8]) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let Ok(text) = std::str::from_utf8(bytes) else {
        return out;
    };
    // kiln's emitter writes `kind:` and the `---` between documents at the start of a line
    // (a block scalar's lines are indented): only the documents holding a top-level
    // `kind: Secret` are parsed.
    let secret = |doc: &str| doc.starts_with("kind: Secret") || doc.contains("\nkind: Secret");
    for chunk in text.split("\n---\n").filter(|d| secret(d)) {
        let Ok(docs) = crate::yaml::parse_stream(path, chunk) else {
            continue;
        };
        out.extend(docs.iter().filter_map(|doc| secret_of(path, doc)));
    }
    out
}

/// [`secrets_of_file`] of a `.gen.yaml` printed from `resources` (one document each, in
/// order), read from them instead of parsed back: 25,000 files of Secrets parsed again were
/// a fiftieth of a 10,000-component render.
fn secrets_of_resources(
    path: &str,
    resources: &[crate::resource::Resource],
) -> Vec<(String, String)> {
    resources
        .iter()
        .filter(|r| r.value.get("kind").and_then(serde_json::Value::as_str) == Some("Secret"))
        .filter_map(|r| secret_of(path, &crate::yaml::as_printed(&r.value)))
        .collect()
}

/// `(path, "path (namespace/name)")` when `doc` is a Secret.
fn secret_of(path: &str, doc: &serde_json::Value) -> Option<(String, String)> {
    if doc.get("kind").and_then(serde_json::Value::as_str) != Some("Secret") {
        return None;
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
    Some((path.to_string(), format!("{path} ({id})")))
}

/// How many Secrets a message names before it only counts the rest.
pub const SECRETS_NAMED: usize = 5;

/// The first [`SECRETS_NAMED`] of `names`, then how many more: a platform of 10,000
/// components must not print thousands of lines (`kiln render`'s warning and
/// `kiln::emit::secret_forbidden`).
pub fn secret_list(names: &[String]) -> String {
    let shown = names[..names.len().min(SECRETS_NAMED)].join(", ");
    match names.len().saturating_sub(SECRETS_NAMED) {
        0 => shown,
        more => format!("{shown} and {more} more"),
    }
}

/// load + validate.
pub fn load_platform(
    fs: &dyn FileSystem,
    platform_dir: &Path,
    root: Option<&Path>,
) -> Result<Platform, KilnError> {
    let opts = LoadOptions {
        root,
        ..Default::default()
    };
    let loaded = load(fs, platform_dir, &opts).map_err(KilnError::Load)?;
    validate(loaded).map_err(KilnError::Validate)
}

/// load + validate + evaluate.
pub fn plan(
    fs: &dyn FileSystem,
    platform_dir: &Path,
    root: Option<&Path>,
    selection: &Selection,
) -> Result<(Platform, Vec<BuildPlan>), KilnError> {
    let platform = load_platform(fs, platform_dir, root)?;
    let plans = evaluate(&platform, selection).map_err(KilnError::Evaluate)?;
    Ok((platform, plans))
}

/// What [`build`] produced.
pub struct Built {
    pub platform: Platform,
    /// The BuildPlans rendered (this shard's, with `--shard`), their render inputs released
    /// ([`BuildPlan::release_render_inputs`]): names, namespace, images and labels only.
    pub plans: Vec<BuildPlan>,
    pub set: ArtifactSet,
    /// Where the selection may prune and compare (see [`Scope`] for the rule): `render`,
    /// `publish`, `diff` and `verify` all use it.
    pub scope: Scope,
    /// Every file load and render read: path relative to the repository root (`/`-separated;
    /// absolute when outside it) → `sha256:` of its bytes. The spec digest is taken over it.
    /// Empty from a build that streams its files into the write (`kiln render`).
    pub inputs: std::collections::BTreeMap<String, String>,
    pub timings: Timings,
    pub cache: crate::cache::CacheStats,
    /// Every file-system call of load made for the platform itself, for the journal
    /// ([`crate::cache::Journal`]); the render's are each plan's, in `outputs`.
    pub load_reads: Vec<crate::cache::Read>,
    /// The calls of load made while loading each component directory, for the journal.
    pub component_reads: Vec<crate::cache::ComponentReads>,
    /// Each BuildPlan's reads and files, in plan order, for the journal.
    pub outputs: Vec<PlanOutput>,
    /// The source stage's output: the remote sources used, as locked (publish's trailers).
    pub sources: crate::source::Resolved,
    /// The render's warnings (chart values no template read) and the Kubernetes
    /// validation's (`crate::conform`), as printed and as `-o json` gives them.
    pub warnings: Vec<Replayed>,
    /// The (group, kind) of each CRD the validation had, for the journal.
    pub crd_kinds: Vec<(String, String)>,
}

/// Renders `plans` in parallel, each looked up in `cache` first and stored there when
/// rendered, and emits each on the worker that rendered it; results in plan order. Sets
/// the CPU figures of `timings`. Files are read through `fs`, pulled charts and remote
/// bases found in `fetched` (`crate::source`). Each plan's render inputs are released once it is emitted
/// ([`crate::render::render`]): what is kept is its bytes.
fn render_plans(
    plans: &mut [BuildPlan],
    sources: &crate::diag::Sources,
    (fs, fetched): (&dyn FileSystem, crate::render::Fetched),
    cache: Option<&crate::cache::Cache>,
    layout: Layout,
    progress: &(dyn Fn(usize, usize) + Sync),
    timings: &mut Timings,
) -> Result<Vec<crate::cache::Emitted>, Errors<Repeated<RenderError>>> {
    let mut pieces =
        PlanRenderer::new(sources, (fs, fetched), cache, layout, progress, plans.len());
    pieces.feed(plans);
    let done = pieces.finish(timings)?;
    Ok(done.into_iter().map(|p| p.emitted).collect())
}

/// One BuildPlan rendered and emitted: its bytes, and with validation on what validating
/// its objects kept (`crate::conform::Checked`).
struct PlanDone {
    emitted: crate::cache::Emitted,
    checked: Option<crate::conform::Checked>,
    /// What the write stream takes from its files, when the render streams into the write.
    scanned: Option<stream::Scanned>,
    /// Its provenance and reads, moved out of `emitted` and shared with its component's
    /// other plans, when the renderer keeps them so ([`PlanRenderer::retained`]).
    kept: Option<retain::Kept>,
}

/// How many BuildPlans the streamed render evaluates before it renders them
/// ([`build_fetched`], issue 38, item 8): enough for both cores to share a piece's work, few
/// enough that their unreleased render inputs (about 20 KB each) stay a few tens of MB.
const PIECE: usize = 512;

/// [`render_plans`] a piece at a time, for the streamed render: the render cache, the emit
/// on each worker, the progress and the CPU figures across every piece.
struct PlanRenderer<'a, 'w> {
    sources: &'a crate::diag::Sources,
    fs: &'a dyn FileSystem,
    cache: Option<&'a crate::cache::Cache>,
    layout: Layout,
    progress: &'a (dyn Fn(usize, usize) + Sync),
    total: usize,
    /// The Kubernetes validation, fed each plan's files on its worker (issue 38, item 8: no
    /// parsed object outlives its plan's validation).
    validation: Option<&'a crate::conform::Validation>,
    /// The write, fed each piece's files once it is rendered (issue 38, item 8).
    stream: Option<&'a mut Stream<'w>>,
    /// The last piece's files, written while the next piece renders (`stream`'s docs).
    pending: Option<stream::Piece>,
    /// What is kept of each plan to the end, shared across its component's environments
    /// (issue 38, item 8); `None`: each plan's [`crate::cache::Emitted`] keeps its own.
    retained: Option<retain::Retained>,
    done: std::sync::atomic::AtomicUsize,
    render_ns: std::sync::atomic::AtomicU64,
    emit_ns: std::sync::atomic::AtomicU64,
    validate_ns: std::sync::atomic::AtomicU64,
    rendering: crate::render::Rendering<PlanDone>,
    /// Each piece fed, as (first plan, plans evaluated by then): a piece is rendered, and
    /// its plans released, before the next plan is evaluated.
    pieces: Vec<(usize, usize)>,
}

impl<'a, 'w> PlanRenderer<'a, 'w> {
    fn new(
        sources: &'a crate::diag::Sources,
        (fs, fetched): (&'a dyn FileSystem, crate::render::Fetched),
        cache: Option<&'a crate::cache::Cache>,
        layout: Layout,
        progress: &'a (dyn Fn(usize, usize) + Sync),
        total: usize,
    ) -> Self {
        PlanRenderer {
            sources,
            fs,
            cache,
            layout,
            progress,
            total,
            validation: None,
            stream: None,
            retained: None,
            pending: None,
            done: Default::default(),
            render_ns: Default::default(),
            emit_ns: Default::default(),
            validate_ns: Default::default(),
            rendering: crate::render::Rendering::with_fetched(fetched),
            pieces: Vec::new(),
        }
    }

    fn feed(&mut self, plans: &mut [BuildPlan]) {
        use std::sync::atomic::Ordering::Relaxed;
        let first = self.pieces.last().map_or(0, |(_, end)| *end);
        self.pieces.push((first, first + plans.len()));
        // CPU time of the worker, not wall time: on a loaded machine a worker waiting for a
        // core would count its wait as the render's (issue 38: `--timings` stays truthful).
        let nanos = |t: Duration| {
            u64::try_from(thread_cpu().saturating_sub(t).as_nanos()).unwrap_or(u64::MAX)
        };
        let (cache, fs, layout, validation) = (self.cache, self.fs, self.layout, self.validation);
        let scan = self.stream.as_ref().map(|s| s.digests());
        let (done, render_ns, emit_ns) = (&self.done, &self.render_ns, &self.emit_ns);
        let validate_ns = &self.validate_ns;
        let retained = self.retained.as_ref();
        let (progress, total) = (self.progress, self.total);
        let per_plan = |plan: &BuildPlan,
                        render: &crate::render::RenderThunk|
         -> Result<PlanDone, RenderError> {
            let key = cache.map(|c| c.key(plan));
            let hit = cache.zip(key.as_deref()).and_then(|(c, k)| c.lookup(k, fs));
            let validate = |files: &[(String, Vec<u8>)], rendered| {
                let t = thread_cpu();
                let files = files.iter().map(|(p, b)| (p.as_str(), b.as_slice()));
                let checked = validation.map(|v| v.check_plan(plan, files, rendered));
                validate_ns.fetch_add(nanos(t), Relaxed);
                checked
            };
            let (mut out, checked, scanned) = match hit {
                Some(out) => {
                    let checked = validate(&out.files, None);
                    let scanned = scan.map(|digests| stream::scan(&out.files, digests, None));
                    (out, checked, scanned)
                }
                None => {
                    let t = thread_cpu();
                    let rendered = render()?;
                    render_ns.fetch_add(nanos(t), Relaxed);
                    let t = thread_cpu();
                    let out = crate::cache::Emitted {
                        key: key.clone().unwrap_or_default(),
                        files: emit_plan(&rendered, layout),
                        cluster_kinds: crate::emit::cluster_kinds(&rendered.resources),
                        provenance: crate::emit::provenance(&rendered.resources),
                        reads: rendered.reads,
                        warnings: rendered.warnings,
                    };
                    emit_ns.fetch_add(nanos(t), Relaxed);
                    // The objects are validated as they are in memory, not parsed back from
                    // the bytes just printed.
                    let resources = Some(rendered.resources.as_slice());
                    let checked = validate(&out.files, resources);
                    let scanned = scan.map(|digests| stream::scan(&out.files, digests, resources));
                    if let (Some(c), Some(k)) = (cache, &key) {
                        // A cache that cannot be written only costs time on the next run.
                        let _ = c.store(k, out.reads.clone(), &out);
                    }
                    (out, checked, scanned)
                }
            };
            let kept = retained.map(|r| r.keep(&plan.source.dir, &mut out));
            progress(done.fetch_add(1, Relaxed) + 1, total);
            Ok(PlanDone {
                emitted: out,
                checked,
                scanned,
                kept,
            })
        };
        // The last piece is written on a thread of its own while this one renders.
        let (rendering, sources) = (&mut self.rendering, self.sources);
        match (self.stream.as_deref_mut(), self.pending.take()) {
            (Some(stream), Some(piece)) => std::thread::scope(|s| {
                let writing = s.spawn(move || stream.write(piece, true));
                rendering.feed(plans, sources, fs, &per_plan);
                if let Err(panic) = writing.join() {
                    std::panic::resume_unwind(panic);
                }
            }),
            _ => rendering.feed(plans, sources, fs, &per_plan),
        }
        if self.stream.is_some()
            && let Some(piece) = self.rendering.last(plans.len())
        {
            let piece = piece.map(|d| (&mut d.emitted.files, d.scanned.take().unwrap_or_default()));
            self.pending = Some(Stream::collect(piece));
        }
    }

    /// Writes the last piece rendered, if it waits (the end of the render).
    fn flush(&mut self) {
        if let (Some(stream), Some(piece)) = (self.stream.as_deref_mut(), self.pending.take()) {
            stream.write(piece, false);
        }
    }

    /// SIGINT or SIGTERM stopped the streamed write: nothing more is rendered.
    fn stopped(&self) -> bool {
        self.stream.as_ref().is_some_and(|s| s.stopped())
    }

    fn finish(
        mut self,
        timings: &mut Timings,
    ) -> Result<Vec<PlanDone>, Errors<Repeated<RenderError>>> {
        self.flush();
        timings.render_cpu = Duration::from_nanos(self.render_ns.into_inner());
        timings.emit_cpu = Duration::from_nanos(self.emit_ns.into_inner());
        timings.validate_cpu = Duration::from_nanos(self.validate_ns.into_inner());
        self.rendering.finish()
    }
}

/// The CPU time the calling thread has used so far (`CLOCK_THREAD_CPUTIME_ID`).
fn thread_cpu() -> Duration {
    let ts = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    let secs = u64::try_from(ts.tv_sec).unwrap_or_default();
    let nanos = u32::try_from(ts.tv_nsec).unwrap_or_default();
    Duration::new(secs, nanos)
}

/// Stages 3 and 4 streamed (issue 38, item 8): the BuildPlans are evaluated a component
/// instance at a time ([`crate::evaluate::evaluate_each`]) and rendered [`PIECE`] at a time,
/// each piece's render inputs released before the next piece is evaluated, so at 100,000
/// BuildPlans their 2 GB of resolved parameters and patches are never held together. The
/// result is [`evaluate`] then [`render_plans`]: the same plans (released), the same files,
/// the same errors (evaluate's first: then nothing more is rendered). Sets `timings`'
/// evaluate and render figures.
fn evaluate_and_render(
    platform: &Platform,
    selection: &Selection,
    renderer: &mut PlanRenderer,
    timings: &mut Timings,
    piece: usize,
) -> Result<Vec<BuildPlan>, KilnError> {
    let t = Instant::now();
    let mut rendering = Duration::ZERO;
    let mut plans: Vec<BuildPlan> = Vec::new();
    // Where the piece not rendered yet starts in `plans`.
    let mut start = 0;
    // Whether SIGINT or SIGTERM stopped the streamed write: nothing more is rendered.
    let mut stopped = false;
    let mut render_piece = |plans: &mut Vec<BuildPlan>, start: &mut usize| {
        let r = Instant::now();
        renderer.feed(&mut plans[*start..]);
        *start = plans.len();
        rendering += r.elapsed();
        renderer.stopped()
    };
    crate::evaluate::evaluate_each(platform, selection, &mut |mut instance| {
        if stopped {
            return;
        }
        plans.append(&mut instance);
        if plans.len() - start >= piece {
            stopped = render_piece(&mut plans, &mut start);
        }
    })
    .map_err(KilnError::Evaluate)?;
    if start < plans.len() && !stopped {
        render_piece(&mut plans, &mut start);
    }
    timings.evaluate = t.elapsed().saturating_sub(rendering);
    timings.render = rendering;
    Ok(plans)
}

/// Everything up to write: the rendered tree in memory, with timings and cache figures
/// (`diff`, `verify`, `publish`, and [`run_render`] before it writes). `progress(done,
/// total)` is called as plans finish (from worker threads).
///
/// Each plan is rendered and emitted on its worker thread and only its bytes are kept, so
/// memory follows the size of the output, not of the resources behind it.
pub fn build(
    opts: &RenderOptions,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> Result<Built, KilnError> {
    let t = Instant::now();
    let fetched = opts.resolve_sources()?;
    build_fetched(opts, progress, fetched, t.elapsed(), None)
}

/// [`build`] after the source stage, which took `source`. With `stream` (`kiln render`),
/// each piece's files go into the write as it is rendered, and the Kargo and Argo CD files
/// as they are generated: the set returned is empty, every file is the stream's (see
/// [`stream`]).
fn build_fetched(
    opts: &RenderOptions,
    progress: &(dyn Fn(usize, usize) + Sync),
    fetched: crate::source::Resolved,
    source: Duration,
    mut stream: Option<&mut Stream>,
) -> Result<Built, KilnError> {
    let mut timings = Timings {
        source,
        ..Timings::default()
    };
    let t = Instant::now();
    // Every file read, for provenance (`Built::inputs`).
    let fs = crate::cache::Recorder::contents(opts.fs.as_ref());
    // Every call of load, for the journal (see `crate::cache::Journal`).
    let load_fs = crate::cache::Recorder::new(&fs);
    let load_opts = LoadOptions {
        root: opts.root.as_deref(),
        only: None,
        scopes: Some(&load_fs),
        sources: Some(&fetched.trees),
        parsed: Some(&fetched.parsed),
    };
    let loaded = load(&load_fs, &opts.platform_dir, &load_opts).map_err(KilnError::Load)?;
    let load_reads = load_fs.reads();
    let component_reads = load_fs.scoped_reads();
    timings.load = t.elapsed();
    let t = Instant::now();
    let platform = validate(loaded).map_err(KilnError::Validate)?;
    timings.spec = t.elapsed();
    if let Some(s) = stream.as_deref_mut() {
        s.start(&opts.write_to, &platform);
    }
    // A chart resolved anew renders anew: the pulled charts are part of every key.
    let cache = open_cache(opts).map(|c| c.with_sources(fetched.charts_digest()));
    let engines = crate::render::Fetched {
        charts: Arc::new(fetched.pulled_charts()),
        remotes: fetched.bases.clone(),
    };
    // Every file the render reads (kustomize bases included) must lie inside the root, or
    // inside the one fetched tree it names.
    let rooted = crate::fs::RootedFs::new(&fs, platform.root.clone()).with_trees(fetched.roots());
    let mut pipeline_inputs = None;
    // Shards are validated by `kiln merge`'s render of the whole, not one by one.
    let validation = (opts.validate && opts.shard.is_none())
        .then(|| crate::conform::Validation::new(&platform, opts.fs.as_ref(), opts.strict_kinds));
    let mut checked = Vec::new();
    let (plans, emitted) = match &opts.shard {
        // A shard needs every BuildPlan first: its split and the digest `kiln merge` checks
        // are taken over all of them.
        Some(shard) => {
            let t = Instant::now();
            let all_plans = evaluate(&platform, &opts.selection).map_err(KilnError::Evaluate)?;
            pipeline_inputs = Some(crate::cache::pipeline_inputs(
                SHARD_FORMAT,
                &platform,
                &all_plans,
            ));
            // Moved, not copied: the BuildPlans are the largest part of a render's memory
            // (about 20 KB each; two copies were 4 GB at 100,000 BuildPlans).
            let mut plans = shard.select(all_plans);
            timings.evaluate = t.elapsed();
            let t = Instant::now();
            let emitted = render_plans(
                &mut plans,
                &platform.sources,
                (&rooted, engines),
                cache.as_ref(),
                opts.layout,
                progress,
                &mut timings,
            )
            .map_err(KilnError::Render)?;
            timings.render = t.elapsed();
            let emitted = emitted
                .into_iter()
                .map(|mut e| {
                    let kept = retain::Kept::unshared(&mut e);
                    (e, kept)
                })
                .collect::<Vec<_>>();
            (plans, emitted)
        }
        None => {
            let total = crate::evaluate::count(&platform, &opts.selection);
            let mut renderer = PlanRenderer::new(
                &platform.sources,
                (&rooted, engines),
                cache.as_ref(),
                opts.layout,
                progress,
                total,
            );
            renderer.validation = validation.as_ref();
            // Reads are only kept for the journal, which only a streamed render stores.
            let journal = stream.as_deref().is_some_and(Stream::digests);
            renderer.retained = Some(retain::Retained::new(journal));
            renderer.stream = stream.as_deref_mut();
            let plans = evaluate_and_render(
                &platform,
                &opts.selection,
                &mut renderer,
                &mut timings,
                PIECE,
            )?;
            let done = renderer.finish(&mut timings).map_err(KilnError::Render)?;
            if let Some(e) = stream.as_deref_mut().and_then(Stream::interrupted) {
                return Err(KilnError::Write(e));
            }
            let mut emitted = Vec::with_capacity(done.len());
            for mut d in done {
                let kept = match d.kept {
                    Some(kept) => kept,
                    None => retain::Kept::unshared(&mut d.emitted),
                };
                emitted.push((d.emitted, kept));
                checked.extend(d.checked);
            }
            (plans, emitted)
        }
    };

    let t = Instant::now();
    let mut components = ArtifactSet::new();
    let mut cluster_kinds = BTreeSet::new();
    let mut outputs = Vec::with_capacity(emitted.len());
    // One line per value and place: every environment of a component says the same.
    let mut render_warnings = BTreeSet::new();
    for (plan, (e, kept)) in plans.iter().zip(emitted) {
        outputs.push(PlanOutput {
            project: plan.project.clone(),
            environment: plan.environment.clone(),
            component: plan.component.clone(),
            dir: plan.source.dir.clone(),
            key: e.key,
            facts: crate::cache::plan_facts(plan),
            images: crate::cache::plan_images(plan),
            files: e.files.iter().map(|(p, _)| p.clone()).collect(),
            cluster_kinds: e.cluster_kinds.iter().cloned().collect(),
            // Shared with the component's other plans, and empty without a journal
            // (`retain`): at 100,000 BuildPlans these were 1 GB held to the end.
            reads: kept.reads,
            provenance: kept.provenance,
            warnings: e.warnings.iter().map(Replayed::from).collect(),
            unvalidated: Vec::new(),
            cel_skipped: 0,
        });
        render_warnings.extend(e.warnings);
        cluster_kinds.extend(e.cluster_kinds);
        if stream.is_none() {
            for (path, bytes) in e.files {
                components.insert(path, bytes);
            }
        }
    }
    // Kargo and Argo CD objects are per project and always complete for the projects
    // rendered, even when the selection narrows environments or components: a Stage graph
    // cut in half would not apply. Shards carry none: `kiln merge` adds them, from the
    // cluster-scoped kinds of every shard (the Argo CD AppProject lists them).
    let set = match (opts.shard, stream.as_deref_mut()) {
        // Streamed, each piece of these files is staged as the next is generated (issue 38,
        // item 8): the set keeps none of them.
        (None, Some(stream)) => {
            let kargo = kargo_options(&plans, opts, cluster_kinds);
            let emitted =
                stream.take_pieces(|each| emit_each(&platform, &plans, kargo.as_ref(), each));
            // SIGINT or SIGTERM cut the generation short: its errors may be partial.
            if let Some(e) = stream.interrupted() {
                return Err(KilnError::Write(e));
            }
            emitted.map_err(KilnError::Kargo)?;
            components
        }
        (None, None) => emit(
            components,
            &platform,
            &plans,
            kargo_options(&plans, opts, cluster_kinds).as_ref(),
        )
        .map_err(KilnError::Kargo)?,
        (Some(shard), _) => {
            let sidecar = ShardInfo {
                format: SHARD_FORMAT.into(),
                index: shard.index,
                count: shard.count,
                platform_dir: opts.platform_dir.clone(),
                root: opts.root.clone(),
                layout: opts.layout == Layout::Cluster,
                selection: opts.selection.clone().into(),
                cluster_kinds,
                pipeline_inputs: pipeline_inputs.unwrap_or_default(),
                inputs: fs.inputs_with_trees(&platform.root, &fetched.roots()),
            };
            let mut set = emit(components, &platform, &plans, None).map_err(KilnError::Kargo)?;
            set.insert(SHARD_FILE, sidecar.to_bytes());
            set
        }
    };
    if platform.secrets == crate::spec::SecretPolicy::Forbid {
        let names: Vec<String> = match stream.as_deref() {
            Some(s) => {
                let mut all = s.secrets();
                all.extend(secrets_by_file(&set));
                all.sort_by(|a, b| a.0.cmp(&b.0));
                all.into_iter().map(|(_, s)| s).collect()
            }
            None => secrets_in(&set),
        };
        if !names.is_empty() {
            return Err(KilnError::SecretsForbidden { names });
        }
    }
    if let Some(dir) = &opts.schema_dir {
        let schemas =
            crate::check::SchemaSet::load(opts.fs.clone(), dir).map_err(KilnError::Schemas)?;
        let report =
            crate::check::validate_artifacts(&set, &schemas).map_err(KilnError::Schemas)?;
        if !report.is_clean() {
            return Err(KilnError::Check(Errors::new(report.findings)));
        }
    }
    let mut warnings: Vec<Replayed> = render_warnings.iter().map(Replayed::from).collect();
    let mut crd_kinds = Vec::new();
    if let Some(validation) = validation {
        let v = Instant::now();
        let provenance = outputs.iter().map(|o| &o.provenance[..]).collect();
        let sourcing = crate::conform::Sourcing::render(&platform, opts.fs.as_ref(), provenance);
        // A streamed file is read back where the write put it: the validation asks for the
        // few holding custom resources or conflicting objects again.
        let read_back = typed_arena::Arena::new();
        let text = |path: &str| -> Option<&[u8]> {
            if let Some(b) = set.files.get(path) {
                return Some(b.as_slice());
            }
            let bytes = stream.as_deref()?.read_back(path)?;
            Some(read_back.alloc(bytes).as_slice())
        };
        let mut report = validation
            .finish(checked, &text, &sourcing)
            .map_err(KilnError::ConformSetup)?;
        let files = outputs.iter().zip(&plans).map(|(o, p)| (&o.files, p));
        conform_errors(&report, files)?;
        // Each plan keeps its count of kinds with no schema, for an incremental render.
        for (o, counts) in outputs.iter_mut().zip(std::mem::take(&mut report.by_plan)) {
            o.unvalidated = counts.unvalidated.into_iter().collect();
            o.cel_skipped = counts.skipped_rules;
        }
        crd_kinds = std::mem::take(&mut report.crd_kinds).into_iter().collect();
        for (file, w) in report_warnings(&report) {
            // Each plan keeps the findings on its files, for an incremental render.
            let on = |o: &&mut PlanOutput| o.files.iter().any(|p| Some(p.as_str()) == file);
            if let Some(o) = outputs.iter_mut().find(on) {
                o.warnings.push(w.clone());
            }
            warnings.push(w);
        }
        timings.validate = v.elapsed();
    }
    timings.emit = t.elapsed();
    let cache = cache.map(|c| c.stats()).unwrap_or_default();
    let streamed = stream.as_deref().into_iter().flat_map(Stream::paths);
    let scope = slice_scope(streamed.chain(set.paths()), &opts.selection);
    // Resolving every read path again is a third of a second at 10,000 components: only
    // the callers that name the inputs pay for it, never `kiln render`'s streamed build.
    let inputs = match stream {
        Some(_) => std::collections::BTreeMap::new(),
        None => fs.inputs_with_trees(&platform.root, &fetched.roots()),
    };
    // Everything built: the lock may now say what this run used (never under `--locked`,
    // where it already does).
    fetched.store_lock().map_err(KilnError::Source)?;
    Ok(Built {
        platform,
        plans,
        set,
        scope,
        inputs,
        timings,
        cache,
        load_reads,
        component_reads,
        outputs,
        sources: fetched,
        warnings,
        crd_kinds,
    })
}

/// The errors of a validation `report`, one per cause (issue 38, item 10): a finding from
/// the same source (a manifest's line, a template's) on the same object and field in several
/// BuildPlans, each in its own rendered file, is reported once, naming them (`in
/// environments: dev, test, prod`). `plans` gives each BuildPlan's rendered files.
fn conform_errors<'p>(
    report: &crate::conform::Report,
    plans: impl Iterator<Item = (&'p Vec<String>, &'p BuildPlan)> + Clone,
) -> Result<(), KilnError> {
    let errors = report.errors();
    if errors.is_empty() {
        return Ok(());
    }
    let placed = errors
        .into_iter()
        .map(|f| {
            let mut on = plans.clone();
            let place = on.find(|(files, _)| files.contains(&f.file));
            let place = place.map(|(_, p)| p.place());
            (f, place)
        })
        .collect();
    let cause = |f: &crate::conform::Finding| match &f.origin {
        // The object by kind and name: its namespace is often the environment's.
        Some(o) => {
            let mut parts = f.object.split('/');
            let (kind, name) = (parts.next(), parts.next_back());
            let (pointer, message, parameter) = (&f.pointer, &f.message, &f.parameter);
            format!("{o}\0{kind:?}/{name:?}\0{pointer}\0{message}\0{parameter:?}")
        }
        // Without a source each rendered file is its own cause.
        None => f.to_string(),
    };
    let grouped = Repeated::group(placed, cause, crate::evaluate::PlanPlace::line);
    Err(KilnError::Conform(Errors::new(grouped)))
}

/// The warnings of a validation `report` as printed and as `-o json` gives them, each with
/// the rendered file it is on (`None`: the line of the kinds not validated).
fn report_warnings(report: &crate::conform::Report) -> Vec<(Option<&str>, Replayed)> {
    report
        .warnings()
        .into_iter()
        .map(|(f, line)| {
            let json = f.map(crate::conform::Finding::to_json);
            (f.map(|f| f.file.as_str()), Replayed { line, json })
        })
        .collect()
}

/// The lines and the `-o json` findings of `warnings`.
fn printed(warnings: &[Replayed]) -> (Vec<String>, Vec<serde_json::Value>) {
    let lines = warnings.iter().map(|w| w.line.clone()).collect();
    let json = warnings.iter().filter_map(|w| w.json.clone()).collect();
    (lines, json)
}

/// What one BuildPlan of a render read and wrote, for the journal
/// ([`crate::cache::PlanRecord`]).
pub struct PlanOutput {
    pub project: String,
    pub environment: String,
    pub component: String,
    pub dir: PathBuf,
    pub key: String,
    /// [`crate::cache::plan_facts`] of the BuildPlan.
    pub facts: String,
    /// [`crate::cache::plan_images`] of the BuildPlan.
    pub images: String,
    pub files: Vec<String>,
    pub cluster_kinds: Vec<(String, String)>,
    /// Empty when no journal is stored.
    pub reads: std::sync::Arc<[crate::cache::Read]>,
    /// Where each document of the plan's `.gen.yaml` came from (for validation), shared
    /// with the plans of the same component that have the same.
    pub provenance: std::sync::Arc<[Option<crate::resource::Provenance>]>,
    /// Its warnings ([`crate::cache::PlanRecord::warnings`]).
    pub warnings: Vec<Replayed>,
    /// Its objects of kinds with no schema ([`crate::cache::PlanRecord::unvalidated`]).
    pub unvalidated: Vec<(String, usize)>,
    /// Its CEL rules not evaluated ([`crate::cache::PlanRecord::cel_skipped`]).
    pub cel_skipped: usize,
}

/// The Kargo and Argo CD options of a render with `opts` whose selected BuildPlans are
/// `plans`; the Argo CD AppProject allows `cluster_kinds` (the cluster-scoped kinds the
/// render produced). `None`: no such objects (a filtered render that selected nothing).
fn kargo_options(
    plans: &[BuildPlan],
    opts: &RenderOptions,
    cluster_kinds: BTreeSet<(String, String)>,
) -> Option<crate::kargo::KargoOptions> {
    // A filtered render covers exactly the projects with at least one selected plan
    // (`-c frontend` only frontend's project, `-l tier=nope` none), and then not the
    // platform-wide bootstrap objects.
    let filtered = opts.selection != Selection::default();
    if filtered && plans.is_empty() {
        return None;
    }
    let projects: BTreeSet<String> = plans.iter().map(|b| b.project.clone()).collect();
    Some(crate::kargo::KargoOptions {
        layout: opts.layout,
        projects: if filtered {
            projects.into_iter().collect()
        } else {
            Vec::new()
        },
        cluster_kinds,
        environment_branches: opts.environment_branches.clone(),
    })
}

/// The file a shard's tree carries for `kiln merge` (listed in its ownership marker, left
/// out of the merged tree).
pub const SHARD_FILE: &str = ".kiln-shard.json";

impl From<SelectionInfo> for Selection {
    fn from(s: SelectionInfo) -> Self {
        Selection {
            projects: s.projects,
            environments: s.environments,
            components: s.components,
            labels: s.labels,
        }
    }
}

/// `kiln render`: [`build`], then write into `opts.write_to`. `progress` as for [`build`].
///
/// With a cache, the journal of the last render into the same directory decides how much
/// to do (see [`crate::cache::Journal`]): nothing when no recorded call changed and the
/// tree is as written; only the BuildPlans whose render reads or whose component's load
/// reads changed when load's calls for the platform itself all replay
/// (`render_incremental`); else everything.
pub fn run_render(
    opts: &RenderOptions,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> Result<RenderSummary, KilnError> {
    let t = Instant::now();
    let fetched = opts.resolve_sources()?;
    let source = t.elapsed();
    // The journal replays and the incremental render know nothing of fetched trees: a
    // platform with remote sources renders in full (its lock, cache and trees verified).
    let slot = journal_slot(opts).filter(|_| fetched.is_local());
    // A journal is used only when every path it names lies where this render may look.
    let root =
        crate::load::repository_root(opts.fs.as_ref(), &opts.platform_dir, opts.root.as_deref());
    let last = slot
        .as_ref()
        .and_then(|s| s.load())
        .filter(|(j, _)| root.as_ref().is_ok_and(|r| j.confined_to(r)));
    if let (Some(slot), Some((j, recorded))) = (&slot, &last)
        && let Some(changed) = j.changes(opts.fs.as_ref())
    {
        let done = if changed.is_empty() {
            replay_journal(opts, j, *recorded)?
        } else {
            render_incremental(opts, slot, j, *recorded, &changed, progress)?
        };
        if let Some(mut summary) = done {
            summary.timings.source = source;
            summary.timings.load += t.elapsed().saturating_sub(summary.timings.total());
            return Ok(summary);
        }
    }
    // The write, fed each piece's files as it is rendered (issue 38, item 8); a render the
    // `--schema-dir` checks or a shard's split need whole gives its files at the end.
    let mut known = crate::write::Known::default();
    if let Some((j, recorded)) = &last {
        known.files = j.files.iter().map(|w| (w.path.as_str(), w)).collect();
        known.recorded = Some(*recorded);
    }
    let mut stream = Stream::new(&opts.write_to, known, slot.is_some());
    let streamed = opts.schema_dir.is_none() && opts.shard.is_none();
    let Built {
        platform,
        plans,
        set,
        scope,
        mut timings,
        cache,
        load_reads,
        component_reads,
        mut outputs,
        warnings,
        crd_kinds,
        ..
    } = build_fetched(
        opts,
        progress,
        fetched,
        // The journal's check (when the last render kept one) is counted with the source
        // stage: both come before load, and neither is it.
        t.elapsed(),
        streamed.then_some(&mut stream),
    )?;
    let t = Instant::now();
    // Pruning a directory that holds the sources would delete them: such targets are
    // refused before anything is staged.
    let (spent, overlapped) = stream.spent();
    stream.start(&opts.write_to, &platform);
    stream.take_set(set);
    let files = stream.paths().count();
    let (writer, digests, secrets, expressions) = stream.end().map_err(KilnError::Write)?;
    // The journal describes the tree before this write; drop it first, so that a write
    // that fails half-way never leaves a journal the tree does not match.
    if let Some(s) = &slot {
        s.forget();
    }
    let environments = platform.environment_names();
    let report = writer
        .finish(&scope, &environments)
        .map_err(KilnError::Write)?;
    let (validation_warnings, validation_findings) = printed(&warnings);
    let summary = RenderSummary {
        plans: plans.len(),
        files,
        report,
        timings,
        cache,
        expressions,
        secrets: secrets.iter().map(|(_, s)| s.clone()).collect(),
        validation_warnings,
        validation_findings,
        journal: false,
        incremental: None,
    };
    if let (Some(slot), Some(digests)) = (&slot, &digests)
        && let Ok(files) = crate::write::written_digests(&opts.write_to, digests)
    {
        // Best effort: without a journal the next render only costs more.
        store_journal(
            slot,
            opts,
            JournalParts {
                load_reads,
                component_reads,
                root: platform.root.clone(),
                sources: source_dirs(&platform),
                plans: summary.plans,
                files,
                expressions: &summary.expressions,
                secrets,
                warnings,
                crd_kinds,
            },
            std::mem::take(&mut outputs),
        );
    }
    // The files staged between the pieces' renders are the write's time; those staged
    // while a piece rendered are counted apart (the render's wall time holds them).
    timings.render = timings.render.saturating_sub(spent);
    timings.write = t.elapsed() + spent;
    timings.write_overlapped = overlapped;
    // Freeing 10,000 components and 100,000 plans an allocation at a time held one thread
    // for most of a second after the tree was written: a thread of their own frees them
    // while the caller goes on (`kiln render` prints its summary and exits).
    std::thread::spawn(move || drop((platform, plans, outputs)));
    Ok(RenderSummary { timings, ..summary })
}

/// The directories a write may not prune over: the platform's and each component's.
fn source_dirs(platform: &Platform) -> Vec<PathBuf> {
    std::iter::once(platform.dir.clone())
        .chain(platform.components.iter().map(|c| c.dir.clone()))
        .collect()
}

/// The cache directory of `opts` when it may be used (see [`crate::cache::check_dir`]).
fn cache_dir(opts: &RenderOptions) -> Option<&Path> {
    let dir = opts.cache_dir.as_deref()?;
    crate::cache::check_dir(dir).is_ok().then_some(dir)
}

/// The render cache of `opts`, if it has a usable one.
fn open_cache(opts: &RenderOptions) -> Option<crate::cache::Cache> {
    cache_dir(opts).map(|d| {
        crate::cache::Cache::new(
            d,
            opts.layout,
            crate::cache::CacheKey::for_file(opts.cache_key.as_deref()),
        )
    })
}

/// The slice a selection covers (see [`Scope`]): everything without a filter, else the
/// directories the filtered render produced files in (its component directories and its
/// projects' Kargo and Argo CD directories).
fn slice_scope<'p>(paths: impl Iterator<Item = &'p str>, selection: &Selection) -> Scope {
    if selection == &Selection::default() {
        return Scope::All;
    }
    Scope::Dirs(
        paths
            .filter_map(|p| p.rsplit_once('/').map(|(d, _)| format!("{d}/")))
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::validate::tests::{COMPONENT, ENVS, PROJECTS, platform_yaml, tree};

    /// The fixture in memory: the pipeline reads only through the `FileSystem` it is given.
    fn mem_fixture() -> crate::fs::MemFs {
        let mut fs = crate::fs::MemFs::new();
        fs.add_file(
            "/r/platforms/p/platform.yaml",
            platform_yaml(ENVS, PROJECTS),
        )
        .add_file("/r/components/a/component.yaml", COMPONENT)
        .add_dir("/r/.git");
        fs
    }

    /// [`fixture`], its platform loaded, and where a render of it writes.
    fn loaded_fixture() -> (tempfile::TempDir, PathBuf, Platform) {
        let t = fixture();
        let platform =
            load_platform(&RealFs, &t.path().join("platforms/p"), Some(t.path())).unwrap();
        let out = t.path().join("out");
        (t, out, platform)
    }

    fn fixture() -> tempfile::TempDir {
        tree(&[
            ("platforms/p/platform.yaml", &platform_yaml(ENVS, PROJECTS)),
            ("components/a/component.yaml", COMPONENT),
        ])
    }

    #[test]
    fn show_buildplans_lists_selected_plans_as_yaml_or_json() {
        let fs = mem_fixture();
        let dir = Path::new("/r/platforms/p");
        let sel = Selection {
            environments: vec!["prod".into()],
            ..Default::default()
        };
        let json = show_buildplans(&fs, dir, None, &sel, ShowFormat::Json).unwrap();
        let v: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(v.as_array().map(Vec::len), Some(1));
        assert_eq!(v[0]["parameters"]["replicas"], 4);
        let yaml =
            show_buildplans(&fs, dir, None, &Selection::default(), ShowFormat::Yaml).unwrap();
        let docs = crate::yaml::parse_one("plans", &yaml).unwrap();
        assert_eq!(docs.as_array().map(Vec::len), Some(2));
    }

    #[test]
    fn show_platform_fills_defaults() {
        let fs = mem_fixture();
        let yaml = show_platform(&fs, Path::new("/r/platforms/p"), None, ShowFormat::Yaml).unwrap();
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
        let s = run_render(&opts, &|_, _| {}).unwrap();
        assert_eq!((s.plans, s.files), (2, 4));
        assert!(run_render(&opts, &|_, _| {}).unwrap().report.is_noop());

        opts.selection.projects = vec!["nope".into()];
        opts.write_to = t.path().join("out2");
        let err = run_render(&opts, &|_, _| {}).unwrap_err();
        assert!(matches!(err, KilnError::Evaluate(_)), "{err}");
        assert_eq!(err.diagnostics().len(), 1);
        assert!(!opts.write_to.exists());
    }

    #[test]
    fn a_build_keeps_no_render_inputs_of_the_plans_it_rendered() {
        // At 100,000 BuildPlans their parameters, generators and transformers were 2 GB,
        // kept until the end of the write.
        let fs = mem_fixture();
        let mut opts = RenderOptions::new("/r/platforms/p");
        opts.fs = Arc::new(fs.clone());
        let (_, evaluated) = plan(&fs, &opts.platform_dir, None, &Selection::default()).unwrap();
        assert!(
            evaluated
                .iter()
                .all(|p| !p.generators.is_empty() && !p.parameters.is_empty())
        );
        let b = build(&opts, &|_, _| {}).unwrap();
        assert_eq!(b.plans.len(), 2);
        for (p, e) in b.plans.iter().zip(&evaluated) {
            assert!(
                p.generators.is_empty() && p.transformers.is_empty(),
                "{}",
                p.key()
            );
            assert!(p.parameters.is_empty(), "{}", p.key());
            // What emit and the journal read afterwards stays.
            assert_eq!(
                (p.key(), &p.namespace, &p.images),
                (e.key(), &e.namespace, &e.images)
            );
        }
        assert_eq!(b.set, build(&opts, &|_, _| {}).unwrap().set);
        let cm = b
            .set
            .files
            .iter()
            .find(|(p, _)| p.ends_with("web/dev/a/a.gen.yaml"))
            .map(|(_, bytes)| String::from_utf8_lossy(bytes).into_owned())
            .unwrap();
        assert!(cm.contains("kind: ConfigMap"), "{cm}");
    }

    /// Issue 38, item 8: the BuildPlans are rendered, and their render inputs released, a
    /// piece at a time as they are evaluated, never all held at once; the result is the
    /// plans and files of evaluating every plan first, then rendering them.
    #[test]
    fn evaluation_streams_into_the_render_a_piece_at_a_time() {
        let projects =
            format!("{PROJECTS}  - name: api\n    components:\n    - path: ../../components/a\n");
        let mut fs = crate::fs::MemFs::new();
        fs.add_file(
            "/r/platforms/p/platform.yaml",
            platform_yaml(ENVS, &projects),
        )
        .add_file("/r/components/a/component.yaml", COMPONENT)
        .add_dir("/r/.git");
        let platform = load_platform(&fs, Path::new("/r/platforms/p"), None).unwrap();
        let all = Selection::default();
        let total = crate::evaluate::count(&platform, &all);
        assert_eq!(total, 4);
        let mut timings = Timings::default();
        let mut renderer = PlanRenderer::new(
            &platform.sources,
            (&fs, Default::default()),
            None,
            Layout::Service,
            &|_, _| {},
            total,
        );
        let plans = evaluate_and_render(&platform, &all, &mut renderer, &mut timings, 1).unwrap();
        // One piece per component instance (two environments each), each rendered before
        // the next instance was evaluated.
        assert_eq!(renderer.pieces, [(0, 2), (2, 4)]);
        assert!(
            plans
                .iter()
                .all(|p| p.parameters.is_empty() && p.generators.is_empty())
        );
        let streamed: Vec<crate::cache::Emitted> = renderer
            .finish(&mut timings)
            .unwrap()
            .into_iter()
            .map(|d| d.emitted)
            .collect();

        let mut evaluated = evaluate(&platform, &all).unwrap();
        let whole = render_plans(
            &mut evaluated,
            &platform.sources,
            (&fs, Default::default()),
            None,
            Layout::Service,
            &|_, _| {},
            &mut timings,
        )
        .unwrap();
        let keys = |p: &[BuildPlan]| p.iter().map(BuildPlan::key).collect::<Vec<_>>();
        assert_eq!(keys(&plans), keys(&evaluated));
        let files = |e: &[crate::cache::Emitted]| {
            e.iter().flat_map(|e| e.files.clone()).collect::<Vec<_>>()
        };
        assert_eq!(files(&streamed), files(&whole));
    }

    /// Issue 38, item 8: `kiln render` hands each piece's files to the write once the piece
    /// is rendered (staged beside the output at once), and keeps none of their bytes; the
    /// tree written is the one of the whole set.
    #[test]
    fn a_render_streams_each_piece_into_the_write() {
        let t = fixture();
        let mut opts = RenderOptions::new(t.path().join("platforms/p"));
        opts.root = Some(t.path().to_path_buf());
        opts.write_to = t.path().join("out");
        let platform = load_platform(&RealFs, &opts.platform_dir, opts.root.as_deref()).unwrap();
        let all = Selection::default();
        let mut stream = Stream::new(&opts.write_to, Default::default(), false);
        stream.start(&opts.write_to, &platform);
        let mut timings = Timings::default();
        let mut renderer = PlanRenderer::new(
            &platform.sources,
            (&RealFs, Default::default()),
            None,
            Layout::Service,
            &|_, _| {},
            crate::evaluate::count(&platform, &all),
        );
        renderer.stream = Some(&mut stream);
        evaluate_and_render(&platform, &all, &mut renderer, &mut timings, 1).unwrap();
        let done = renderer.finish(&mut timings).unwrap();
        let files: Vec<&(String, Vec<u8>)> = done.iter().flat_map(|d| &d.emitted.files).collect();
        assert_eq!(files.len(), 4);
        assert!(
            files.iter().all(|(_, bytes)| bytes.is_empty()),
            "bytes kept"
        );
        let mut paths: Vec<&str> = files.iter().map(|(p, _)| p.as_str()).collect();
        paths.sort_unstable();
        assert_eq!(stream.paths().collect::<Vec<_>>(), paths);
        // Staged before the write's end, nothing in the output yet.
        let staged = std::fs::read_dir(t.path())
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| p.to_string_lossy().contains(".kiln-stage-out-"))
            .expect("a staging directory");
        assert!(staged.join("new").join(paths[0]).is_file());
        assert!(!opts.write_to.exists());
        drop(stream);

        let s = run_render(&opts, &|_, _| {}).unwrap();
        let whole = build(&opts, &|_, _| {}).unwrap().set;
        assert_eq!(s.files, whole.len());
        for (path, bytes) in &whole.files {
            assert_eq!(
                &std::fs::read(opts.write_to.join(path)).unwrap(),
                bytes,
                "{path}"
            );
        }
    }

    /// Issue 38, item 8: a piece's files are staged while the next piece renders (on a thread
    /// of their own), not after it: once piece 2 is fed, piece 1's files are staged and piece
    /// 2's wait for piece 3 or the end of the render.
    #[test]
    fn a_piece_is_written_while_the_next_one_renders() {
        let (t, out, platform) = loaded_fixture();
        let mut plans = evaluate(&platform, &Selection::default()).unwrap();
        assert_eq!(plans.len(), 2);
        let mut stream = Stream::new(&out, Default::default(), false);
        stream.start(&out, &platform);
        let mut renderer = PlanRenderer::new(
            &platform.sources,
            (&RealFs, Default::default()),
            None,
            Layout::Service,
            &|_, _| {},
            plans.len(),
        );
        renderer.stream = Some(&mut stream);
        let staged = |path: &str| {
            std::fs::read_dir(t.path())
                .unwrap()
                .map(|e| e.unwrap().path())
                .find(|p| p.to_string_lossy().contains(".kiln-stage-out-"))
                .is_some_and(|stage| stage.join("new").join(path).is_file())
        };
        let (first, second) = plans.split_at_mut(1);
        renderer.feed(first);
        let piece1: Vec<String> = renderer
            .pending
            .as_ref()
            .unwrap()
            .paths()
            .map(String::from)
            .collect();
        assert_eq!(piece1.len(), 2);
        assert!(
            !piece1.iter().any(|p| staged(p)),
            "piece 1 is written beside piece 2"
        );
        renderer.feed(second);
        assert!(
            piece1.iter().all(|p| staged(p)),
            "piece 1 staged while piece 2 rendered"
        );
        let piece2: Vec<String> = renderer
            .pending
            .as_ref()
            .unwrap()
            .paths()
            .map(String::from)
            .collect();
        assert!(!piece2.iter().any(|p| staged(p)));
        let mut timings = Timings::default();
        renderer.finish(&mut timings).unwrap();
        assert!(
            piece2.iter().all(|p| staged(p)),
            "the last piece at the end"
        );
        let (_, overlapped) = stream.spent();
        assert!(
            overlapped > Duration::ZERO,
            "piece 1 was counted as overlapped"
        );
        assert!(!out.exists());
    }

    /// Issue 38, item 8: a streamed render hands the Kargo and Argo CD files to the write as
    /// they are generated, a piece at a time: the set it returns holds none of them (it held
    /// all 350 MB of them at 10,000 × 10), and the tree written is the whole set's.
    #[test]
    fn the_kargo_and_argocd_files_stream_into_the_write() {
        let bank = Path::new(env!("CARGO_MANIFEST_DIR")).join("platforms/bank");
        let t = tempfile::tempdir().unwrap();
        let mut opts = RenderOptions::new(&bank);
        opts.write_to = t.path().join("out");
        let whole = build(&opts, &|_, _| {}).unwrap().set;
        let kargo = |p: &str| p.contains("/kargo/") || p.contains("/argocd/");
        assert!(whole.paths().filter(|p| kargo(p)).count() > 20);

        let mut stream = Stream::new(&opts.write_to, Default::default(), false);
        let fetched = opts.resolve_sources().unwrap();
        let built = build_fetched(
            &opts,
            &|_, _| {},
            fetched,
            Duration::ZERO,
            Some(&mut stream),
        );
        let built = built.unwrap();
        assert!(
            built.set.is_empty(),
            "{:?}",
            built.set.paths().collect::<Vec<_>>()
        );
        assert_eq!(
            stream.paths().collect::<Vec<_>>(),
            whole.paths().collect::<Vec<_>>()
        );
        assert!(!opts.write_to.exists());
        drop(stream);

        run_render(&opts, &|_, _| {}).unwrap();
        for (path, bytes) in &whole.files {
            let written = std::fs::read(opts.write_to.join(path)).unwrap();
            assert_eq!(&written, bytes, "{path}");
        }
    }

    /// Issue 38, item 8: each piece of generated files is staged on a thread of its own while
    /// the next is made: once a third piece is handed over, the first is staged, before the
    /// generation ends.
    #[test]
    fn generated_pieces_are_staged_while_the_next_is_made() {
        let (t, out, platform) = loaded_fixture();
        let mut stream = Stream::new(&out, Default::default(), false);
        stream.start(&out, &platform);
        let staged = |path: &str| {
            std::fs::read_dir(t.path())
                .unwrap()
                .map(|e| e.unwrap().path())
                .find(|p| p.to_string_lossy().contains(".kiln-stage-out-"))
                .is_some_and(|stage| stage.join("new").join(path).is_file())
        };
        let path = |n: usize| format!("web/kargo/f{n}.yaml");
        let during = stream.take_pieces(|each| {
            for n in 0..3 {
                let piece = vec![(path(n), format!("n: {n}\n").into_bytes())];
                assert!(each(piece).is_continue());
            }
            staged(&path(0))
        });
        assert!(during, "the first piece staged while the third was made");
        assert!((0..3).all(|n| staged(&path(n))));
        assert_eq!(
            stream.paths().collect::<Vec<_>>(),
            (0..3).map(path).collect::<Vec<_>>()
        );
        let (_, overlapped) = stream.spent();
        assert!(overlapped > Duration::ZERO);
        assert!(!out.exists());
    }

    #[test]
    fn secrets_are_found_in_the_documents_that_hold_them() {
        let file = "# Generated by kiln from c for project p, environment e. Do not edit.\n\
            apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  x: |\n    ---\n    kind: Secret\n\
            ---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: s\n  namespace: n\n\
            ---\nkind: Secret\nmetadata:\n  name: t\n";
        let mut set = ArtifactSet::new();
        set.insert("p/e/c/c.gen.yaml", file);
        set.insert("p/e/d/d.gen.yaml", "apiVersion: v1\nkind: ConfigMap\n");
        assert_eq!(
            secrets_in(&set),
            ["p/e/c/c.gen.yaml (n/s)", "p/e/c/c.gen.yaml (t)"]
        );
    }

    #[test]
    fn secrets_read_from_rendered_resources_are_those_parsed_back_from_the_file() {
        // What a render's scan takes from the resources is what it would parse from the
        // bytes printed from them: a Secret with and without a namespace, a numeric name, a
        // ConfigMap quoting `kind: Secret`, in a `.gen.yaml` and beside it.
        let values = [
            "{apiVersion: v1, kind: ConfigMap, metadata: {name: a}, data: {x: \"---\\nkind: Secret\\n\"}}",
            "{apiVersion: v1, kind: Secret, metadata: {name: s, namespace: n}}",
            "{apiVersion: v1, kind: Secret, metadata: {name: 12}}",
            "{kind: Secret, metadata: {name: t}}",
        ];
        let resources: Vec<crate::resource::Resource> = values
            .iter()
            .map(|v| crate::resource::Resource::new(crate::yaml::parse_one("r", v).unwrap(), None))
            .collect();
        let printed: Vec<serde_json::Value> = resources.iter().map(|r| r.value.clone()).collect();
        let generated = (
            "p/e/c/c.gen.yaml".to_string(),
            crate::yaml::to_yaml_stream(&printed).into_bytes(),
        );
        let kustomization = (
            "p/e/c/kustomization.yaml".to_string(),
            b"resources:\n- c.gen.yaml\n".to_vec(),
        );
        let files = [generated, kustomization];
        let read = stream::scan(&files, false, Some(&resources));
        let parsed = stream::scan(&files, false, None);
        assert_eq!(read.secrets, parsed.secrets);
        assert_eq!(
            read.secrets
                .iter()
                .map(|(_, s)| s.as_str())
                .collect::<Vec<_>>(),
            [
                "p/e/c/c.gen.yaml (n/s)",
                "p/e/c/c.gen.yaml ()",
                "p/e/c/c.gen.yaml (t)"
            ]
        );
    }

    #[test]
    fn secret_lists_name_the_first_few_then_count() {
        let names: Vec<String> = (1..=7).map(|i| format!("s{i}")).collect();
        assert_eq!(secret_list(&names[..1]), "s1");
        assert_eq!(secret_list(&names[..5]), "s1, s2, s3, s4, s5");
        assert_eq!(secret_list(&names), "s1, s2, s3, s4, s5 and 2 more");
        let err = KilnError::SecretsForbidden { names };
        assert_eq!(
            err.to_string(),
            "the rendered tree would hold 7 Secrets: s1, s2, s3, s4, s5 and 2 more"
        );
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
