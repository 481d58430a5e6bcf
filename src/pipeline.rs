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
use crate::emit::{Layout, emit_plan};
use crate::evaluate::{BuildPlan, EvaluateError, Selection, evaluate};
use crate::load::{FileSystem, LoadError, LoadOptions, RealFs, load};
use crate::render::RenderError;
use crate::validate::{Platform, ValidateError, validate};
use crate::write::{WriteError, WriteReport, write_scoped};
use miette::Diagnostic;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};
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

/// Why `kiln merge` failed. Codes `kiln::merge::<condition>`.
#[derive(Debug, Error, Diagnostic)]
pub enum MergeError {
    /// A shard directory holds no readable ownership marker.
    #[error("`{dir}` is not a rendered shard: {reason}")]
    #[diagnostic(
        code(kiln::merge::not_a_shard),
        help("pass the directories `kiln render --shard i/N --write-to DIR` wrote")
    )]
    NotAShard { dir: String, reason: String },

    /// Two shards hold the same file with different bytes: they come from different inputs.
    #[error("`{path}` differs between shards `{first}` and `{second}`")]
    #[diagnostic(
        code(kiln::merge::conflict),
        help("render every shard from the same commit of the platform, with the same flags")
    )]
    Conflict {
        path: String,
        first: String,
        second: String,
    },

    /// The shards given are not all the shards of one render.
    #[error("the shards given are not every shard of one render (have: {have})")]
    #[diagnostic(
        code(kiln::merge::incomplete),
        help(
            "pass the output of every `kiln render --shard i/N` job, rendered with the same platform and flags"
        )
    )]
    Incomplete { have: String },

    /// The platform loaded for the Kargo and Argo CD objects is not the one the shards were
    /// rendered from.
    #[error(
        "the platform at `{platform_dir}` is not the one the shards were rendered from: its Kargo and Argo CD objects would not match their manifests"
    )]
    #[diagnostic(
        code(kiln::merge::inputs_changed),
        help(
            "run `kiln merge` in a checkout of the commit the shard jobs rendered, from the directory they ran in (the platform directory is recorded as given to `kiln render`)"
        )
    )]
    InputsChanged { platform_dir: String },
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
}

/// One of `count` deterministic, balanced parts of a render (`--shard index/count`,
/// `index` from 1, as CI systems number parallel jobs).
///
/// Every BuildPlan of one component instance goes to the same shard (its environments share
/// a kustomize build); instances are dealt, in BuildPlan order, to the shard with the fewest
/// BuildPlans so far. Shard 1 also carries the Kargo and Argo CD objects. `kiln merge` puts
/// the shards' trees back together.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    pub index: usize,
    pub count: usize,
}

impl std::str::FromStr for Shard {
    type Err = String;
    fn from_str(s: &str) -> Result<Shard, String> {
        let bad = || {
            format!("`{s}` is not a shard: write INDEX/COUNT with 1 <= INDEX <= COUNT, e.g. 2/4")
        };
        let (i, n) = s.split_once('/').ok_or_else(bad)?;
        let (index, count) = (
            i.trim().parse::<usize>().map_err(|_| bad())?,
            n.trim().parse::<usize>().map_err(|_| bad())?,
        );
        if index == 0 || index > count {
            return Err(bad());
        }
        Ok(Shard { index, count })
    }
}

impl Shard {
    /// Which of `plans` belong to this shard (see [`Shard`]).
    pub fn select(&self, plans: Vec<BuildPlan>) -> Vec<BuildPlan> {
        let mut load = vec![0usize; self.count];
        let mut owner: std::collections::BTreeMap<(String, String), usize> = Default::default();
        let mut sizes: Vec<((String, String), usize)> = Vec::new();
        for p in &plans {
            let k = (p.project.clone(), p.component.clone());
            match sizes.iter_mut().find(|(g, _)| g == &k) {
                Some((_, n)) => *n += 1,
                None => sizes.push((k, 1)),
            }
        }
        for (group, n) in sizes {
            let (least, _) = load
                .iter()
                .enumerate()
                .min_by_key(|(i, l)| (**l, *i))
                .unwrap_or((0, &0));
            load[least] += n;
            owner.insert(group, least);
        }
        plans
            .into_iter()
            .filter(|p| {
                owner.get(&(p.project.clone(), p.component.clone())) == Some(&(self.index - 1))
            })
            .collect()
    }
}

/// Wall time of each stage of one render (`kiln render --timings`). `render` is the parallel
/// phase (each BuildPlan rendered, then emitted on the same worker); `render_cpu` and
/// `emit_cpu` split it, summed over worker threads. `emit` is the rest of emit: Kargo and
/// Argo CD objects, the tree assembled, `--schema-dir` checks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Timings {
    pub load: Duration,
    pub evaluate: Duration,
    pub render: Duration,
    pub render_cpu: Duration,
    pub emit_cpu: Duration,
    pub emit: Duration,
    pub write: Duration,
}

impl Timings {
    /// The stages' wall times added up.
    pub fn total(&self) -> Duration {
        self.load + self.evaluate + self.render + self.emit + self.write
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
    /// Where the time went.
    pub timings: Timings,
    /// Cache hits and misses (zero without a cache).
    pub cache: crate::cache::CacheStats,
    /// Kargo expressions (`${{ … }}`) left in rendered manifests, which reach the cluster
    /// as text ([`crate::kargo::expressions`]); printed as warnings.
    pub expressions: Vec<crate::kargo::expressions::ExpressionInManifest>,
    /// The Secrets in the rendered tree (see [`secrets_in`]), for the CLI's warning.
    pub secrets: Vec<String>,
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

/// [`secrets_in`], each with its file.
fn secrets_by_file(set: &ArtifactSet) -> Vec<(String, String)> {
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
            out.push((path.clone(), format!("{path} ({id})")));
        }
    }
    out
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

/// Output format of `kiln show`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ShowFormat {
    #[default]
    Yaml,
    Json,
}

/// load + validate.
pub fn load_platform(
    fs: &dyn FileSystem,
    platform_dir: &Path,
    root: Option<&Path>,
) -> Result<Platform, KilnError> {
    let opts = LoadOptions {
        root: root.map(Path::to_path_buf),
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

/// What [`build_timed`] produced.
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
    pub inputs: std::collections::BTreeMap<String, String>,
    pub timings: Timings,
    pub cache: crate::cache::CacheStats,
    /// Every file-system call of load made for the platform itself, and of the render
    /// (cache hits included), for the journal ([`crate::cache::Journal`]).
    pub reads: (Vec<crate::cache::Read>, Vec<crate::cache::Read>),
    /// The calls of load made while loading each component directory, for the journal.
    pub component_reads: Vec<crate::cache::ComponentReads>,
    /// Each BuildPlan's reads and files, in plan order, for the journal.
    pub outputs: Vec<PlanOutput>,
}

/// A file system remembering a digest of every file read through it, so provenance can name
/// exactly the inputs of a render (not a guess at which files matter).
#[derive(Debug)]
struct RecordingFs<'a> {
    inner: &'a dyn FileSystem,
    read: std::sync::Mutex<std::collections::BTreeMap<PathBuf, String>>,
}

impl<'a> RecordingFs<'a> {
    fn new(inner: &'a dyn FileSystem) -> Self {
        RecordingFs {
            inner,
            read: Default::default(),
        }
    }

    fn inputs(&self, root: &Path) -> std::collections::BTreeMap<String, String> {
        let read = self.read.lock().map(|r| r.clone()).unwrap_or_default();
        let root = self
            .inner
            .canonicalize(root)
            .unwrap_or_else(|_| root.to_path_buf());
        // Resolved as the render's reads were checked: each directory once.
        let resolve = crate::fs::RootedFs::new(self.inner, root.clone());
        read.into_iter()
            .map(|(path, digest)| {
                let abs = resolve.canonicalize(&path).unwrap_or(path);
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

impl FileSystem for RecordingFs<'_> {
    fn read(&self, path: &Path) -> std::io::Result<Vec<u8>> {
        let bytes = self.inner.read(path)?;
        if let Ok(mut read) = self.read.lock() {
            read.insert(path.to_path_buf(), crate::git::spec_digest(&bytes));
        }
        Ok(bytes)
    }
    fn is_dir(&self, path: &Path) -> bool {
        self.inner.is_dir(path)
    }
    fn is_file(&self, path: &Path) -> bool {
        self.inner.is_file(path)
    }
    fn read_dir(&self, path: &Path) -> std::io::Result<Vec<PathBuf>> {
        self.inner.read_dir(path)
    }
    fn canonicalize(&self, path: &Path) -> std::io::Result<PathBuf> {
        self.inner.canonicalize(path)
    }
    // The chart loader's fast walk and bounded reads pass through (a bounded read that
    // returns the file is a read of it).
    fn plain_kind(&self, path: &Path) -> Option<crate::fs::PlainKind> {
        self.inner.plain_kind(path)
    }
    fn read_dir_kinds(
        &self,
        path: &Path,
    ) -> std::io::Result<Vec<(PathBuf, Option<crate::fs::PlainKind>)>> {
        self.inner.read_dir_kinds(path)
    }
    fn read_at_most(&self, path: &Path, max: u64) -> std::io::Result<Option<Vec<u8>>> {
        let bytes = self.inner.read_at_most(path, max)?;
        if let (Some(b), Ok(mut read)) = (&bytes, self.read.lock()) {
            read.insert(path.to_path_buf(), crate::git::spec_digest(b));
        }
        Ok(bytes)
    }
}

/// Everything up to emit: the rendered tree in memory. `progress(done, total)` is called as
/// plans finish (from worker threads).
pub fn build_with_progress(
    opts: &RenderOptions,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> Result<(Platform, Vec<BuildPlan>, ArtifactSet), KilnError> {
    build_timed(opts, progress).map(|b| (b.platform, b.plans, b.set))
}

/// Renders `plans` in parallel, each looked up in `cache` first and stored there when
/// rendered, and emits each on the worker that rendered it; results in plan order. Sets
/// the CPU figures of `timings`. Each plan's render inputs are released once it is emitted
/// ([`crate::render::render_map_releasing`]): what is kept is its bytes.
fn render_plans(
    plans: &mut [BuildPlan],
    sources: &crate::diag::Sources,
    fs: &dyn FileSystem,
    cache: Option<&crate::cache::Cache>,
    layout: Layout,
    progress: &(dyn Fn(usize, usize) + Sync),
    timings: &mut Timings,
) -> Result<Vec<crate::cache::Emitted>, Errors<RenderError>> {
    use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};
    let done = AtomicUsize::new(0);
    let (render_ns, emit_ns) = (AtomicU64::new(0), AtomicU64::new(0));
    let total = plans.len();
    let nanos = |t: Instant| u64::try_from(t.elapsed().as_nanos()).unwrap_or(u64::MAX);
    let per_plan = |plan: &BuildPlan,
                    render: &crate::render::RenderThunk|
     -> Result<crate::cache::Emitted, RenderError> {
        let key = cache.map(|c| c.key(plan));
        let hit = cache.zip(key.as_deref()).and_then(|(c, k)| c.lookup(k, fs));
        let out = match hit {
            Some(out) => out,
            None => {
                let t = Instant::now();
                let rendered = render()?;
                render_ns.fetch_add(nanos(t), Relaxed);
                let t = Instant::now();
                let out = crate::cache::Emitted {
                    key: key.clone().unwrap_or_default(),
                    files: emit_plan(&rendered, layout),
                    cluster_kinds: crate::emit::cluster_kinds(&rendered.resources),
                    reads: rendered.reads,
                };
                emit_ns.fetch_add(nanos(t), Relaxed);
                if let (Some(c), Some(k)) = (cache, &key) {
                    // A cache that cannot be written only costs time on the next run.
                    let _ = c.store(k, out.reads.clone(), &out);
                }
                out
            }
        };
        progress(done.fetch_add(1, Relaxed) + 1, total);
        Ok(out)
    };
    let emitted = crate::render::render_map_releasing(plans, sources, fs, &per_plan)?;
    timings.render_cpu = Duration::from_nanos(render_ns.load(Relaxed));
    timings.emit_cpu = Duration::from_nanos(emit_ns.load(Relaxed));
    Ok(emitted)
}

/// [`build_with_progress`], with timings and cache figures.
///
/// Each plan is rendered and emitted on its worker thread and only its bytes are kept, so
/// memory follows the size of the output, not of the resources behind it.
pub fn build_timed(
    opts: &RenderOptions,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> Result<Built, KilnError> {
    let mut timings = Timings::default();
    let t = Instant::now();
    let fs = RecordingFs::new(opts.fs.as_ref());
    let load_opts = LoadOptions {
        root: opts.root.clone(),
    };
    // Every call of load, for the journal (see `crate::cache::Journal`).
    let load_fs = crate::cache::Recorder::new(&fs);
    let loaded = crate::load::load_scoped(&load_fs, &opts.platform_dir, &load_opts, None, &|d| {
        load_fs.enter(d)
    })
    .map_err(KilnError::Load)?;
    let load_reads = load_fs.reads();
    let component_reads = load_fs.scoped_reads();
    let platform = validate(loaded).map_err(KilnError::Validate)?;
    timings.load = t.elapsed();
    let t = Instant::now();
    let all_plans = evaluate(&platform, &opts.selection).map_err(KilnError::Evaluate)?;
    let pipeline_inputs = opts
        .shard
        .map(|_| crate::cache::pipeline_inputs(SHARD_FORMAT, &platform, &all_plans));
    let mut plans = match &opts.shard {
        // Moved, not copied: the BuildPlans are the largest part of a render's memory
        // (about 20 KB each; two copies were 4 GB at 100,000 BuildPlans).
        Some(shard) => shard.select(all_plans),
        None => all_plans,
    };
    timings.evaluate = t.elapsed();

    let t = Instant::now();
    let cache = open_cache(opts);
    // Every file the render reads (kustomize bases included) must lie inside the root.
    let rooted = crate::fs::RootedFs::new(&fs, platform.root.clone());
    let emitted = render_plans(
        &mut plans,
        &platform.sources,
        &rooted,
        cache.as_ref(),
        opts.layout,
        progress,
        &mut timings,
    )
    .map_err(KilnError::Render)?;
    timings.render = t.elapsed();

    let t = Instant::now();
    let mut set = ArtifactSet::new();
    let mut cluster_kinds = BTreeSet::new();
    let mut render_reads = BTreeSet::new();
    let mut outputs = Vec::with_capacity(emitted.len());
    for (plan, e) in plans.iter().zip(emitted) {
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
            reads: e.reads.clone(),
        });
        cluster_kinds.extend(e.cluster_kinds);
        render_reads.extend(e.reads);
        for (path, bytes) in e.files {
            set.insert(path, bytes);
        }
    }
    // Kargo and Argo CD objects are per project and always complete for the projects
    // rendered, even when the selection narrows environments or components: a Stage graph
    // cut in half would not apply. Shards carry none: `kiln merge` adds them, from the
    // cluster-scoped kinds of every shard (the Argo CD AppProject lists them).
    match opts.shard {
        None => emit_pipeline(&mut set, &platform, &plans, opts, cluster_kinds)?,
        Some(shard) => {
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
            };
            set.insert(SHARD_FILE, sidecar.to_bytes());
        }
    }
    if platform.secrets == crate::spec::SecretPolicy::Forbid {
        let names = secrets_in(&set);
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
    timings.emit = t.elapsed();
    let cache = cache.map(|c| c.stats()).unwrap_or_default();
    let scope = slice_scope(&set, &opts.selection);
    let inputs = fs.inputs(&platform.root);
    Ok(Built {
        platform,
        plans,
        set,
        scope,
        inputs,
        timings,
        cache,
        reads: (load_reads, render_reads.into_iter().collect()),
        component_reads,
        outputs,
    })
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
    pub reads: Vec<crate::cache::Read>,
}

/// Adds the Kargo and Argo CD objects of the projects `opts` selects to `set`; the Argo CD
/// AppProject allows `cluster_kinds` (the cluster-scoped kinds the render produced).
fn emit_pipeline(
    set: &mut ArtifactSet,
    platform: &Platform,
    plans: &[BuildPlan],
    opts: &RenderOptions,
    cluster_kinds: BTreeSet<(String, String)>,
) -> Result<(), KilnError> {
    // A filtered render covers exactly the projects with at least one selected plan
    // (`-c frontend` only frontend's project, `-l tier=nope` none), and then not the
    // platform-wide bootstrap objects.
    let filtered = opts.selection != Selection::default();
    if filtered && plans.is_empty() {
        return Ok(());
    }
    let projects: BTreeSet<String> = plans.iter().map(|b| b.project.clone()).collect();
    let kargo = crate::kargo::KargoOptions {
        layout: opts.layout,
        projects: if filtered {
            projects.into_iter().collect()
        } else {
            Vec::new()
        },
        cluster_kinds,
        environment_branches: opts.environment_branches.clone(),
    };
    crate::kargo::emit_into(set, "", platform, plans, &kargo).map_err(KilnError::Kargo)
}

/// The file a shard's tree carries for `kiln merge` (listed in its ownership marker, left
/// out of the merged tree).
pub const SHARD_FILE: &str = ".kiln-shard.json";
const SHARD_FORMAT: &str = "kiln.shard/v2";

/// What `kiln merge` needs from each shard to finish the render: which shard it is, the
/// options it was rendered with, and the cluster-scoped kinds it produced.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct ShardInfo {
    format: String,
    index: usize,
    count: usize,
    platform_dir: PathBuf,
    root: Option<PathBuf>,
    /// `true` for the cluster layout.
    layout: bool,
    selection: SelectionInfo,
    cluster_kinds: BTreeSet<(String, String)>,
    /// [`crate::cache::pipeline_inputs`] of the render the shard belongs to.
    pipeline_inputs: String,
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
struct SelectionInfo {
    projects: Vec<String>,
    environments: Vec<String>,
    components: Vec<String>,
    labels: Vec<String>,
}

impl From<Selection> for SelectionInfo {
    fn from(s: Selection) -> Self {
        SelectionInfo {
            projects: s.projects,
            environments: s.environments,
            components: s.components,
            labels: s.labels,
        }
    }
}

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

impl ShardInfo {
    fn to_bytes(&self) -> Vec<u8> {
        let mut b = serde_json::to_vec_pretty(self).expect("a shard record always serializes");
        b.push(b'\n');
        b
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
///
/// With a cache, the journal of the last render into the same directory decides how much
/// to do (see [`crate::cache::Journal`]): nothing when no recorded call changed and the
/// tree is as written; only the BuildPlans whose render reads or whose component's load
/// reads changed when load's calls for the platform itself all replay
/// (`render_incremental`); else everything.
pub fn run_render_with_progress(
    opts: &RenderOptions,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> Result<RenderSummary, KilnError> {
    let t = Instant::now();
    let slot = journal_slot(opts);
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
            summary.timings.load += t.elapsed().saturating_sub(summary.timings.total());
            return Ok(summary);
        }
    }
    let Built {
        platform,
        plans,
        set,
        scope,
        mut timings,
        cache,
        reads: (load_reads, _),
        component_reads,
        outputs,
        ..
    } = build_timed(opts, progress)?;
    let t = Instant::now();
    // Pruning a directory that holds the sources would delete them; refuse such targets.
    let sources: Vec<PathBuf> = std::iter::once(platform.dir.clone())
        .chain(platform.components.iter().map(|c| c.dir.clone()))
        .collect();
    crate::write::check_target(&opts.write_to, &platform.root, &sources)
        .map_err(KilnError::Write)?;
    let digests: std::collections::BTreeMap<String, String> = {
        use rayon::prelude::*;
        set.files
            .par_iter()
            .map(|(p, b)| (p.clone(), kiln_base::digest::sha256_hex(b)))
            .collect()
    };
    let mut known = crate::write::Known {
        digests: Some(&digests),
        ..Default::default()
    };
    if let Some((j, recorded)) = &last {
        known.files = j.files.iter().map(|w| (w.path.as_str(), w)).collect();
        known.recorded = Some(*recorded);
    }
    // The journal describes the tree before this write; drop it first, so that a write
    // that fails half-way never leaves a journal the tree does not match.
    if let Some(s) = &slot {
        s.forget();
    }
    let report = if scope.is_empty() {
        WriteReport::default()
    } else {
        crate::write::write_known(&set, &opts.write_to, &|p| scope.contains(p), &known)
            .map_err(KilnError::Write)?
    };
    let secrets = secrets_by_file(&set);
    let summary = RenderSummary {
        plans: plans.len(),
        files: set.len(),
        report,
        timings,
        cache,
        expressions: crate::kargo::expressions::scan(&set),
        secrets: secrets.iter().map(|(_, s)| s.clone()).collect(),
        journal: false,
        incremental: None,
    };
    if let Some(slot) = &slot
        && let Ok(files) = crate::write::written(&set, &opts.write_to, &digests)
    {
        // Best effort: without a journal the next render only costs more.
        store_journal(
            slot,
            opts,
            JournalParts {
                load_reads,
                component_reads,
                root: platform.root.clone(),
                sources,
                plans: summary.plans,
                files,
                expressions: &summary.expressions,
                secrets,
            },
            outputs,
        );
    }
    timings.write = t.elapsed();
    Ok(RenderSummary { timings, ..summary })
}

/// What a journal holds besides its plan records.
struct JournalParts<'a> {
    load_reads: Vec<crate::cache::Read>,
    component_reads: Vec<crate::cache::ComponentReads>,
    root: PathBuf,
    sources: Vec<PathBuf>,
    plans: usize,
    /// In path order.
    files: Vec<crate::write::Written>,
    expressions: &'a [crate::kargo::expressions::ExpressionInManifest],
    secrets: Vec<(String, String)>,
}

/// Writes the journal of a render whose tree is now in `opts.write_to`: `outputs` become
/// its plan records, their reads one sorted list the records index into. Best effort.
fn store_journal(
    slot: &crate::cache::JournalSlot,
    opts: &RenderOptions,
    parts: JournalParts,
    outputs: Vec<PlanOutput>,
) {
    let mut render_reads: Vec<crate::cache::Read> = outputs
        .iter()
        .flat_map(|o| o.reads.iter().cloned())
        .collect();
    render_reads.sort();
    render_reads.dedup();
    let index = |v: Result<usize, usize>| v.ok().and_then(|i| u32::try_from(i).ok());
    let mut records = Vec::with_capacity(outputs.len());
    for o in outputs {
        let reads: Option<Vec<u32>> = o
            .reads
            .iter()
            .map(|r| index(render_reads.binary_search(r)))
            .collect();
        let files: Option<Vec<u32>> = o
            .files
            .iter()
            .map(|p| index(parts.files.binary_search_by(|w| w.path.as_str().cmp(p))))
            .collect();
        let (Some(reads), Some(files)) = (reads, files) else {
            // A plan file missing from the tree (a selection wrote nothing): no journal.
            return;
        };
        records.push(crate::cache::PlanRecord {
            project: o.project,
            environment: o.environment,
            component: o.component,
            dir: o.dir,
            key: o.key,
            facts: o.facts,
            images: o.images,
            reads,
            files,
            cluster_kinds: o.cluster_kinds,
        });
    }
    write_journal(slot, opts, parts, render_reads, records);
}

/// Writes a journal of `parts`, `render_reads` (sorted) and `records` (indexing into it and
/// into `parts.files`). Best effort.
fn write_journal(
    slot: &crate::cache::JournalSlot,
    opts: &RenderOptions,
    parts: JournalParts,
    render_reads: Vec<crate::cache::Read>,
    records: Vec<crate::cache::PlanRecord>,
) {
    let Ok(marker) = crate::fs::read_regular(&opts.write_to.join(crate::marker::MARKER_FILE))
    else {
        return;
    };
    let _ = slot.store(crate::cache::Journal {
        key: String::new(),
        load_reads: parts.load_reads,
        component_reads: parts.component_reads,
        render_reads,
        root: parts.root,
        sources: parts.sources,
        plans: parts.plans,
        records,
        files: parts.files,
        marker: kiln_base::digest::sha256_hex(&marker),
        expressions: parts
            .expressions
            .iter()
            .map(|e| {
                [
                    e.file.clone(),
                    e.resource.clone(),
                    e.pointer.clone(),
                    e.text.clone(),
                ]
            })
            .collect(),
        secrets: parts.secrets,
    });
}

/// A render after a change that reached only some BuildPlans: load's calls for the
/// platform itself all give the same results (see [`crate::cache::Journal`]), so the
/// platform's own model is the journal's. `changes` names what did change:
/// - calls of the render of some BuildPlans (a file of a kustomize tree, a chart): those
///   BuildPlans are the journal's; each is checked to have the cache key recorded (so it
///   is the one of the full evaluation);
/// - calls of the load of some components (their `component.yaml`, a `files:` manifest, a
///   generator file): those components are loaded, validated and evaluated again, and
///   their BuildPlans must have the recorded ids (project, environment, instance: no plan
///   added or gone) and [`crate::cache::plan_facts`] (what the Kargo and Argo CD objects
///   read of them besides images), so those objects are the journal's; where their images
///   changed, the Kargo and Argo CD files of their project are generated again, from that
///   project's BuildPlans (its other components are loaded and evaluated for that, each
///   BuildPlan checked to have the recorded key), and must be the files it had.
///
/// Only the components of those BuildPlans are loaded ([`crate::load::load_scoped`]) and
/// only their BuildPlans rendered, their files replacing the ones they wrote before; the
/// rest of the tree is reused from the previous write without reading it (the write checks
/// each reused file's `stat`).
///
/// `None`, and nothing written, whenever that is not provably what a full render would
/// produce; the caller then renders in full: a component that fails to load, validate or
/// evaluate (the full render reports the error), BuildPlans that evaluate differently than
/// allowed above, cluster-scoped kinds that change (they are in the Argo CD AppProject), a
/// file path another plan also writes, a Secret under `spec.secrets: forbid`, an output
/// file changed by hand; and a component's load change under a selection or `--shard`
/// (which BuildPlans the full render would then keep is not known from a partial load).
fn render_incremental(
    opts: &RenderOptions,
    slot: &crate::cache::JournalSlot,
    j: &crate::cache::Journal,
    recorded: std::time::SystemTime,
    changes: &crate::cache::Changes,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> Result<Option<RenderSummary>, KilnError> {
    let mut timings = Timings::default();
    let reloaded = &changes.components;
    if !reloaded.is_empty() && (opts.selection != Selection::default() || opts.shard.is_some()) {
        return Ok(None);
    }
    let affected = j.affected(changes);
    if affected.is_empty() {
        return Ok(None);
    }
    let t = Instant::now();
    let fs = opts.fs.as_ref();
    // The changed components are loaded even when no plan of theirs is recorded: a full
    // render would load (and so check) them too.
    // So are all components of their projects, whose Kargo objects are generated again if
    // the images of the changed components changed (a project is a few components, so this
    // costs little even when the images did not change).
    let projects: BTreeSet<&str> = j
        .records
        .iter()
        .filter(|r| reloaded.contains(&r.dir))
        .map(|r| r.project.as_str())
        .collect();
    let only: BTreeSet<PathBuf> = affected
        .iter()
        .map(|&i| j.records[i].dir.clone())
        .chain(reloaded.iter().cloned())
        .chain(
            j.records
                .iter()
                .filter(|r| projects.contains(r.project.as_str()))
                .map(|r| r.dir.clone()),
        )
        .collect();
    let load_opts = LoadOptions {
        root: opts.root.clone(),
    };
    let load_fs = crate::cache::Recorder::new(fs);
    let Ok(loaded) = crate::load::load_scoped(
        &load_fs,
        &opts.platform_dir,
        &load_opts,
        Some(&only),
        &|d| load_fs.enter(d),
    ) else {
        return Ok(None);
    };
    let Ok(platform) = validate(loaded) else {
        return Ok(None);
    };
    timings.load = t.elapsed();
    let t = Instant::now();
    // The selection as given, less the component names (the instances left out of the
    // platform would be unknown); it only narrows what is evaluated.
    let selection = Selection {
        components: Vec::new(),
        ..opts.selection.clone()
    };
    let Ok(evaluated) = evaluate(&platform, &selection) else {
        return Ok(None);
    };
    let Some(cache) = open_cache(opts) else {
        return Ok(None);
    };
    let mut by_id: std::collections::BTreeMap<(&str, &str, &str), &BuildPlan> = Default::default();
    for p in &evaluated {
        by_id.insert((&p.project, &p.environment, &p.component), p);
    }
    let mut plans = Vec::with_capacity(affected.len());
    // Projects whose Kargo and Argo CD files are generated again.
    let mut regenerate: BTreeSet<String> = BTreeSet::new();
    let mut images_now: std::collections::BTreeMap<usize, String> = Default::default();
    for &i in &affected {
        let r = &j.records[i];
        let Some(p) = by_id.get(&(
            r.project.as_str(),
            r.environment.as_str(),
            r.component.as_str(),
        )) else {
            return Ok(None);
        };
        let same = if reloaded.contains(&r.dir) {
            if crate::cache::plan_images(p) != r.images {
                regenerate.insert(r.project.clone());
            }
            p.source.dir == r.dir && crate::cache::plan_facts(p) == r.facts
        } else {
            cache.key(p) == r.key
        };
        if !same {
            return Ok(None);
        }
        images_now.insert(i, crate::cache::plan_images(p));
        plans.push((*p).clone());
    }
    // Every BuildPlan of a reloaded component is one of the recorded ones matched above
    // (ids are unique), so none was added.
    let recorded_reloaded = affected
        .iter()
        .filter(|&&i| reloaded.contains(&j.records[i].dir))
        .count();
    let evaluated_reloaded = evaluated
        .iter()
        .filter(|p| reloaded.contains(&p.source.dir))
        .count();
    if recorded_reloaded != evaluated_reloaded {
        return Ok(None);
    }
    let Some(kargo) = regenerate_kargo(
        opts,
        j,
        &platform,
        &evaluated,
        &regenerate,
        reloaded,
        &cache,
    ) else {
        return Ok(None);
    };
    timings.evaluate = t.elapsed();

    let t = Instant::now();
    let rooted = crate::fs::RootedFs::new(fs, platform.root.clone());
    let Ok(emitted) = render_plans(
        &mut plans,
        &platform.sources,
        &rooted,
        Some(&cache),
        opts.layout,
        progress,
        &mut timings,
    ) else {
        return Ok(None);
    };
    timings.render = t.elapsed();

    let t = Instant::now();
    // Which files of the previous tree each plan owned; a file two plans wrote (the later
    // one won) cannot be split between them.
    let mut owners = vec![0u8; j.files.len()];
    for r in &j.records {
        for &f in &r.files {
            if let Some(o) = owners.get_mut(f as usize) {
                *o = o.saturating_add(1);
            }
        }
    }
    let mut old: BTreeSet<usize> = BTreeSet::new();
    for (&i, e) in affected.iter().zip(&emitted) {
        let mut before = BTreeSet::new();
        for &f in &j.records[i].files {
            let Some(w) = j.files.get(f as usize) else {
                return Ok(None);
            };
            if owners[f as usize] != 1 {
                return Ok(None);
            }
            old.insert(f as usize);
            before.insert(w.path.as_str());
        }
        // Only new contents of the same files: a plan that now writes other files (a kind
        // added or gone) goes through the full render and its pruning.
        let after: BTreeSet<&str> = e.files.iter().map(|(p, _)| p.as_str()).collect();
        if before != after {
            return Ok(None);
        }
    }
    let affected_set: BTreeSet<usize> = affected.iter().copied().collect();
    let kinds_before: BTreeSet<&(String, String)> =
        j.records.iter().flat_map(|r| &r.cluster_kinds).collect();
    let mut kinds_after: BTreeSet<&(String, String)> = j
        .records
        .iter()
        .enumerate()
        .filter(|(i, _)| !affected_set.contains(i))
        .flat_map(|(_, r)| &r.cluster_kinds)
        .collect();
    kinds_after.extend(emitted.iter().flat_map(|e| &e.cluster_kinds));
    if kinds_before != kinds_after {
        return Ok(None);
    }
    let mut fresh = ArtifactSet::new();
    for e in &emitted {
        for (path, bytes) in &e.files {
            fresh.insert(path.clone(), bytes.clone());
        }
    }
    // The regenerated Kargo and Argo CD files replace exactly the ones their projects had:
    // files no plan wrote, under the project's directory.
    let regenerated_before = j
        .files
        .iter()
        .enumerate()
        .filter(|(i, w)| {
            owners[*i] == 0
                && regenerate.iter().any(|p| {
                    w.path
                        .strip_prefix(p.as_str())
                        .is_some_and(|r| r.starts_with('/'))
                })
        })
        .count();
    if regenerated_before != kargo.len() {
        return Ok(None);
    }
    for (path, bytes) in kargo.files {
        let Ok(i) = j.files.binary_search_by(|w| w.path.as_str().cmp(&path)) else {
            return Ok(None);
        };
        if owners[i] != 0 || fresh.files.contains_key(&path) {
            return Ok(None);
        }
        old.insert(i);
        fresh.insert(path, bytes);
    }
    let mut set = ArtifactSet::new();
    let mut reused = BTreeSet::new();
    let mut digests: std::collections::BTreeMap<String, String> = Default::default();
    for (i, w) in j.files.iter().enumerate() {
        if old.contains(&i) {
            continue;
        }
        if fresh.files.contains_key(&w.path) {
            // A new file of a re-rendered plan where another plan (or Kargo) writes.
            return Ok(None);
        }
        set.insert(w.path.clone(), Vec::new());
        reused.insert(w.path.clone());
        digests.insert(w.path.clone(), w.digest.clone());
    }
    for (path, bytes) in &fresh.files {
        digests.insert(path.clone(), kiln_base::digest::sha256_hex(bytes));
        set.insert(path.clone(), bytes.clone());
    }
    let new_secrets = secrets_by_file(&fresh);
    if platform.secrets == crate::spec::SecretPolicy::Forbid && !new_secrets.is_empty() {
        return Ok(None);
    }
    // Findings of the files rewritten or removed are replaced by those of the new files.
    let replaced =
        |file: &str| fresh.files.contains_key(file) || old.iter().any(|&i| j.files[i].path == file);
    let mut secrets: Vec<(String, String)> = j
        .secrets
        .iter()
        .filter(|(f, _)| !replaced(f))
        .cloned()
        .chain(new_secrets)
        .collect();
    secrets.sort_by(|a, b| a.0.cmp(&b.0));
    let mut expressions: Vec<crate::kargo::expressions::ExpressionInManifest> = j
        .expressions
        .iter()
        .filter(|e| !replaced(&e[0]))
        .map(
            |[file, resource, pointer, text]| crate::kargo::expressions::ExpressionInManifest {
                file: file.clone(),
                resource: resource.clone(),
                pointer: pointer.clone(),
                text: text.clone(),
            },
        )
        .chain(crate::kargo::expressions::scan(&fresh))
        .collect();
    expressions.sort_by(|a, b| a.file.cmp(&b.file));
    timings.emit = t.elapsed();

    let t = Instant::now();
    crate::write::check_target(&opts.write_to, &j.root, &j.sources).map_err(KilnError::Write)?;
    let scope = slice_scope(&set, &opts.selection);
    let known = crate::write::Known {
        files: j.files.iter().map(|w| (w.path.as_str(), w)).collect(),
        recorded: Some(recorded),
        digests: Some(&digests),
        reused: Some(&reused),
    };
    slot.forget();
    let report = if scope.is_empty() {
        WriteReport::default()
    } else {
        match crate::write::write_known(&set, &opts.write_to, &|p| scope.contains(p), &known) {
            Ok(r) => r,
            Err(crate::write::WriteError::ChangedDuringRender { .. }) => return Ok(None),
            Err(e) => return Err(KilnError::Write(e)),
        }
    };
    // The journal of the new tree: the reused files' records, the new files' stamps.
    if let Ok(new_files) = crate::write::written(&fresh, &opts.write_to, &digests) {
        let mut files: Vec<crate::write::Written> = j
            .files
            .iter()
            .enumerate()
            .filter(|(i, _)| !old.contains(i))
            .map(|(_, w)| w.clone())
            .chain(new_files)
            .collect();
        files.sort_by(|a, b| a.path.cmp(&b.path));
        // The files are the recorded paths (each re-rendered plan and each regenerated
        // Kargo file wrote the files it had), so the records' file indexes still hold.
        if files.len() == j.files.len() {
            let (render_reads, records) = incremental_records(j, &affected, emitted, &images_now);
            // The reloaded components' load calls as made now; the others' as recorded.
            let mut component_reads = load_fs.scoped_reads();
            let now: BTreeSet<PathBuf> = component_reads.iter().map(|c| c.dir.clone()).collect();
            component_reads.extend(
                j.component_reads
                    .iter()
                    .filter(|c| !now.contains(&c.dir))
                    .cloned(),
            );
            component_reads.sort_by(|a, b| a.dir.cmp(&b.dir));
            write_journal(
                slot,
                opts,
                JournalParts {
                    load_reads: j.load_reads.clone(),
                    component_reads,
                    root: j.root.clone(),
                    sources: j.sources.clone(),
                    plans: j.plans,
                    files,
                    expressions: &expressions,
                    secrets: secrets.clone(),
                },
                render_reads,
                records,
            );
        }
    }
    timings.write = t.elapsed();
    Ok(Some(RenderSummary {
        plans: j.plans,
        files: set.len(),
        report,
        timings,
        cache: cache.stats(),
        expressions,
        secrets: secrets.into_iter().map(|(_, s)| s).collect(),
        journal: false,
        incremental: Some(plans.len()),
    }))
}

/// The Kargo and Argo CD files of `projects` generated again for an incremental render
/// ([`render_incremental`]) from `platform`, which holds every component of those projects,
/// and `evaluated`. Each BuildPlan of those projects must be one the journal recorded, and
/// have its recorded cache key unless its component is `reloaded` (the caller checked
/// those): so they are the BuildPlans a full render would give these objects. `None` when
/// that does not check out or generation fails (the full render reports why).
fn regenerate_kargo(
    opts: &RenderOptions,
    j: &crate::cache::Journal,
    platform: &Platform,
    evaluated: &[BuildPlan],
    projects: &BTreeSet<String>,
    reloaded: &BTreeSet<PathBuf>,
    cache: &crate::cache::Cache,
) -> Option<ArtifactSet> {
    let mut set = ArtifactSet::new();
    if projects.is_empty() {
        return Some(set);
    }
    let recorded: std::collections::BTreeMap<(&str, &str, &str), &crate::cache::PlanRecord> = j
        .records
        .iter()
        .filter(|r| projects.contains(&r.project))
        .map(|r| {
            (
                (
                    r.project.as_str(),
                    r.environment.as_str(),
                    r.component.as_str(),
                ),
                r,
            )
        })
        .collect();
    let plans: Vec<BuildPlan> = evaluated
        .iter()
        .filter(|p| projects.contains(&p.project))
        .cloned()
        .collect();
    if plans.len() != recorded.len() {
        return None;
    }
    for p in &plans {
        let r = recorded.get(&(
            p.project.as_str(),
            p.environment.as_str(),
            p.component.as_str(),
        ))?;
        if r.dir != p.source.dir || (!reloaded.contains(&r.dir) && cache.key(p) != r.key) {
            return None;
        }
    }
    let kargo = crate::kargo::KargoOptions {
        layout: opts.layout,
        projects: projects.iter().cloned().collect(),
        cluster_kinds: j
            .records
            .iter()
            .flat_map(|r| r.cluster_kinds.iter().cloned())
            .collect(),
        environment_branches: opts.environment_branches.clone(),
    };
    crate::kargo::emit_into(&mut set, "", platform, &plans, &kargo).ok()?;
    Some(set)
}

/// The render reads and plan records of the journal after an incremental render: the
/// recorded ones, with the `affected` plans' (in order, `emitted` for each) replaced. The
/// recorded reads list is kept and merged with the new reads, its indexes remapped, rather
/// than rebuilt from every plan's reads: that rebuild (100,000 reads cloned, sorted and
/// looked up at 10,000 BuildPlans) cost more than the rest of an incremental render.
/// Reads no record uses any more are dropped, so replaying the journal checks only live ones.
fn incremental_records(
    j: &crate::cache::Journal,
    affected: &[usize],
    emitted: Vec<crate::cache::Emitted>,
    images_now: &std::collections::BTreeMap<usize, String>,
) -> (Vec<crate::cache::Read>, Vec<crate::cache::PlanRecord>) {
    use crate::cache::Read;
    let is_affected: BTreeSet<usize> = affected.iter().copied().collect();
    let mut used = vec![false; j.render_reads.len()];
    for (i, r) in j.records.iter().enumerate() {
        if !is_affected.contains(&i) {
            for &k in &r.reads {
                if let Some(u) = used.get_mut(k as usize) {
                    *u = true;
                }
            }
        }
    }
    let mut extra: Vec<Read> = Vec::new();
    for e in &emitted {
        for r in &e.reads {
            match j.render_reads.binary_search(r) {
                Ok(k) => used[k] = true,
                Err(_) => extra.push(r.clone()),
            }
        }
    }
    extra.sort();
    extra.dedup();
    // Merge the used recorded reads and the new ones, both sorted.
    let (mut old_at, mut extra_at) = (vec![u32::MAX; used.len()], vec![0u32; extra.len()]);
    let mut merged: Vec<Read> = Vec::with_capacity(used.len() + extra.len());
    let (mut a, mut b) = (0, 0);
    let index = |v: &Vec<Read>| u32::try_from(v.len()).unwrap_or(u32::MAX);
    loop {
        while a < used.len() && !used[a] {
            a += 1;
        }
        let take_old = match (j.render_reads.get(a), extra.get(b)) {
            (Some(o), Some(n)) => o < n,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (None, None) => break,
        };
        if take_old {
            old_at[a] = index(&merged);
            merged.push(j.render_reads[a].clone());
            a += 1;
        } else {
            extra_at[b] = index(&merged);
            merged.push(extra[b].clone());
            b += 1;
        }
    }
    let at = |r: &Read| match j.render_reads.binary_search(r) {
        Ok(k) => old_at[k],
        Err(_) => extra.binary_search(r).map_or(u32::MAX, |x| extra_at[x]),
    };
    let mut emitted = emitted.into_iter();
    let records = j
        .records
        .iter()
        .enumerate()
        .map(|(i, r)| {
            if !is_affected.contains(&i) {
                return crate::cache::PlanRecord {
                    reads: r.reads.iter().map(|&k| old_at[k as usize]).collect(),
                    ..r.clone()
                };
            }
            let e = emitted.next().unwrap_or_default();
            let mut reads: Vec<u32> = e.reads.iter().map(&at).collect();
            reads.sort_unstable();
            reads.dedup();
            crate::cache::PlanRecord {
                key: e.key,
                images: images_now.get(&i).cloned().unwrap_or_default(),
                cluster_kinds: e.cluster_kinds.into_iter().collect(),
                reads,
                ..r.clone()
            }
        })
        .collect();
    (merged, records)
}

/// The journal of a render with `opts` (see [`crate::cache::Journal`]): only with a cache,
/// and not with `--schema-dir` (its schemas are read outside the recorded calls).
fn journal_slot(opts: &RenderOptions) -> Option<crate::cache::JournalSlot> {
    let dir = cache_dir(opts)?;
    if opts.schema_dir.is_some() {
        return None;
    }
    let out = crate::write::resolved_target(&opts.write_to)?;
    // Every option that can change the output.
    let options = format!(
        "{:?}\n{:?}\n{:?}\n{:?}\n{:?}\n{:?}",
        opts.fs.canonicalize(&opts.platform_dir).ok()?,
        opts.root,
        opts.layout,
        opts.selection,
        opts.shard,
        opts.environment_branches
    );
    Some(crate::cache::JournalSlot::new(
        dir,
        &options,
        &out,
        crate::cache::CacheKey::for_file(opts.cache_key.as_deref()),
    ))
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

/// The summary of a render skipped because the journal proves it would change nothing:
/// every recorded call gives the same result (checked by the caller), and the tree on disk
/// is the one recorded.
/// `None`: render in full.
fn replay_journal(
    opts: &RenderOptions,
    j: &crate::cache::Journal,
    recorded: std::time::SystemTime,
) -> Result<Option<RenderSummary>, KilnError> {
    crate::write::check_target(&opts.write_to, &j.root, &j.sources).map_err(KilnError::Write)?;
    if !crate::write::verify_unchanged(&opts.write_to, &j.files, &j.marker, recorded) {
        return Ok(None);
    }
    Ok(Some(RenderSummary {
        plans: j.plans,
        files: j.files.len(),
        report: WriteReport {
            unchanged: j.files.iter().map(|w| w.path.clone()).collect(),
            ..Default::default()
        },
        timings: Timings::default(),
        cache: Default::default(),
        expressions: j
            .expressions
            .iter()
            .map(|[file, resource, pointer, text]| {
                crate::kargo::expressions::ExpressionInManifest {
                    file: file.clone(),
                    resource: resource.clone(),
                    pointer: pointer.clone(),
                    text: text.clone(),
                }
            })
            .collect(),
        secrets: j.secrets.iter().map(|(_, s)| s.clone()).collect(),
        journal: true,
        incremental: None,
    }))
}

/// The slice a selection covers (see [`Scope`]): everything without a filter, else the
/// directories the filtered render produced files in (its component directories and its
/// projects' Kargo and Argo CD directories).
fn slice_scope(set: &ArtifactSet, selection: &Selection) -> Scope {
    if selection == &Selection::default() {
        return Scope::All;
    }
    Scope::Dirs(
        set.paths()
            .filter_map(|p| p.rsplit_once('/').map(|(d, _)| format!("{d}/")))
            .collect(),
    )
}

/// Writes a render's tree. A partial render prunes only inside its slice, so `--project web`
/// never deletes the other projects' files, and a selection that matches nothing writes
/// nothing.
fn write_render(set: &ArtifactSet, out: &Path, scope: &Scope) -> Result<WriteReport, KilnError> {
    if scope.is_empty() {
        return Ok(WriteReport::default());
    }
    write_scoped(set, out, &|p| scope.contains(p)).map_err(KilnError::Write)
}

/// What `kiln merge` did.
#[derive(Debug, Clone)]
pub struct MergeSummary {
    /// Number of files in the merged tree.
    pub files: usize,
    pub report: WriteReport,
}

/// Reads the trees `kiln render --shard` wrote (each the files its ownership marker lists)
/// and the shard records, one per shard.
///
/// Errors: [`MergeError`] for a directory without a marker or shard record, for shards of
/// different renders, for a missing shard, and for a file two shards hold with different
/// bytes.
fn read_shards(dirs: &[PathBuf]) -> Result<(ArtifactSet, Vec<ShardInfo>), KilnError> {
    use crate::fs::FileSystem;
    let fs = RealFs;
    let mut set = ArtifactSet::new();
    let mut infos: Vec<ShardInfo> = Vec::new();
    let mut from: std::collections::BTreeMap<String, usize> = Default::default();
    for (i, dir) in dirs.iter().enumerate() {
        let not_shard = |reason: String| {
            KilnError::Merge(MergeError::NotAShard {
                dir: dir.display().to_string(),
                reason,
            })
        };
        // A shard tree is input: read without following any link (issue 39, item 4).
        let dir = &fs
            .canonicalize(dir)
            .map_err(|e| not_shard(format!("cannot open it: {e}")))?;
        let marker = crate::fs::read_beneath(&fs, dir, crate::marker::MARKER_FILE)
            .map_err(|e| not_shard(format!("cannot read {}: {e}", crate::marker::MARKER_FILE)))?;
        let marker = crate::marker::OwnedMarker::parse(&marker).map_err(|e| not_shard(e.0))?;
        let info = crate::fs::read_beneath(&fs, dir, SHARD_FILE)
            .map_err(|e| format!("cannot read {SHARD_FILE}: {e}"))
            .and_then(|b| {
                serde_json::from_slice::<ShardInfo>(&b)
                    .map_err(|e| format!("invalid {SHARD_FILE}: {e}"))
            })
            .and_then(|s| {
                (s.format == SHARD_FORMAT)
                    .then_some(s)
                    .ok_or_else(|| format!("{SHARD_FILE} is not {SHARD_FORMAT}"))
            })
            .map_err(not_shard)?;
        infos.push(info);
        for path in marker.files {
            if path == SHARD_FILE {
                continue;
            }
            crate::marker::check_rel_path(&path)
                .map_err(|e| not_shard(format!("its marker lists `{path}`: {e}")))?;
            let bytes = crate::fs::read_beneath(&fs, dir, &path)
                .map_err(|e| not_shard(format!("cannot read `{path}`: {e}")))?;
            if let Some(&j) = from.get(&path) {
                if set.files.get(&path) != Some(&bytes) {
                    return Err(KilnError::Merge(MergeError::Conflict {
                        path,
                        first: dirs[j].display().to_string(),
                        second: dir.display().to_string(),
                    }));
                }
                continue;
            }
            from.insert(path.clone(), i);
            set.insert(path, bytes);
        }
    }
    // Every shard of one render, each once.
    let first = &infos[0];
    let mut indexes: Vec<usize> = infos.iter().map(|s| s.index).collect();
    indexes.sort_unstable();
    let same_render = infos.iter().all(|s| {
        (
            &s.platform_dir,
            &s.root,
            s.layout,
            &s.selection,
            s.count,
            &s.pipeline_inputs,
        ) == (
            &first.platform_dir,
            &first.root,
            first.layout,
            &first.selection,
            first.count,
            &first.pipeline_inputs,
        )
    });
    if !same_render || indexes != (1..=first.count).collect::<Vec<_>>() {
        let have: Vec<String> = infos
            .iter()
            .map(|s| format!("{}/{}", s.index, s.count))
            .collect();
        return Err(KilnError::Merge(MergeError::Incomplete {
            have: have.join(", "),
        }));
    }
    Ok((set, infos))
}

/// `kiln merge`: the shards' trees written into `out` as one, with the Kargo and Argo CD
/// objects and one ownership marker: byte for byte what an unsharded `kiln render` writes.
/// The platform is loaded again (from the directory the shards were rendered from) for the
/// Kargo and Argo CD objects; nothing is rendered.
pub fn run_merge(dirs: &[PathBuf], out: &Path) -> Result<MergeSummary, KilnError> {
    if dirs.is_empty() {
        return Err(KilnError::Merge(MergeError::Incomplete {
            have: "none".into(),
        }));
    }
    let (mut set, infos) = read_shards(dirs)?;
    let first = &infos[0];
    let mut opts = RenderOptions::new(&first.platform_dir);
    opts.root = first.root.clone();
    opts.layout = if first.layout {
        Layout::Cluster
    } else {
        Layout::Service
    };
    opts.selection = first.selection.clone().into();
    opts.write_to = out.to_path_buf();
    let (platform, plans) = plan(
        opts.fs.as_ref(),
        &opts.platform_dir,
        opts.root.as_deref(),
        &opts.selection,
    )?;
    if crate::cache::pipeline_inputs(SHARD_FORMAT, &platform, &plans) != first.pipeline_inputs {
        return Err(KilnError::Merge(MergeError::InputsChanged {
            platform_dir: first.platform_dir.display().to_string(),
        }));
    }
    let kinds = infos.iter().flat_map(|s| s.cluster_kinds.clone()).collect();
    emit_pipeline(&mut set, &platform, &plans, &opts, kinds)?;
    let report = write_render(&set, out, &slice_scope(&set, &opts.selection))?;
    Ok(MergeSummary {
        files: set.len(),
        report,
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
    fs: &dyn FileSystem,
    platform_dir: &Path,
    root: Option<&Path>,
    format: ShowFormat,
) -> Result<String, KilnError> {
    let platform = load_platform(fs, platform_dir, root)?;
    let value = serde_json::to_value(&platform).expect("the model always serializes");
    Ok(format_value(&value, format))
}

/// `kiln show buildplans`: the selected BuildPlans as a YAML or JSON list.
pub fn show_buildplans(
    fs: &dyn FileSystem,
    platform_dir: &Path,
    root: Option<&Path>,
    selection: &Selection,
    format: ShowFormat,
) -> Result<String, KilnError> {
    let (_, plans) = plan(fs, platform_dir, root, selection)?;
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

    /// Provenance's recording file system passes the chart loader's fast walk and bounded
    /// reads through to the disk (a chart inside `kiln render` was walked the long way), and
    /// a bounded read that returns the file records it as read.
    #[test]
    fn provenance_passes_the_fast_walk_and_bounded_reads_through() {
        let t = tempfile::tempdir().unwrap();
        std::fs::create_dir(t.path().join("d")).unwrap();
        std::fs::write(t.path().join("a"), "abc").unwrap();
        std::fs::write(t.path().join("big"), "0123456789").unwrap();
        let fs = RecordingFs::new(&crate::fs::RealFs);
        let kinds: Vec<_> = fs
            .read_dir_kinds(t.path())
            .unwrap()
            .into_iter()
            .map(|(_, k)| k)
            .collect();
        use crate::fs::PlainKind::{Dir, File};
        assert_eq!(kinds, [Some(File), Some(File), Some(Dir)]);
        assert_eq!(fs.plain_kind(&t.path().join("d")), Some(Dir));
        assert_eq!(
            fs.read_at_most(&t.path().join("a"), 5).unwrap().unwrap(),
            b"abc"
        );
        assert_eq!(fs.read_at_most(&t.path().join("big"), 5).unwrap(), None);
        let inputs: Vec<String> = fs.inputs(t.path()).into_keys().collect();
        assert_eq!(inputs, ["a"]);
    }

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
        let b = build_timed(&opts, &|_, _| {}).unwrap();
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
        assert_eq!(b.set, build(&opts).unwrap());
        let cm = b
            .set
            .files
            .iter()
            .find(|(p, _)| p.ends_with("web/dev/a/a.gen.yaml"))
            .map(|(_, bytes)| String::from_utf8_lossy(bytes).into_owned())
            .unwrap();
        assert!(cm.contains("kind: ConfigMap"), "{cm}");
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
