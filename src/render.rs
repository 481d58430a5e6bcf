//! Stage 4, render: `[`[`BuildPlan`]`]` → `Vec<`[`Rendered`]`>`, the resources of each
//! component instance in each environment.
//!
//! Per plan: the generators run in order and their resources are concatenated (files read by
//! `load`, inline resources, kustomization directories built by the native engine,
//! `configMapGenerator`/`secretGenerator` entries absorbed as kustomize does); then the
//! transformers run in the order written, each one a call into `crate::kustomize`; then, as
//! `kubectl kustomize` finishes a build: the component's own images are set (see
//! [`ImageRef`]), generated ConfigMaps/Secrets get their content-hash suffix, name references
//! follow renames, and resources are put in kustomize's legacy order, which is the documented
//! order of every `.gen.yaml`.
//!
//! kiln policy, stricter than kustomize: a patch whose target matches nothing is an error, and
//! two resources with the same id in one component are an error.
//!
//! Invariant: plans render in parallel (rayon), results come back in plan order, so output does
//! not depend on scheduling. Nothing here touches the disk except kustomization directories,
//! read through the [`FileSystem`] trait.

use crate::diag::{Errors, Loc, Repeated, Sources};
use crate::evaluate::{BuildPlan, PlanPlace, PlanTransformer};
use crate::kustomize::builtins::{generators, patch_transformer, sort_order_transformer};
use crate::kustomize::filters::{imagetag, labels, nameref, namespace, prefix_suffix};
use crate::kustomize::hash;
use crate::load::FileSystem;
use crate::resource::{ChartRender, FieldSet, Origin, Provenance, Resource};
use crate::spec::{self, Generator};
use kiln_base::pointer;
use miette::{Diagnostic, NamedSource, SourceSpan};
use rayon::prelude::*;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use thiserror::Error;

/// The resources of one plan, in kustomize's legacy order, and the final reference of each
/// component image (for the emitted `kustomization.yaml`).
#[derive(Debug, Clone)]
pub struct Rendered<'p> {
    /// The plan rendered: borrowed from the render (copying it for each of 100,000 plans
    /// was a fortieth of a large render's CPU), owned once [`Rendered::into_owned`].
    pub plan: std::borrow::Cow<'p, BuildPlan>,
    pub resources: Vec<Resource>,
    pub images: Vec<ImageRef>,
    /// What the render read through the file system (kustomization trees), for the cache.
    pub reads: Vec<crate::cache::Read>,
    /// The chart values no template read (issue 36, item 6).
    pub warnings: Vec<Warning>,
}

impl Rendered<'_> {
    /// The same render, holding a copy of its plan (for a caller that keeps it).
    pub fn into_owned(self) -> Rendered<'static> {
        Rendered {
            plan: std::borrow::Cow::Owned(self.plan.into_owned()),
            resources: self.resources,
            images: self.images,
            reads: self.reads,
            warnings: self.warnings,
        }
    }
}

pub use crate::cache::Warning;

/// State shared by the plans of one render. A kustomization directory named by a
/// `kustomize:` generator is built once and its resources reused by every plan (every
/// environment) that names the same directory: the build reads only files, never
/// parameters, so its result is the same for all of them.
#[derive(Default)]
pub struct Shared {
    kustomize: Mutex<BTreeMap<PathBuf, Arc<OnceLock<Option<Built>>>>>,
    /// What the source stage fetched for the engines: pulled charts and remote bases.
    fetched: Fetched,
}

/// A successful kustomize build and what it read. Failed builds are not kept: each plan then
/// builds again and reports its own error (errors are the cold path).
struct Built {
    resources: Vec<Resource>,
    reads: Vec<crate::cache::Read>,
}

impl Shared {
    fn kustomize(
        &self,
        fs: &crate::cache::Recorder,
        dir: &Path,
    ) -> Result<Vec<Resource>, Box<dyn Diagnostic + Send + Sync>> {
        let slot = match self.kustomize.lock() {
            Ok(mut m) => m.entry(dir.to_path_buf()).or_default().clone(),
            Err(_) => Arc::new(OnceLock::new()),
        };
        let built = slot.get_or_init(|| {
            let rec = crate::cache::Recorder::new(fs.inner());
            kustomize_build(&rec, dir, &self.fetched)
                .ok()
                .map(|resources| Built {
                    resources,
                    reads: rec.reads(),
                })
        });
        match built {
            Some(b) => {
                fs.extend(&b.reads);
                Ok(b.resources.clone())
            }
            None => kustomize_build(fs, dir, &self.fetched),
        }
    }
}

/// Where a component image ended up: the name it has in the rendered manifests (the
/// repository, or a user's `newName`) and its tag or digest.
///
/// Every component image is applied last, as one kustomize `images:` entry `{name,
/// newName: repository, newTag|digest}`; its tag is the base tag unless an `images`
/// transformer of the plan set one for the same name, which then wins.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageRef {
    pub name: String,
    pub tag: Option<String>,
    pub digest: Option<String>,
}

/// Why a plan failed to render. Codes `kiln::render::<condition>`.
#[derive(Debug, Error, Diagnostic)]
pub enum RenderError {
    /// A patch target selects no resource of the component.
    #[error("{at}: patch target {target} matches no resource of `{plan}`")]
    #[diagnostic(
        code(kiln::render::patch_target_missing),
        help(
            "resources of `{plan}`: {available}; a patch that patches nothing is an error in kiln (kustomize ignores it silently)"
        )
    )]
    PatchTargetMissing {
        plan: String,
        target: String,
        available: String,
        at: String,
        #[source_code]
        src: NamedSource<String>,
        #[label("matches nothing")]
        span: Option<SourceSpan>,
    },

    /// A component image's `name` selects no container image of the component (a typo): the
    /// `.gen.yaml` would keep the old image while the emitted `kustomization.yaml` retargets
    /// it, so the tree would disagree with itself.
    #[error(
        "{at}: image `{name}` (field `images[{index}].name`) matches no container image of `{plan}`"
    )]
    #[diagnostic(code(kiln::render::image_matches_nothing))]
    ImageMatchesNothing {
        plan: String,
        name: String,
        index: usize,
        at: String,
        #[help]
        help: String,
        #[source_code]
        src: NamedSource<String>,
        #[label("matches no container")]
        span: Option<SourceSpan>,
    },

    /// The emitted `kustomization.yaml`'s `images:` would change an image of the `.gen.yaml`
    /// (`kubectl kustomize` of the directory would not reproduce it).
    #[error(
        "{at}: `kubectl kustomize` of the emitted `{plan}` would change image `{image}` to `{becomes}`"
    )]
    #[diagnostic(
        code(kiln::render::image_not_reproducible),
        help(
            "two images of the component share a name once retargeted; give each component image its own repository, or use the repository as the container image"
        )
    )]
    ImageNotReproducible {
        plan: String,
        image: String,
        becomes: String,
        at: String,
        #[source_code]
        src: NamedSource<String>,
        #[label("this image")]
        span: Option<SourceSpan>,
    },

    /// A transformer of the kustomize engine failed.
    #[error("{at}: {what} failed for `{plan}`: {cause}")]
    #[diagnostic(code(kiln::render::transformer_failed))]
    TransformerFailed {
        what: &'static str,
        plan: String,
        at: String,
        #[diagnostic_source]
        cause: Box<dyn Diagnostic + Send + Sync>,
        #[source_code]
        src: NamedSource<String>,
        #[label("this transformer")]
        span: Option<SourceSpan>,
    },

    /// A JSON Patch `replace` or `test` of kiln's own spec names a location that does not
    /// exist: RFC 6902 §4.3 and §4.6 ("the target location MUST exist"). kustomize (and
    /// `kiln kustomize`) adds a missing object member on `replace` instead.
    #[error(
        "{at}: jsonPatch operation {index} (`{op}`) of `{plan}`: `{kind}/{name}` has no `{path}`"
    )]
    #[diagnostic(code(kiln::render::json_patch_path_missing))]
    JsonPatchPathMissing {
        plan: String,
        index: usize,
        op: &'static str,
        kind: String,
        name: String,
        path: String,
        at: String,
        #[help]
        help: String,
        #[source_code]
        src: NamedSource<String>,
        #[label("no such location")]
        span: Option<SourceSpan>,
    },

    /// A generator failed.
    #[error("{at}: {what} failed for `{plan}`: {cause}")]
    #[diagnostic(code(kiln::render::generator_failed))]
    GeneratorFailed {
        what: &'static str,
        plan: String,
        at: String,
        #[diagnostic_source]
        cause: Box<dyn Diagnostic + Send + Sync>,
        #[source_code]
        src: NamedSource<String>,
        #[label("this generator")]
        span: Option<SourceSpan>,
    },

    /// An emitted object's name, namespace or label would be refused by the API server.
    #[error("{at}: {kind} `{name}` of `{plan}` has an invalid {field}: {reason}")]
    #[diagnostic(
        code(kiln::render::invalid_object_meta),
        help(
            "names are DNS-1123 subdomains (lower-case letters, digits, `-`, `.`, at most 253 characters), namespaces DNS-1123 labels (at most 63), label keys `[prefix/]name` (name at most 63: letters, digits, `-`, `_`, `.`)"
        )
    )]
    InvalidObjectMeta {
        plan: String,
        kind: String,
        name: String,
        field: String,
        reason: String,
        at: String,
        #[source_code]
        src: NamedSource<String>,
        #[label("here")]
        span: Option<SourceSpan>,
    },

    /// An inline resource is not a Kubernetes object.
    #[error("{at}: inline resource is not a Kubernetes object: {reason}")]
    #[diagnostic(
        code(kiln::render::invalid_resource),
        help("every resource needs `apiVersion`, `kind` and `metadata.name`")
    )]
    InvalidResource {
        reason: String,
        at: String,
        #[source_code]
        src: NamedSource<String>,
        #[label("{reason}")]
        span: Option<SourceSpan>,
    },

    /// A generator path (after its references were resolved for this BuildPlan) names
    /// nothing.
    #[error("{at}: {what} `{path}` not found for environment `{environment}`")]
    #[diagnostic(code(kiln::render::path_not_found))]
    PathNotFound {
        what: &'static str,
        path: String,
        environment: String,
        at: String,
        #[help]
        help: String,
        #[source_code]
        src: NamedSource<String>,
        #[label("resolves to `{path}`")]
        span: Option<SourceSpan>,
    },

    /// A generator path (for this BuildPlan) goes through a symbolic link whose target does
    /// not exist.
    #[error(
        "{at}: {what} `{path}`: `{link}` is a symbolic link to `{target}`, which does not exist"
    )]
    #[diagnostic(
        code(kiln::render::dangling_link),
        help("point the link at an existing file, or remove it and the entry naming it")
    )]
    DanglingLink {
        what: &'static str,
        path: String,
        link: String,
        target: String,
        at: String,
        #[source_code]
        src: NamedSource<String>,
        #[label("through a dangling link")]
        span: Option<SourceSpan>,
    },

    /// A generator path with references leaves its component's directory.
    #[error("{at}: {what} `{path}` leaves the component `{component}`")]
    #[diagnostic(
        code(kiln::render::path_outside_component),
        help("a path with references must stay inside the component's directory (`{component}`)")
    )]
    PathOutsideComponent {
        what: &'static str,
        path: String,
        component: String,
        at: String,
        #[source_code]
        src: NamedSource<String>,
        #[label("leaves the component")]
        span: Option<SourceSpan>,
    },

    /// Two resources of one component have the same id. Located at the second one's
    /// `metadata.name` in the file defining it (a manifest, a chart template, an inline
    /// resource of `component.yaml`), the first named in the message: the generator alone
    /// did not say which two files to look at (repro A1).
    #[error("{at}: `{plan}` has two resources with id `{id}`, first defined at {first}")]
    #[diagnostic(code(kiln::render::duplicate_resource))]
    DuplicateResource {
        plan: String,
        id: String,
        at: String,
        first: String,
        #[help]
        help: String,
        #[source_code]
        src: NamedSource<String>,
        #[label("defined again here")]
        span: Option<SourceSpan>,
    },
}

/// Two objects a transformer made identical, with where each is defined.
#[derive(Debug, Error, Diagnostic)]
#[error("{cause} (defined at {first} and {second})")]
#[diagnostic(forward(cause))]
struct Collision {
    cause: namespace::NamespaceError,
    first: String,
    second: String,
}

/// A kustomize error wrapped for [`RenderError`].
fn boxed<E: Diagnostic + Send + Sync + 'static>(e: E) -> Box<dyn Diagnostic + Send + Sync> {
    Box::new(e)
}

/// A message-only diagnostic, for engine errors that are plain strings.
#[derive(Debug, Error, Diagnostic)]
#[error("{0}")]
struct Message(String);

/// Renders a plan, for [`render`]'s callback.
pub type RenderThunk<'a> = dyn Fn() -> Result<Rendered<'a>, RenderError> + 'a;

/// Stage 4, the one entry: renders every plan in parallel (rayon) and maps each result with
/// `each`, on the worker thread that rendered it, so that what is kept is `T` (the pipeline
/// keeps emitted bytes, [`crate::emit::emit_plan`], not the resources). `each` gets the plan
/// and a function that renders it; it may not call it (a render cache hit). Each plan's
/// render inputs are dropped ([`BuildPlan::release_render_inputs`]) on its worker as soon as
/// `each` returns, so the memory of the plans rendered goes to their output instead of
/// adding to it; names, namespace and images stay. Results in plan order.
///
/// Errors: every plan's [`RenderError`] (the first per plan), together.
pub fn render<T: Send>(
    plans: &mut [BuildPlan],
    sources: &Sources,
    fs: &dyn FileSystem,
    each: &(dyn Fn(&BuildPlan, &RenderThunk) -> Result<T, RenderError> + Sync),
) -> Result<Vec<T>, Errors<Repeated<RenderError>>> {
    let mut rendering = Rendering::default();
    rendering.feed(plans, sources, fs, each);
    rendering.finish()
}

/// What the source stage fetched (`crate::source::Resolved`) for the engines: the charts it
/// pulled (the `helm` generator's, kustomize's `helmCharts[].repo`, chart dependencies) and
/// the trees of the remote kustomize bases the plans' kustomizations name (ADR 0023).
#[derive(Clone, Default)]
pub struct Fetched {
    pub charts: Arc<crate::kustomize::PulledCharts>,
    pub remotes: Arc<crate::kustomize::git::RemoteTrees>,
}

/// [`render`] fed in pieces (issue 38, item 8): the pipeline evaluates a piece of the
/// BuildPlans, renders it with [`Rendering::feed`] and releases its render inputs before the
/// next piece is evaluated, so the plans of a large platform are never all held at once.
/// [`Rendering::finish`] gives what [`render`] gives for all the pieces together, in the
/// same order and with the same errors. A kustomize directory is built once per piece
/// ([`Shared`]); the pieces are whole component instances, so its environments share it.
pub struct Rendering<T> {
    /// Each plan's result; an error with the plan it arose in.
    results: Vec<Result<T, (RenderError, PlanPlace)>>,
    /// What the source stage fetched, for every piece.
    fetched: Fetched,
}

impl<T> Default for Rendering<T> {
    fn default() -> Self {
        Rendering::with_fetched(Fetched::default())
    }
}

impl<T> Rendering<T> {
    /// A render whose plans may use what the source stage fetched.
    pub fn with_fetched(fetched: Fetched) -> Self {
        Rendering {
            results: Vec::new(),
            fetched,
        }
    }
}

impl<T: Send> Rendering<T> {
    /// Renders one piece in parallel, as [`render`] renders all plans.
    pub fn feed(
        &mut self,
        plans: &mut [BuildPlan],
        sources: &Sources,
        fs: &dyn FileSystem,
        each: &(dyn Fn(&BuildPlan, &RenderThunk) -> Result<T, RenderError> + Sync),
    ) {
        let shared = Shared {
            fetched: self.fetched.clone(),
            ..Shared::default()
        };
        let mut piece: Vec<Result<T, (RenderError, PlanPlace)>> = plans
            .par_iter_mut()
            .map(|p| {
                let plan: &BuildPlan = p;
                let r = each(plan, &|| render_plan(plan, sources, fs, &shared))
                    .map_err(|e| (e, plan.place()));
                p.release_render_inputs();
                r
            })
            .collect();
        self.results.append(&mut piece);
    }

    /// The results of the last `n` plans fed, those that rendered, in plan order: for a
    /// caller that takes what it needs of each piece as soon as it is rendered (the write
    /// streamed, issue 38, item 8). `None` when one of them failed (the render's result is
    /// then its errors).
    pub fn last(&mut self, n: usize) -> Option<impl Iterator<Item = &mut T>> {
        let start = self.results.len().saturating_sub(n);
        let piece = &mut self.results[start..];
        piece
            .iter()
            .all(Result::is_ok)
            .then(|| piece.iter_mut().filter_map(|r| r.as_mut().ok()))
    }

    /// Every piece's results in plan order, or every error (the same one once, with the
    /// plans it arose in).
    pub fn finish(self) -> Result<Vec<T>, Errors<Repeated<RenderError>>> {
        in_plan_order(self.results)
    }
}

/// The results of every plan, in plan order; or every error, the same one once, naming every
/// plan it arose in (issue 38, item 10: a chart failing in two environments named only the
/// first).
fn in_plan_order<T>(
    results: Vec<Result<T, (RenderError, PlanPlace)>>,
) -> Result<Vec<T>, Errors<Repeated<RenderError>>> {
    let mut ok = Vec::with_capacity(results.len());
    let mut errors = Vec::new();
    for r in results {
        match r {
            Ok(x) => ok.push(x),
            Err((e, place)) => errors.push((e, Some(place))),
        }
    }
    // The same broken generator or transformer fails in every environment; report it once.
    let grouped = Repeated::group(errors, RenderError::without_plan, PlanPlace::line);
    Errors::check(grouped, || ok)
}

impl RenderError {
    /// The BuildPlan the message names (`web/dev/cart`), if it names one.
    fn plan(&self) -> Option<&str> {
        match self {
            RenderError::PatchTargetMissing { plan, .. }
            | RenderError::ImageMatchesNothing { plan, .. }
            | RenderError::ImageNotReproducible { plan, .. }
            | RenderError::TransformerFailed { plan, .. }
            | RenderError::JsonPatchPathMissing { plan, .. }
            | RenderError::GeneratorFailed { plan, .. }
            | RenderError::InvalidObjectMeta { plan, .. }
            | RenderError::DuplicateResource { plan, .. } => Some(plan),
            RenderError::InvalidResource { .. }
            | RenderError::PathNotFound { .. }
            | RenderError::DanglingLink { .. }
            | RenderError::PathOutsideComponent { .. } => None,
        }
    }

    /// The message without the plan it names: errors at the same place for the same reason
    /// are one error, whatever the plan.
    fn without_plan(&self) -> String {
        let message = self.to_string();
        match self.plan() {
            Some(plan) => message.replace(&format!("`{plan}`"), "`…`"),
            None => message,
        }
    }
}

/// Why a per-plan path could not be read: a located error, or a message for the
/// generator's own error.
enum PathProblem {
    Render(Box<RenderError>),
    Read(String),
}

impl From<RenderError> for PathProblem {
    fn from(e: RenderError) -> Self {
        PathProblem::Render(Box::new(e))
    }
}

/// The generator paths of one BuildPlan. A path without references was resolved and
/// checked by `load` (inside the repository root); one with references, `optional`, or
/// `when` is resolved here, after `evaluate` filled in the environment, and must stay inside
/// the component's directory. The containment is checked on the text first, so a `../`
/// path is refused the same way whether or not it exists.
struct PlanPaths<'a> {
    fs: &'a dyn FileSystem,
    plan: &'a BuildPlan,
    sources: &'a Sources,
}

impl PlanPaths<'_> {
    /// Whether an entry's `when:` selects this plan's environment.
    fn applies(&self, entry: &spec::PathEntry) -> bool {
        entry
            .when()
            .is_none_or(|w| w.admits(&self.plan.environment, &self.plan.tier, &self.plan.cluster))
    }

    /// The path `rel` of the component as a real path; `None` when it is optional and
    /// missing.
    fn resolve(
        &self,
        rel: &str,
        optional: bool,
        loc: &Loc,
        what: &'static str,
    ) -> Result<Option<PathBuf>, RenderError> {
        let dir = &self.plan.source.dir;
        let joined = dir.join(rel);
        let written = self
            .plan
            .source
            .raw_spec
            .pointer(&loc.pointer.replacen("/spec", "", 1))
            .and_then(|v| v.as_str().or_else(|| v.get("path").and_then(Value::as_str)))
            .unwrap_or(rel)
            .to_string();
        let templated = written.contains("${") || optional || rel != written;
        let outside = || {
            let sn = self.sources.snippet(loc);
            RenderError::PathOutsideComponent {
                what,
                path: rel.to_string(),
                component: self.plan.path.clone(),
                at: sn.at,
                src: sn.src,
                span: sn.span,
            }
        };
        if templated
            && (Path::new(rel).is_absolute() || !crate::fs::normalize(&joined).starts_with(dir))
        {
            return Err(outside());
        }
        match self.fs.canonicalize(&joined) {
            Ok(real) if templated && !real.starts_with(dir) => Err(outside()),
            Ok(real) => Ok(Some(real)),
            Err(_) if optional => Ok(None),
            Err(_) => {
                let sn = self.sources.snippet(loc);
                if let Some((link, target)) = crate::fs::dangling_link(self.fs, &joined) {
                    return Err(RenderError::DanglingLink {
                        what,
                        path: rel.to_string(),
                        link: self.shown(&link),
                        target: target.display().to_string(),
                        at: sn.at,
                        src: sn.src,
                        span: sn.span,
                    });
                }
                let help = if written != rel {
                    format!(
                        "`{written}` resolves to `{rel}` in environment `{}` (tier `{}`); add the file, or mark the entry `optional: true`",
                        self.plan.environment, self.plan.tier
                    )
                } else {
                    "paths are relative to the component's directory".to_string()
                };
                Err(RenderError::PathNotFound {
                    what,
                    path: rel.to_string(),
                    environment: self.plan.environment.clone(),
                    at: sn.at,
                    help,
                    src: sn.src,
                    span: sn.span,
                })
            }
        }
    }

    /// The resources of a `files:` generator that `load` left to this plan: each entry that
    /// applies here, a file or every `*.yaml`/`*.yml` of a directory (sorted, not recursive).
    fn read_files(
        &self,
        list: &[spec::PathEntry],
        gloc: &Loc,
    ) -> Result<Vec<Resource>, PathProblem> {
        let mut out = Vec::new();
        for (k, entry) in list.iter().enumerate() {
            if !self.applies(entry) {
                continue;
            }
            let loc = gloc.join("files").join(k);
            let Some(path) = self.resolve(entry.path(), entry.optional(), &loc, "manifest file")?
            else {
                continue;
            };
            let files = if self.fs.is_dir(&path) {
                let listing = self.fs.read_dir(&path).map_err(|e| {
                    PathProblem::Read(format!("cannot list `{}`: {e}", entry.path()))
                })?;
                let yaml = crate::load::yaml_entries(self.fs, listing);
                if yaml.is_empty() {
                    return Err(PathProblem::Read(format!(
                        "directory `{}` holds no *.yaml or *.yml file",
                        entry.path()
                    )));
                }
                yaml
            } else {
                vec![path]
            };
            for file in files {
                let real = self.fs.canonicalize(&file).map_err(|e| {
                    PathProblem::Read(match crate::fs::dangling_link(self.fs, &file) {
                        Some((link, target)) => self.dangling(&link, &target),
                        None => format!("`{}`: {e}", file.display()),
                    })
                })?;
                if !real.starts_with(&self.plan.source.dir) {
                    return Err(PathProblem::Read(format!(
                        "`{}` leaves the component `{}`",
                        file.display(),
                        self.plan.path
                    )));
                }
                let name = shown_file(self.plan, real.strip_prefix(&self.plan.source.dir).ok())
                    .unwrap_or_else(|| real.display().to_string());
                let text = self
                    .fs
                    .read_to_string(&real)
                    .map_err(|e| PathProblem::Read(format!("cannot read `{name}`: {e}")))?;
                let (resources, problems) = crate::load::manifest_resources(&name, &text)
                    .map_err(|e| PathProblem::Read(e.to_string()))?;
                if let Some(p) = problems.first() {
                    return Err(PathProblem::Read(format!(
                        "{name}: document {} is not a Kubernetes object: {}",
                        p.doc, p.reason
                    )));
                }
                out.extend(resources);
            }
        }
        Ok(out)
    }

    /// A path of the component as the user knows it: relative to the component directory.
    fn shown(&self, path: &Path) -> String {
        path.strip_prefix(&self.plan.source.dir)
            .unwrap_or(path)
            .display()
            .to_string()
    }

    /// What to say of a path through the link `link` (to `target`) that leads nowhere.
    fn dangling(&self, link: &Path, target: &Path) -> String {
        format!(
            "`{}` is a symbolic link to `{}`, which does not exist",
            self.shown(link),
            target.display()
        )
    }

    /// A `configMapGenerator`/`secretGenerator` file that `load` left to this plan.
    fn read_asset(&self, rel: &str) -> Result<Vec<u8>, String> {
        let dir = &self.plan.source.dir;
        let joined = dir.join(rel);
        if Path::new(rel).is_absolute() || !crate::fs::normalize(&joined).starts_with(dir) {
            return Err(format!("`{rel}` leaves the component `{}`", self.plan.path));
        }
        let real = self.fs.canonicalize(&joined).map_err(|_| {
            match crate::fs::dangling_link(self.fs, &joined) {
                Some((link, target)) => self.dangling(&link, &target),
                None => format!(
                    "`{rel}` not found for environment `{}`",
                    self.plan.environment
                ),
            }
        })?;
        if !real.starts_with(dir) {
            return Err(format!("`{rel}` leaves the component `{}`", self.plan.path));
        }
        self.fs
            .read(&real)
            .map_err(|e| format!("cannot read `{rel}`: {e}"))
    }
}

/// The `helm` generator: renders the chart with kiln's Helm engine, one resource per
/// rendered document (CRDs, manifests, hooks, in `helm template` order). Each object keeps
/// how the chart was rendered ([`ChartRender`]), for [`trace_chart`].
fn helm_generator(
    fs: &dyn FileSystem,
    plan: &BuildPlan,
    h: &crate::spec::HelmGenerator,
    (chart, values_at): (&Path, (String, String)),
    value_files: Vec<PathBuf>,
    dependencies: Vec<PathBuf>,
) -> Result<(Vec<Resource>, Vec<crate::helm::UnusedValue>), crate::helm::HelmError> {
    // A template's source as findings name it: the chart's directory as the component
    // names it (or as it lies in the source cache), then the template's path in the chart.
    let shown = |p: &Path| {
        shown_file(plan, p.strip_prefix(&plan.source.dir).ok())
            .unwrap_or_else(|| p.display().to_string())
    };
    let render = Arc::new(ChartRender {
        chart: chart.display().to_string(),
        shown: shown(chart),
        dependencies: dependencies
            .iter()
            .map(|d| d.display().to_string())
            .collect(),
        release_name: h
            .release_name
            .clone()
            .unwrap_or_else(|| plan.component.clone()),
        namespace: h
            .namespace
            .clone()
            .unwrap_or_else(|| plan.namespace.clone()),
        value_files: value_files
            .iter()
            .map(|f| (f.display().to_string(), shown(f)))
            .collect(),
        values: h.values.clone(),
        values_at,
        kube_version: h.kube_version.clone(),
        api_versions: h.api_versions.clone(),
    });
    let chart_dir = render.shown.clone();
    let chart_fs = chart_fs(fs, &render);
    let fs: &dyn FileSystem = &chart_fs;
    let mut opts = chart_options(&render);
    opts.include_crds = h.include_crds;
    opts.skip_hooks = h.skip_hooks;
    opts.skip_tests = h.skip_tests;
    opts.record_reads = true;
    let rendered = crate::helm::template_with(fs, &opts)?;
    let mut out = Vec::new();
    for (source, text) in &rendered.documents {
        let docs = crate::yaml::parse_stream(source, text).map_err(|e| {
            crate::helm::HelmError::Manifest {
                file: source.clone(),
                message: e.to_string(),
            }
        })?;
        let in_chart = source
            .split_once('/')
            .map_or(source.as_str(), |(_, rest)| rest);
        for (i, v) in docs.into_iter().enumerate() {
            if v.is_object() {
                let mut r = Resource::new(
                    v,
                    Some(Origin {
                        file: source.clone(),
                        document: i,
                    }),
                );
                r.meta.provenance = Some(Box::new(Provenance {
                    file: Some(format!("{chart_dir}/{in_chart}")),
                    document: i,
                    template: true,
                    set: Vec::new(),
                    chart: Some(render.clone()),
                }));
                out.push(r);
            }
        }
    }
    Ok((out, rendered.unused_values))
}

/// The file system a chart renders through: the chart is read inside its own directory only
/// (issue 39, item 1): a link in a vendored chart to `../../.git/config`, or anywhere else in
/// the repository, is refused (Helm's loader follows any link, `internal/sympath/walk.go`;
/// kiln is stricter). Pulled dependencies are read the same way, each inside its own
/// directory; the values files are the component's, read through the repository's rules.
fn chart_fs<'a>(
    fs: &'a dyn FileSystem,
    r: &ChartRender,
) -> crate::fs::Routed<crate::fs::RootedFs<'a>, &'a dyn FileSystem> {
    let chart = PathBuf::from(&r.chart);
    let dependencies: Vec<PathBuf> = r.dependencies.iter().map(PathBuf::from).collect();
    crate::fs::Routed {
        inside: crate::fs::RootedFs::named(fs, chart.clone(), "the chart directory")
            .with_trees(dependencies.iter().cloned()),
        outside: fs,
        prefixes: std::iter::once(chart).chain(dependencies).collect(),
    }
}

/// The `helm template` options of a chart render (the rest are the printed output's).
fn chart_options(r: &ChartRender) -> crate::helm::TemplateOptions {
    let mut opts = crate::helm::TemplateOptions::new(&r.chart, &r.release_name);
    opts.namespace = r.namespace.clone();
    opts.value_files = r
        .value_files
        .iter()
        .map(|(f, _)| PathBuf::from(f))
        .collect();
    opts.values = r.values.clone();
    opts.kube_version = r.kube_version.clone();
    opts.api_versions = r.api_versions.clone();
    opts.dependencies = r.dependencies.iter().map(PathBuf::from).collect();
    opts
}

/// The chart render `r` made again with its values reads traced (issue 36, item 7), through
/// `fs` as the render read it: which values each template line read, and where each came
/// from. Only a finding in the chart's output asks for it.
pub fn trace_chart(
    fs: &dyn FileSystem,
    r: &ChartRender,
) -> Result<crate::helm::ValuesTrace, crate::helm::HelmError> {
    crate::helm::trace_values(&chart_fs(fs, r), &chart_options(r))
}

/// Renders one plan (see the module docs for the steps), with state shared between the
/// plans of one [`render`] (see [`Shared`]).
fn render_plan<'p>(
    plan: &'p BuildPlan,
    sources: &Sources,
    fs: &dyn FileSystem,
    shared: &Shared,
) -> Result<Rendered<'p>, RenderError> {
    // Every read of this plan goes through the recorder, so the cache knows what it read.
    let recorder = crate::cache::Recorder::new(fs);
    let fs = &recorder;
    let c = &plan.source;
    let file = c.file;
    let key = plan.key();
    let loc_of = |p: String| Loc::new(file, p);

    // 1. Generators.
    let mut resources: Vec<Resource> = Vec::new();
    let mut warnings: Vec<Warning> = Vec::new();
    // Each id → the generator that made it and its index in `resources` (generators of
    // ConfigMaps and Secrets only append to or fold into it, so the index stays its own).
    let mut first_generator: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    let paths = PlanPaths { fs, plan, sources };
    for pg in &plan.generators {
        let g = pg.index;
        let generator = &pg.generator;
        let gloc = loc_of(format!("/spec/generators/{g}"));
        let fail = |what, cause| {
            let sn = sources.snippet(&gloc);
            RenderError::GeneratorFailed {
                what,
                plan: key.clone(),
                at: sn.at,
                cause,
                src: sn.src,
                span: sn.span,
            }
        };
        let produced: Vec<Resource> = match generator {
            Generator::Files(list) => match c.files.get(&g) {
                Some(loaded) => loaded.clone(),
                None => paths.read_files(list, &gloc).map_err(|e| match e {
                    PathProblem::Render(e) => *e,
                    PathProblem::Read(m) => fail("files generator", boxed(Message(m))),
                })?,
            },
            Generator::Resources(values) => {
                let mut out = Vec::new();
                for (i, v) in values.iter().enumerate() {
                    if let Some((_, reason)) = crate::load::resource_problem(v) {
                        let sn = sources.snippet(&gloc.join("resources").join(i));
                        return Err(RenderError::InvalidResource {
                            reason,
                            at: sn.at,
                            src: sn.src,
                            span: sn.span,
                        });
                    }
                    let origin = Origin {
                        file: sources.get(file).name.clone(),
                        document: 0,
                    };
                    out.push(Resource::new(v.clone(), Some(origin)));
                }
                out
            }
            Generator::Helm(h) => {
                let hloc = gloc.join("helm");
                let chart = match h.remote() {
                    // Pulled by the source stage; missing only when the stage did not run
                    // (a library caller rendering without it).
                    Some(source) => shared.fetched.charts.charts.get(&source).cloned().ok_or_else(|| {
                        fail(
                            "helm generator",
                            boxed(Message(format!(
                                "chart `{}` from `{}` was not pulled (the source stage resolves it through kiln.lock)",
                                source.name, source.repo
                            ))),
                        )
                    })?,
                    None => paths
                        .resolve(&h.chart, false, &hloc.join("chart"), "chart")?
                        .unwrap_or_default(),
                };
                let mut values = Vec::new();
                for (k, f) in h.values_files.iter().enumerate() {
                    if !paths.applies(f) {
                        continue;
                    }
                    let floc = hloc.join("valuesFiles").join(k);
                    if let Some(p) = paths.resolve(f.path(), f.optional(), &floc, "values file")? {
                        values.push(p);
                    }
                }
                let deps = shared.fetched.charts.dependencies_of(&chart).to_vec();
                let values_files = values.clone();
                let values_at = (sources.get(file).name.clone(), hloc.join("values").pointer);
                let (out, unused) = helm_generator(fs, plan, h, (&chart, values_at), values, deps)
                    .map_err(|e| fail("helm generator", boxed(e)))?;
                for u in unused {
                    // At the value when the component gives it inline, else at the generator.
                    let tail: String = u
                        .keys
                        .iter()
                        .map(|k| format!("/{}", pointer::escape(k)))
                        .collect();
                    let given = h
                        .values
                        .as_ref()
                        .is_some_and(|v| v.pointer(&tail).is_some());
                    let loc = if given {
                        hloc.join("values").extend(&tail).at_key()
                    } else {
                        hloc.clone()
                    };
                    let mut at = sources.resolve(&loc);
                    if !given && let Some(found) = in_values_file(fs, plan, &values_files, &tail) {
                        at = found;
                    }
                    warnings.push(Warning {
                        code: "kiln::render::unused_value".into(),
                        at,
                        message: u.to_string(),
                    });
                }
                out
            }
            Generator::Kustomize(dir) => {
                let kdir = paths
                    .resolve(
                        dir,
                        false,
                        &gloc.join("kustomize"),
                        "kustomization directory",
                    )?
                    .unwrap_or_default();
                let mut built = shared.kustomize(fs, &kdir).map_err(|e| {
                    let named =
                        crate::diag::Renamed::new(e.as_ref(), &|n| shown_from_root(plan, &kdir, n));
                    fail("kustomize generator", boxed(named))
                })?;
                for r in &mut built {
                    r.meta.provenance = kustomize_provenance(plan, &kdir, r);
                }
                built
            }
            Generator::ConfigMapGenerator(args) | Generator::SecretGenerator(args) => {
                // Paths with references were left to this BuildPlan by `load`.
                let read = |p: &str| match c.assets.get(p) {
                    Some(t) => Ok(t.clone().into_bytes()),
                    None => paths.read_asset(p),
                };
                let made = if matches!(generator, Generator::ConfigMapGenerator(_)) {
                    convert::<generators::ConfigMapArgs>(args)
                        .map_err(|m| fail("configMapGenerator", boxed(Message(m))))
                        .and_then(|a| {
                            generators::generate_config_map(&a, None, &read)
                                .map_err(|e| fail("configMapGenerator", boxed(e)))
                        })?
                } else {
                    convert::<generators::SecretArgs>(args)
                        .map_err(|m| fail("secretGenerator", boxed(Message(m))))
                        .and_then(|a| {
                            generators::generate_secret(&a, None, &read)
                                .map_err(|e| fail("secretGenerator", boxed(e)))
                        })?
                };
                // merge/replace fold into an earlier object; create appends (kustomize's
                // `appendReplaceOrMerge`).
                generators::absorb_one(&mut resources, made)
                    .map_err(|e| fail("generator merge", boxed(e)))?;
                continue;
            }
        };
        let mut produced = produced;
        for (i, r) in produced.iter_mut().enumerate() {
            match generator {
                Generator::Files(_) => {
                    if let Some(o) = &r.origin {
                        r.meta.provenance = Some(Box::new(Provenance {
                            file: Some(o.file.clone()),
                            document: o.document,
                            ..Default::default()
                        }));
                    }
                }
                Generator::Resources(_) => {
                    let at = gloc.join("resources").join(i).pointer;
                    mark_set(r, String::new(), &sources.get(file).name, at, "resources");
                }
                _ => {}
            }
        }
        for r in produced {
            let id = r.id().to_string();
            if let Some(&(first, i)) = first_generator.get(&id) {
                let generator_at = sources.snippet(&gloc).at;
                let first_generator_at = sources
                    .snippet(&loc_of(format!("/spec/generators/{first}")))
                    .at;
                // Where no file holds the object (a generator made it), its generator.
                let sn =
                    defined_at(&r, plan, sources, fs).unwrap_or_else(|| sources.snippet(&gloc));
                let first_at = resources
                    .get(i)
                    .and_then(|f| defined_at(f, plan, sources, fs))
                    .map_or_else(|| first_generator_at.clone(), |f| f.at);
                let from = if first == g {
                    format!("both come from the generator at {generator_at}")
                } else {
                    format!(
                        "the first comes from the generator at {first_generator_at}, this one from the generator at {generator_at}"
                    )
                };
                return Err(RenderError::DuplicateResource {
                    plan: key,
                    id,
                    at: sn.at,
                    first: first_at,
                    help: format!(
                        "an object is defined once per kind, namespace and name: remove one of the two, or rename one ({from})"
                    ),
                    src: sn.src,
                    span: sn.span,
                });
            }
            first_generator.insert(id, (g, resources.len()));
            resources.push(r);
        }
    }

    warnings.sort();
    warnings.dedup();

    // 2. Transformers, in the order written.
    let mut user_images: BTreeMap<String, spec::ImageOverride> = BTreeMap::new();
    for t in &plan.transformers {
        apply_transformer(&mut resources, t, plan, sources, fs, &mut user_images)?;
    }

    // 3. What kustomize does at the end of a build.
    let finish = |what: &'static str, cause: Box<dyn Diagnostic + Send + Sync>| {
        let sn = sources.snippet(&loc_of("/spec".into()));
        RenderError::TransformerFailed {
            what,
            plan: key.clone(),
            at: sn.at,
            cause,
            src: sn.src,
            span: sn.span,
        }
    };
    let image_refs = apply_component_images(&mut resources, &plan.images, &user_images).map_err(
        |e| match e {
            ImagesProblem::Engine(e) => finish("component images", boxed(e)),
            ImagesProblem::MatchesNothing { index, used } => {
                let sn = sources.snippet(&loc_of(format!("/spec/images/{index}/name")));
                let name = plan.images[index].name.clone();
                let help = if used.is_empty() {
                    "the component's containers use no image".to_string()
                } else {
                    let list: Vec<String> = used.iter().map(|u| format!("`{u}`")).collect();
                    let list = format!("the component's containers use {}", list.join(", "));
                    match crate::diag::did_you_mean(&name, used.iter().map(String::as_str)) {
                        Some(m) => format!("did you mean `{m}`? {list}"),
                        None => list,
                    }
                };
                RenderError::ImageMatchesNothing {
                    plan: key.clone(),
                    name,
                    index,
                    at: sn.at,
                    help,
                    src: sn.src,
                    span: sn.span,
                }
            }
            ImagesProblem::NotReproducible {
                index,
                image,
                becomes,
            } => {
                let sn = sources.snippet(&loc_of(format!("/spec/images/{index}")));
                RenderError::ImageNotReproducible {
                    plan: key.clone(),
                    image,
                    becomes,
                    at: sn.at,
                    src: sn.src,
                    span: sn.span,
                }
            }
        },
    )?;
    hash::apply_hash_suffixes(&mut resources).map_err(|e| finish("hash suffix", boxed(e)))?;
    nameref::fix_name_references(&mut resources)
        .map_err(|e| finish("name references", boxed(e)))?;
    sort_order_transformer::sort_resources(&mut resources, None)
        .map_err(|e| finish("sort", boxed(e)))?;
    // 4. Every emitted object, not only the names kiln generates, must be one the API
    // server accepts.
    for r in &resources {
        if let Some((field, reason)) = crate::names::object_problems(&r.value).into_iter().next() {
            let sn = manifest_snippet(fs, plan, r, &field)
                .unwrap_or_else(|| sources.snippet(&loc_of("/metadata/name".into())));
            let text = |p: &str| r.value.pointer(p).and_then(Value::as_str).unwrap_or("");
            return Err(RenderError::InvalidObjectMeta {
                plan: key,
                kind: text("/kind").to_string(),
                name: crate::diag::clip_text(text("/metadata/name"), 80),
                field,
                reason,
                at: sn.at,
                src: sn.src,
                span: sn.span,
            });
        }
    }
    Ok(Rendered {
        plan: std::borrow::Cow::Borrowed(plan),
        resources,
        images: image_refs,
        reads: recorder.reads(),
        warnings,
    })
}

/// Where the value at `pointer` is given in the last of `files` (the values files a `helm`
/// generator read, in order: a later one wins) that gives it, as `file:line:column` of its
/// key (issue 36, item 7).
fn in_values_file(
    fs: &dyn FileSystem,
    plan: &BuildPlan,
    files: &[PathBuf],
    pointer: &str,
) -> Option<Loc<String>> {
    files.iter().rev().find_map(|real| {
        let shown = shown_file(plan, real.strip_prefix(&plan.source.dir).ok())?;
        let text = fs.read_to_string(real).ok()?;
        let found = crate::diag::SourceFile::new(shown.clone(), text).locate(0, pointer, true)?;
        let at = Loc::new(shown, pointer);
        Some(at.found_at(Some(found)))
    })
}

/// Where in its manifest the `field` ([`crate::names::object_problems`]'s
/// `metadata.labels.<key>`) of `r` is written, when `r` was read from a manifest of the
/// component and no spec value set the field (issue 36, item 7): the error points at the
/// manifest's line, not at the component.
fn manifest_snippet(
    fs: &dyn FileSystem,
    plan: &BuildPlan,
    r: &Resource,
    field: &str,
) -> Option<crate::diag::Snippet> {
    let p = r.meta.provenance.as_deref().filter(|p| !p.template)?;
    let pointer = match ["labels", "annotations"]
        .iter()
        .find_map(|m| Some((m, field.strip_prefix(&format!("metadata.{m}."))?)))
    {
        Some((m, key)) => format!("/metadata/{m}/{}", pointer::escape(key)),
        None => format!("/{}", field.replace('.', "/")),
    };
    if p.setter(&pointer).is_some() {
        return None;
    }
    let file = p.file.as_deref()?;
    let inside = crate::load::shown_inside(&plan.source.shown_dir, file)?;
    let text = fs.read_to_string(&plan.source.dir.join(inside)).ok()?;
    let source = crate::diag::SourceFile::new(file, text);
    let found = source.locate(p.document, &pointer, false)?;
    Some(crate::diag::Snippet {
        src: source.named_source(),
        span: Some(found.span()),
        at: format!("{file}:{}:{}", found.line, found.column),
    })
}

/// Builds a kustomization directory with the native engine (`crate::kustomize::build`, the
/// same code as `kiln kustomize --enable-helm`), with kustomize's default load restrictions;
/// a component's `helmCharts:` render with the native Helm engine, pulled charts and remote
/// bases come from `fetched` (the source stage's).
fn kustomize_build(
    fs: &dyn FileSystem,
    dir: &Path,
    fetched: &Fetched,
) -> Result<Vec<Resource>, Box<dyn Diagnostic + Send + Sync>> {
    let options = crate::kustomize::BuildOptions {
        enable_helm: true,
        pulled_charts: fetched.charts.clone(),
        remotes: fetched.remotes.clone(),
        ..Default::default()
    };
    crate::kustomize::build(fs, dir, &options).map_err(boxed)
}

/// A file of the component (`rel`, from its directory) as errors name it: from the
/// repository root for a local component (`components/cart/cm.yaml`), after the repository,
/// the ref and the path for a fetched one (`https://host/app.git@v1.2.0:deploy/cm.yaml`).
/// Joined as text: a fetched component's name is no path (`Path::join` made
/// `https://host` `https:/host`).
fn shown_file(plan: &BuildPlan, rel: Option<&Path>) -> Option<String> {
    let parts: Vec<String> = rel?
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    Some(crate::load::shown_join(
        &plan.source.shown_dir,
        &parts.join("/"),
    ))
}

/// A file name of the kustomize engine (relative to the build root `kdir`, as `kubectl
/// kustomize` names it: `../../base/kustomization.yaml`) as the rest of the render names
/// files: from the repository root (`components/cart/base/kustomization.yaml`), or, for a
/// component from another repository, from its label. `None` for a name that is not a path
/// under the component's repository (a remote base's `repo@commit//path`).
fn shown_from_root(plan: &BuildPlan, kdir: &Path, name: &str) -> Option<String> {
    if name.contains("//") || Path::new(name).is_absolute() {
        return None;
    }
    let path = crate::fs::normalize(&kdir.join(name));
    let dir = &plan.source.dir;
    let label = Path::new(&plan.path);
    let slashed = |p: &Path| {
        let parts: Vec<String> = p
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        parts.join("/")
    };
    if let Ok(rel) = path.strip_prefix(dir) {
        return shown_file(plan, Some(rel));
    }
    // A local component: its directory is the root joined with its label.
    let depth = label.components().count();
    let root = dir.ancestors().nth(depth)?;
    (label.is_relative() && dir.ends_with(label))
        .then(|| path.strip_prefix(root).ok().map(slashed))
        .flatten()
}

/// Where object `r` of `plan` is defined, for an error naming it: its `metadata.name` in the
/// file it came from as its provenance says (a manifest, a chart template, or an inline
/// resource of `component.yaml`). `None` when no file holds it (an object a generator made).
/// Only on an error path: a file that is not among `sources` (one the render read, for an
/// entry resolved per BuildPlan) is read again through `fs`.
fn defined_at(
    r: &Resource,
    plan: &BuildPlan,
    sources: &Sources,
    fs: &dyn FileSystem,
) -> Option<crate::diag::Snippet> {
    const NAME: &str = "/metadata/name";
    let p = r.meta.provenance.as_deref()?;
    let text = |name: &str| {
        if let Some(f) = sources.files().iter().find(|f| f.name == name) {
            return Some(f.clone());
        }
        let path = match name.strip_prefix(&format!("{}/", plan.path)) {
            Some(rest) => plan.source.dir.join(rest),
            // A file of a kustomize base outside the component, named from the root.
            None => {
                let depth = Path::new(&plan.path).components().count();
                plan.source.dir.ancestors().nth(depth)?.join(name)
            }
        };
        let read = fs.read_to_string(&path).ok()?;
        Some(crate::diag::SourceFile::new(name, read))
    };
    let snippet = |f: &crate::diag::SourceFile, found: Option<kiln_base::yaml::Located>| {
        let at = match found {
            Some(l) => format!("{}:{}:{}", f.name, l.line, l.column),
            None => f.name.clone(),
        };
        crate::diag::Snippet {
            src: f.named_source(),
            span: found.map(|l| l.span()),
            at,
        }
    };
    match &p.file {
        Some(name) => {
            let f = text(name)?;
            if p.template {
                // Not YAML until rendered: the line of `name:`, found by following the keys.
                let line = template_line(&f.text, p.document, NAME);
                return Some(crate::diag::Snippet {
                    src: f.named_source(),
                    span: None,
                    at: line.map_or_else(|| f.name.clone(), |l| format!("{}:{l}", f.name)),
                });
            }
            Some(snippet(&f, f.locate(p.document, NAME, false)))
        }
        // An inline resource: the spec field that set it (`mark_set`'s `resources`).
        None => {
            let set = p
                .set
                .iter()
                .find(|s| s.by == "resources" && s.pointer.is_empty())?;
            let f = text(&set.file)?;
            let at = format!("{}{NAME}", set.at);
            Some(snippet(&f, f.locate(0, &at, false)))
        }
    }
}

/// The line (1-based) of the field at `pointer` in a chart template (for validation's
/// findings and render's errors): the template's
/// `document`th document (split at `---` lines; the whole text when it has fewer), then
/// each key of the pointer in turn, on a later line than the one before. Where a key is not
/// written (a `toYaml` of a value wrote it) the last key found is the line.
pub(crate) fn template_line(text: &str, document: usize, pointer: &str) -> Option<usize> {
    let lines: Vec<&str> = text.lines().collect();
    let starts: Vec<usize> = std::iter::once(0)
        .chain(
            lines
                .iter()
                .enumerate()
                .filter(|(_, l)| l.trim_end() == "---" || l.starts_with("--- "))
                .map(|(i, _)| i + 1),
        )
        .collect();
    let mut at = starts.get(document).copied().unwrap_or(0);
    let mut found = None;
    for token in kiln_base::pointer::tokens(pointer) {
        if token.parse::<usize>().is_ok() {
            continue;
        }
        let key = format!("{token}:");
        let hit = lines.iter().enumerate().skip(at).find(|(_, l)| {
            let t = l.trim_start().trim_start_matches("- ").trim_start();
            t.starts_with(&key) || t.starts_with(&format!("\"{token}\":"))
        });
        match hit {
            Some((i, _)) => {
                found = Some(i + 1);
                at = i + 1;
            }
            None => break,
        }
    }
    found.or(Some(starts.get(document).copied().unwrap_or(0) + 1))
}

/// Where an object a `kustomize:` generator built came from, for validation's findings
/// (issue 36, item 7): the manifest file of the kustomization tree that declared it (its
/// `resources:` entry, as the engine's loader read it) and its document there, named from
/// the repository root. `None` for what no local file holds: an object a generator of the
/// kustomization made, one of a remote base, or one rendered by `helmCharts:`.
fn kustomize_provenance(plan: &BuildPlan, kdir: &Path, r: &Resource) -> Option<Box<Provenance>> {
    let origin = r.origin.as_ref()?;
    if origin.file.ends_with(" (helm template)") {
        return None;
    }
    Some(Box::new(Provenance {
        file: Some(shown_from_root(plan, kdir, &origin.file)?),
        document: origin.document,
        ..Default::default()
    }))
}

/// Converts between two serde shapes (kiln's spec → the engine's kustomize types).
fn convert<T: serde::de::DeserializeOwned>(from: &impl serde::Serialize) -> Result<T, String> {
    serde_json::to_value(from)
        .and_then(serde_json::from_value)
        .map_err(|e| e.to_string())
}

fn apply_transformer(
    resources: &mut Vec<Resource>,
    t: &PlanTransformer,
    plan: &BuildPlan,
    sources: &Sources,
    fs: &dyn FileSystem,
    user_images: &mut BTreeMap<String, spec::ImageOverride>,
) -> Result<(), RenderError> {
    let tr = &t.transformer;
    let tloc = Loc::new(plan.source.file, format!("/spec/transformers/{}", t.index));
    let fail = |what: &'static str, field: &str, cause: Box<dyn Diagnostic + Send + Sync>| {
        let sn = sources.snippet(&tloc.join(field));
        RenderError::TransformerFailed {
            what,
            plan: plan.key(),
            at: sn.at,
            cause,
            src: sn.src,
            span: sn.span,
        }
    };
    let missing = |field: &str, target: &spec::Target, resources: &[Resource]| {
        let sn = sources.snippet(&tloc.join(field).join("target"));
        let mut ids: Vec<String> = resources
            .iter()
            .map(|r| format!("{}/{}", r.kind(), r.name()))
            .collect();
        ids.sort();
        RenderError::PatchTargetMissing {
            plan: plan.key(),
            target: format!("`{target}`"),
            available: if ids.is_empty() {
                "none".into()
            } else {
                ids.join(", ")
            },
            at: sn.at,
            src: sn.src,
            span: sn.span,
        }
    };
    let everything = patch_transformer::PatchOptions::default();
    let file = &sources.get(plan.source.file).name;
    let set_by = |r: &mut Resource, pointer: String, at: String, by: &str| {
        mark_set(r, pointer, file, at, by);
    };

    if let Some(ns) = &tr.namespace {
        namespace::apply_namespace(resources, ns).map_err(|e| {
            let cause = match &e {
                // Name where the two objects are defined (repro A1: neither file was named).
                namespace::NamespaceError::IdConflict { id, .. } => {
                    let mut at = resources
                        .iter()
                        .filter(|r| r.id().to_string() == *id)
                        .filter_map(|r| defined_at(r, plan, sources, fs))
                        .map(|sn| sn.at);
                    match (at.next(), at.next()) {
                        (Some(first), Some(second)) => boxed(Collision {
                            cause: e,
                            first,
                            second,
                        }),
                        _ => boxed(e),
                    }
                }
                _ => boxed(e),
            };
            fail("namespace", "namespace", cause)
        })?;
    }
    if let Some(pairs) = &tr.labels {
        let entry = labels::Label {
            pairs: pairs.clone(),
            include_selectors: tr.include_selectors.unwrap_or(false),
            include_templates: tr.include_templates.unwrap_or(false),
            fields: Vec::new(),
        };
        labels::apply_labels(resources, &entry, &[], &[])
            .map_err(|e| fail("labels", "labels", boxed(e)))?;
        for r in resources.iter_mut() {
            for k in pairs.keys() {
                let at = tloc.join("labels").join(k).pointer;
                set_by(r, pointer::join("/metadata/labels", k), at, "labels");
            }
        }
    }
    if let Some(annotations) = &tr.annotations {
        labels::apply_common_annotations(resources, annotations, &[])
            .map_err(|e| fail("annotations", "annotations", boxed(e)))?;
        for r in resources.iter_mut() {
            for k in annotations.keys() {
                let at = tloc.join("annotations").join(k).pointer;
                set_by(
                    r,
                    pointer::join("/metadata/annotations", k),
                    at,
                    "annotations",
                );
            }
        }
    }
    if let Some(list) = &tr.images {
        let entries: Vec<imagetag::Image> = list
            .iter()
            .map(|i| imagetag::Image {
                name: i.name.clone(),
                new_name: i.new_name.clone().unwrap_or_default(),
                new_tag: i.new_tag.clone().unwrap_or_default(),
                digest: i.digest.clone().unwrap_or_default(),
                tag_suffix: String::new(),
            })
            .collect();
        imagetag::apply_images(resources, &entries, &[])
            .map_err(|e| fail("images", "images", boxed(e)))?;
        for i in list {
            user_images.insert(i.name.clone(), i.clone());
        }
    }
    if let Some(prefix) = &tr.name_prefix {
        prefix_suffix::apply_name_prefix(resources, prefix);
    }
    if let Some(suffix) = &tr.name_suffix {
        prefix_suffix::apply_name_suffix(resources, suffix);
    }
    if let Some(jp) = &tr.json_patch {
        let ops = crate::kustomize::filters::patch_json6902::JsonPatch::from_value(&Value::Array(
            jp.patch.clone(),
        ))
        .map_err(|e| match e.invalid_member() {
            // At the operation (validate checked those written without `${…}`; this one is
            // read resolved), not at the transformer's first line.
            Some((k, member)) => {
                let mut at = tloc.join("jsonPatch").join("patch").join(k);
                if !member.is_empty() {
                    at = at.join(member);
                }
                let sn = sources.snippet(&at);
                RenderError::TransformerFailed {
                    what: "jsonPatch",
                    plan: plan.key(),
                    at: sn.at,
                    cause: boxed(e),
                    src: sn.src,
                    span: sn.span,
                }
            }
            None => fail("jsonPatch", "jsonPatch", boxed(e)),
        })?;
        let compiled = jp
            .target
            .compile()
            .map_err(|e| fail("jsonPatch", "jsonPatch", boxed(e)))?;
        for r in resources.iter().filter(|r| compiled.matches(r)) {
            if let Some(m) = missing_location(&r.value, &ops) {
                let sn = sources.snippet(
                    &tloc
                        .join("jsonPatch")
                        .join("patch")
                        .join(m.index)
                        .join("path"),
                );
                let help = match m.suggestion {
                    Some(s) => format!(
                        "did you mean `{s}`? `{}` needs an existing location (RFC 6902); use `add` to create one",
                        m.op
                    ),
                    None => format!(
                        "`{}` needs an existing location (RFC 6902); use `add` to create one",
                        m.op
                    ),
                };
                return Err(RenderError::JsonPatchPathMissing {
                    plan: plan.key(),
                    index: m.index,
                    op: m.op,
                    kind: r.kind().to_string(),
                    name: r.name().to_string(),
                    path: m.path,
                    at: sn.at,
                    help,
                    src: sn.src,
                    span: sn.span,
                });
            }
        }
        for r in resources.iter_mut().filter(|r| compiled.matches(r)) {
            for (k, op) in jp.patch.iter().enumerate() {
                let (Some(kind), Some(path)) = (
                    op.get("op").and_then(Value::as_str),
                    op.get("path").and_then(Value::as_str),
                ) else {
                    continue;
                };
                let field = match kind {
                    "add" | "replace" => "value",
                    "copy" | "move" => "from",
                    _ => continue,
                };
                // `-` appends: the new item's index is the list's length before.
                let path = match path.strip_suffix("/-") {
                    Some(list) => {
                        let len = r
                            .value
                            .pointer(list)
                            .and_then(Value::as_array)
                            .map_or(0, Vec::len);
                        format!("{list}/{len}")
                    }
                    None => path.to_string(),
                };
                let at = tloc
                    .join("jsonPatch")
                    .join("patch")
                    .join(k)
                    .join(field)
                    .pointer;
                set_by(r, path, at, "jsonPatch");
            }
        }
        let n = patch_transformer::apply_patch(
            resources,
            &patch_transformer::ParsedPatch::Json6902(ops),
            Some(&jp.target),
            &everything,
        )
        .map_err(|e| fail("jsonPatch", "jsonPatch", boxed(e)))?;
        if n == 0 {
            return Err(missing("jsonPatch", &jp.target, resources));
        }
    }
    if let Some(mp) = &tr.merge_patch {
        let target = mp.target.clone();
        let compiled = target
            .compile()
            .map_err(|e| fail("mergePatch", "mergePatch", boxed(e)))?;
        let mut n = 0;
        let at = tloc.join("mergePatch").join("patch");
        for r in resources.iter_mut().filter(|r| compiled.matches(r)) {
            crate::kustomize::filters::patch_json6902::merge_patch_7386(&mut r.value, &mp.patch);
            for_each_leaf(&mp.patch, &mut String::new(), &mut |p| {
                set_by(r, p.to_string(), at.extend(p).pointer, "mergePatch");
            });
            n += 1;
        }
        if n == 0 {
            return Err(missing("mergePatch", &target, resources));
        }
    }
    if let Some(sp) = &tr.strategic_merge_patch {
        let parsed = patch_transformer::parse_patch_docs(vec![sp.patch.clone()])
            .map_err(|e| fail("strategicMergePatch", "strategicMergePatch", boxed(e)))?;
        let sel = sp.target.as_ref();
        let implied = spec::Target {
            kind: sp
                .patch
                .get("kind")
                .and_then(Value::as_str)
                .map(str::to_string),
            name: sp
                .patch
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .map(str::to_string),
            ..Default::default()
        };
        if let Ok(compiled) = sel.unwrap_or(&implied).compile() {
            let at = tloc.join("strategicMergePatch").join("patch");
            for r in resources.iter_mut().filter(|r| compiled.matches(r)) {
                for_each_leaf(&sp.patch, &mut String::new(), &mut |p| {
                    if !matches!(p, "/apiVersion" | "/kind" | "/metadata/name") {
                        set_by(
                            r,
                            p.to_string(),
                            at.extend(p).pointer,
                            "strategicMergePatch",
                        );
                    }
                });
            }
        }
        let n = match patch_transformer::apply_patch(resources, &parsed, sel, &everything) {
            Ok(n) => n,
            // Without a target the patch's own id selects; "matches nothing" is the same
            // condition as for a target.
            Err(patch_transformer::PatchError::SmpTargetMissing { .. }) => 0,
            Err(e) => return Err(fail("strategicMergePatch", "strategicMergePatch", boxed(e))),
        };
        if n == 0 {
            return Err(missing(
                "strategicMergePatch",
                sp.target.as_ref().unwrap_or(&implied),
                resources,
            ));
        }
    }
    Ok(())
}

/// Records on `r` that the value at `at` in the spec file `file` set `pointer` and what is
/// below it (issue 36, item 7: a finding there names that value).
fn mark_set(r: &mut Resource, pointer: String, file: &str, at: String, by: &str) {
    r.meta
        .provenance
        .get_or_insert_with(Default::default)
        .set
        .push(FieldSet {
            pointer,
            file: file.to_string(),
            at,
            by: by.to_string(),
        });
}

/// Calls `f` with the JSON Pointer of each leaf of a patch document: a scalar, an empty
/// object, or a list (a strategic merge matches list items by key, so their indices in the
/// patch are not the object's).
fn for_each_leaf(v: &Value, at: &mut String, f: &mut dyn FnMut(&str)) {
    match v {
        Value::Object(m) if !m.is_empty() => {
            for (k, child) in m {
                let len = at.len();
                pointer::push(at, k);
                for_each_leaf(child, at, f);
                at.truncate(len);
            }
        }
        _ => f(at),
    }
}

/// A `replace` or `test` whose location is missing, found by [`missing_location`].
struct MissingLocation {
    index: usize,
    op: &'static str,
    path: String,
    /// The nearest existing path: the first missing token corrected to the closest key.
    suggestion: Option<String>,
}

/// The first `replace` or `test` of `ops` whose location does not exist in `doc` once the
/// operations before it are applied (RFC 6902 §4.3, §4.6). Works on a copy: the engine applies
/// the patch afterwards, with kustomize's semantics for everything else (an operation that
/// fails here for another reason stops the check and fails there, with the engine's error).
fn missing_location(
    doc: &Value,
    ops: &crate::kustomize::filters::patch_json6902::JsonPatch,
) -> Option<MissingLocation> {
    use crate::kustomize::filters::patch_json6902::{JsonPatch, PatchOp};
    // Nearly every patch only replaces (or tests) at paths the object has: then each path is
    // there when its operation runs, unless an earlier one replaced a value above it. That
    // is checked in place; the copy below (a copy of every patched object) is only for the
    // rest.
    let tokens: Vec<&[String]> = ops.0.iter().map(|op| op.path().tokens()).collect();
    let in_place = ops
        .0
        .iter()
        .all(|op| matches!(op, PatchOp::Replace { .. } | PatchOp::Test { .. }))
        && tokens.iter().all(|t| locate(doc, t).is_some())
        && tokens.iter().enumerate().all(|(i, later)| {
            tokens[..i]
                .iter()
                .all(|earlier| earlier.len() >= later.len() || !later.starts_with(earlier))
        });
    if in_place {
        return None;
    }
    let mut doc = doc.clone();
    for (index, op) in ops.0.iter().enumerate() {
        if let PatchOp::Replace { path, .. } | PatchOp::Test { path, .. } = op {
            let tokens = path.tokens();
            if let Some(depth) = (0..tokens.len()).find(|&d| locate(&doc, &tokens[..=d]).is_none())
            {
                return Some(MissingLocation {
                    index,
                    op: op.name(),
                    path: path.as_str().to_string(),
                    suggestion: nearest_path(&doc, tokens, depth),
                });
            }
        }
        if JsonPatch(vec![op.clone()]).apply(&mut doc).is_err() {
            return None;
        }
    }
    None
}

/// The value at `tokens`, with kustomize's negative array indices (`-1` is the last item).
fn locate<'v>(doc: &'v Value, tokens: &[String]) -> Option<&'v Value> {
    tokens.iter().try_fold(doc, |v, t| match v {
        Value::Object(m) => m.get(t),
        Value::Array(a) => {
            let i: i64 = t.parse().ok()?;
            let i = if i < 0 { a.len() as i64 + i } else { i };
            a.get(usize::try_from(i).ok()?)
        }
        _ => None,
    })
}

/// `tokens` with the missing one at `depth` replaced by the closest key of its parent, when
/// one is close: the whole path when that exists, else the path up to the corrected token.
fn nearest_path(doc: &Value, tokens: &[String], depth: usize) -> Option<String> {
    let Value::Object(parent) = locate(doc, &tokens[..depth])? else {
        return None;
    };
    let fix = crate::diag::did_you_mean(&tokens[depth], parent.keys().map(String::as_str))?;
    let mut fixed = tokens.to_vec();
    fixed[depth] = fix;
    let keep = if locate(doc, &fixed).is_some() {
        fixed.len()
    } else {
        depth + 1
    };
    Some(fixed[..keep].iter().fold(String::new(), |mut out, t| {
        kiln_base::pointer::push(&mut out, t);
        out
    }))
}

/// Why the component images could not be applied.
enum ImagesProblem {
    Engine(imagetag::ImagesError),
    /// Component image `index` selects no image; `used` are the names (without tag or
    /// digest) the containers use.
    MatchesNothing {
        index: usize,
        used: Vec<String>,
    },
    /// The emitted `images:` entry of component image `index` turns `image` into `becomes`.
    NotReproducible {
        index: usize,
        image: String,
        becomes: String,
    },
}

/// Applies the component's images last (see [`ImageRef`]) and returns where each ended up.
///
/// Two checks keep the emitted directory consistent (`kubectl kustomize` of it reproduces the
/// `.gen.yaml`): every component image must select a container image (else the `.gen.yaml`
/// keeps the old one while `kustomization.yaml` retargets it), and the emitted entries
/// (`{name: <final name>, newTag|digest}`), applied to the result, must change nothing.
fn apply_component_images(
    resources: &mut [Resource],
    resolved: &[spec::Image],
    user: &BTreeMap<String, spec::ImageOverride>,
) -> Result<Vec<ImageRef>, ImagesProblem> {
    let before = imagetag::images_in(resources);
    let mut entries = Vec::new();
    let mut refs = Vec::new();
    for (index, img) in resolved.iter().enumerate() {
        let over = user.get(&img.name);
        let (tag, digest) = match over {
            Some(o) if o.new_tag.is_some() || o.digest.is_some() => {
                (o.new_tag.clone(), o.digest.clone())
            }
            _ => (img.tag.clone(), img.digest.clone()),
        };
        // An `images` transformer with `newName` already renamed the containers' image, so
        // the component image is found under that name now.
        let current = over
            .and_then(|o| o.new_name.clone())
            .unwrap_or_else(|| img.name.clone());
        let name = over
            .and_then(|o| o.new_name.clone())
            .unwrap_or_else(|| img.repository.clone());
        if !before.iter().any(|b| imagetag::name_matches(&current, b)) {
            let mut used: Vec<String> = before
                .iter()
                .map(|b| crate::kustomize::types::image_ref::ImageRef::parse(b).name)
                .collect();
            used.sort();
            used.dedup();
            return Err(ImagesProblem::MatchesNothing { index, used });
        }
        entries.push(imagetag::Image {
            name: current.clone(),
            new_name: if name != current {
                name.clone()
            } else {
                String::new()
            },
            new_tag: tag.clone().unwrap_or_default(),
            digest: digest.clone().unwrap_or_default(),
            tag_suffix: String::new(),
        });
        refs.push(ImageRef { name, tag, digest });
    }
    imagetag::apply_images(resources, &entries, &[]).map_err(ImagesProblem::Engine)?;
    // What `crate::emit::kustomization` writes, applied as kustomize would.
    let pins: Vec<imagetag::Image> = refs
        .iter()
        .map(|r| imagetag::Image {
            name: r.name.clone(),
            new_tag: r.tag.clone().unwrap_or_default(),
            digest: r.digest.clone().unwrap_or_default(),
            ..Default::default()
        })
        .collect();
    for image in imagetag::images_in(resources) {
        let mut now = image.clone();
        for (index, pin) in pins.iter().enumerate() {
            let next = imagetag::rewrite(&now, pin);
            if next != now {
                if next != image {
                    return Err(ImagesProblem::NotReproducible {
                        index,
                        image,
                        becomes: next,
                    });
                }
                now = next;
            }
        }
    }
    Ok(refs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evaluate::{Selection, evaluate};
    use crate::load::RealFs;
    use crate::validate::tests::{ENVS, PROJECTS, platform_yaml, run};

    const HEAD: &str = "apiVersion: kiln/v1alpha1\nkind: Component\nmetadata:\n  name: a\nspec:\n  parameters:\n    type: object\n    properties:\n      replicas: {type: integer, default: 1}\n      domain: {type: string}\n  images:\n  - {name: app, repository: ghcr.io/x/app, tag: \"1.0\"}\n  generators:\n  - resources:\n    - apiVersion: apps/v1\n      kind: Deployment\n      metadata: {name: a}\n      spec:\n        selector: {matchLabels: {app: a}}\n        template:\n          metadata: {labels: {app: a}}\n          spec:\n            containers: [{name: a, image: app, args: [\"{{ .Values.x }}\", \"${{ vars.y }}\"]}]\n            volumes: [{name: c, configMap: {name: cfg}}]\n    - {apiVersion: v1, kind: ServiceAccount, metadata: {name: a}}\n  - configMapGenerator: {name: cfg, literals: [\"HOST=${params.domain}\"]}\n";

    fn rendered(component: &str) -> Result<Vec<Rendered<'static>>, Vec<String>> {
        let p = run(&platform_yaml(ENVS, PROJECTS), component)?;
        let mut plans = evaluate(&p, &Selection::default())
            .map_err(|e| e.errors.iter().map(|e| e.to_string()).collect::<Vec<_>>())?;
        render(&mut plans, &p.sources, &RealFs, &|_, r| {
            r().map(Rendered::into_owned)
        })
        .map_err(|e| e.errors.iter().map(|e| e.to_string()).collect())
    }

    #[test]
    fn a_replace_below_an_earlier_replace_is_checked_where_it_runs() {
        use crate::kustomize::filters::patch_json6902::JsonPatch;
        let doc = serde_json::json!({"spec": {"replicas": 1, "template": {"x": 1, "y": 2}}});
        let ops = |v: Value| JsonPatch::from_value(&v).unwrap();
        let found = |v: Value| missing_location(&doc, &ops(v)).map(|m| (m.index, m.path));
        // Paths the object has: answered in place.
        assert_eq!(
            found(serde_json::json!([
                {"op": "replace", "path": "/spec/replicas", "value": 2},
                {"op": "test", "path": "/spec/template/x", "value": 1},
                {"op": "replace", "path": "/spec/template", "value": {"x": 3}},
                {"op": "replace", "path": "/spec/template", "value": {"x": 4}}
            ])),
            None
        );
        // `/spec/template/y` is there before the patch, not once the template is replaced.
        assert_eq!(
            found(serde_json::json!([
                {"op": "replace", "path": "/spec/template", "value": {"x": 3}},
                {"op": "replace", "path": "/spec/template/y", "value": 5}
            ])),
            Some((1, "/spec/template/y".to_string()))
        );
        assert_eq!(
            found(serde_json::json!([{"op": "replace", "path": "/spec/replicaz", "value": 2}])),
            Some((0, "/spec/replicaz".to_string()))
        );
        // An `add` first: the operations are applied in turn.
        assert_eq!(
            found(serde_json::json!([
                {"op": "add", "path": "/spec/z", "value": 1},
                {"op": "replace", "path": "/spec/z", "value": 2}
            ])),
            None
        );
    }

    #[test]
    fn renders_generators_transformers_and_finishing_steps() {
        let comp = format!(
            "{HEAD}  transformers:\n  - namespace: \"${{env.namespace}}\"\n  - namePrefix: web-\n  - labels: {{team: web}}\n    includeSelectors: true\n  - jsonPatch:\n      target: {{kind: Deployment, name: web-a}}\n      patch: [{{op: add, path: /spec/replicas, value: \"${{params.replicas}}\"}}]\n  - images: [{{name: app, newTag: \"2.0\"}}]\n    environments: [prod]\n"
        );
        let out = rendered(&comp).unwrap();
        assert_eq!(out.len(), 2);
        let dev = &out[0];
        let kinds: Vec<&str> = dev.resources.iter().map(|r| r.kind()).collect();
        // kustomize legacy order: ServiceAccount, ConfigMap, Deployment.
        assert_eq!(kinds, ["ServiceAccount", "ConfigMap", "Deployment"]);
        let cm = &dev.resources[1];
        assert!(
            cm.name().starts_with("web-cfg-"),
            "hash suffix after prefix: {}",
            cm.name()
        );
        assert_eq!(cm.value["data"]["HOST"], "example.com");
        assert_eq!(cm.namespace(), Some("web-dev"));
        let d = &dev.resources[2].value;
        assert_eq!(d["spec"]["replicas"], 2);
        assert_eq!(d["spec"]["selector"]["matchLabels"]["team"], "web");
        assert_eq!(
            d["spec"]["template"]["spec"]["containers"][0]["image"],
            "ghcr.io/x/app:1.0"
        );
        assert_eq!(
            d["spec"]["template"]["spec"]["containers"][0]["args"][0],
            "{{ .Values.x }}"
        );
        assert_eq!(
            d["spec"]["template"]["spec"]["containers"][0]["args"][1],
            "${{ vars.y }}"
        );
        assert_eq!(
            d["spec"]["template"]["spec"]["volumes"][0]["configMap"]["name"],
            cm.name(),
            "name reference follows prefix and hash"
        );
        assert_eq!(
            dev.images,
            [ImageRef {
                name: "ghcr.io/x/app".into(),
                tag: Some("1.0".into()),
                digest: None
            }]
        );
        // prod: the images transformer's tag wins over the base tag.
        let prod = &out[1];
        assert_eq!(
            prod.resources[2].value["spec"]["template"]["spec"]["containers"][0]["image"],
            "ghcr.io/x/app:2.0"
        );
        assert_eq!(prod.resources[2].value["spec"]["replicas"], 4);
        assert_eq!(prod.images[0].tag.as_deref(), Some("2.0"));
    }

    #[test]
    fn patch_matching_nothing_is_an_error_naming_the_line() {
        let comp = format!(
            "{HEAD}  transformers:\n  - mergePatch:\n      target: {{kind: Deployment, name: nope}}\n      patch: {{spec: {{replicas: 3}}}}\n"
        );
        let errs = rendered(&comp).unwrap_err();
        assert_eq!(errs.len(), 1, "{errs:?}");
        assert!(
            errs[0].starts_with("components/a/component.yaml:29:"),
            "{errs:?}"
        );
        assert!(
            errs[0].contains("matches no resource of `web/dev/a`"),
            "{errs:?}"
        );

        let comp = format!(
            "{HEAD}  transformers:\n  - jsonPatch:\n      target: {{kind: StatefulSet}}\n      patch: [{{op: remove, path: /spec}}]\n"
        );
        let errs = rendered(&comp).unwrap_err();
        assert!(errs[0].contains("matches no resource"), "{errs:?}");

        let comp = format!(
            "{HEAD}  transformers:\n  - strategicMergePatch:\n      patch: {{apiVersion: apps/v1, kind: Deployment, metadata: {{name: zzz}}, spec: {{replicas: 3}}}}\n"
        );
        let errs = rendered(&comp).unwrap_err();
        assert!(errs[0].contains("matches no resource"), "{errs:?}");
    }

    /// Issue 36 item 5: in kiln's own spec a JSON Patch is RFC 6902's, so `replace` and `test`
    /// need their location, and the help names the nearest existing path. (kustomize adds
    /// the member on `replace`; `kiln kustomize` keeps that, see patch_json6902's tests.)
    #[test]
    fn json_patch_replace_or_test_of_a_missing_path_is_an_error_with_the_nearest_path() {
        let patch = |ops: &str| {
            format!(
                "{HEAD}  transformers:\n  - jsonPatch:\n      target: {{kind: Deployment}}\n      patch: {ops}\n"
            )
        };
        let err = |ops: &str| match rendered(&patch(ops)) {
            Err(errs) => errs,
            Ok(_) => panic!("{ops} rendered"),
        };
        let errs = err("[{op: replace, path: /spec/replica, value: 4}]");
        assert!(
            errs[0].starts_with("components/a/component.yaml:30:35:")
                && errs[0].contains("jsonPatch operation 0 (`replace`) of `web/dev/a`")
                && errs[0].contains("`Deployment/a` has no `/spec/replica`"),
            "{errs:?}"
        );
        let p = run(
            &platform_yaml(ENVS, PROJECTS),
            &patch("[{op: test, path: /spec/template/spex/containers, value: 1}]"),
        )
        .unwrap();
        let mut plans = evaluate(&p, &Selection::default()).unwrap();
        let e = render(&mut plans, &p.sources, &RealFs, &|_, r| {
            r().map(Rendered::into_owned)
        })
        .unwrap_err();
        let RenderError::JsonPatchPathMissing { help, op, .. } = &e.errors[0].error else {
            panic!("{:?}", e.errors[0]);
        };
        assert_eq!(*op, "test");
        assert!(
            help.starts_with("did you mean `/spec/template/spec/containers`?"),
            "{help}"
        );
        // The location may be made by an earlier operation; an existing one is replaced.
        let out = rendered(&patch(
            "[{op: add, path: /spec/paused, value: false}, {op: replace, path: /spec/paused, value: true}, {op: test, path: /spec/selector/matchLabels/app, value: a}, {op: replace, path: /spec/template/spec/containers/-1/name, value: b}]",
        ))
        .unwrap();
        let d = &out[0].resources[2].value;
        assert_eq!(d["spec"]["paused"], true);
        assert_eq!(d["spec"]["template"]["spec"]["containers"][0]["name"], "b");
    }

    #[test]
    fn strategic_merge_patch_merges_containers_by_name() {
        let comp = format!(
            "{HEAD}  transformers:\n  - strategicMergePatch:\n      target: {{kind: Deployment}}\n      patch: {{apiVersion: apps/v1, kind: Deployment, metadata: {{name: a}}, spec: {{template: {{spec: {{containers: [{{name: a, resources: {{limits: {{cpu: 1}}}}}}]}}}}}}}}\n"
        );
        let out = rendered(&comp).unwrap();
        let c = &out[0].resources[2].value["spec"]["template"]["spec"]["containers"][0];
        assert_eq!(c["image"], "ghcr.io/x/app:1.0");
        assert_eq!(c["resources"]["limits"]["cpu"], 1);
    }

    #[test]
    fn generators_read_files_and_env_files_loaded_with_the_component() {
        use crate::load::{LoadOptions, load};
        use crate::validate::tests::tree;
        let comp = "apiVersion: kiln/v1alpha1\nkind: Component\nmetadata: {name: a}\nspec:\n  generators:\n  - configMapGenerator: {name: cfg, files: [conf/app.properties, key.txt=conf/other.txt], envs: [conf/x.env]}\n  - secretGenerator: {name: s, literals: [\"PASSWORD=hunter2\"], type: Opaque}\n";
        let t = tree(&[
            (
                "platforms/p/platform.yaml",
                &platform_yaml(ENVS, PROJECTS)
                    .replace("      parameters: {replicas: 2}\n", "")
                    .replace(
                        "        prod: {parameters: {replicas: 4}}\n",
                        "        prod: {}\n",
                    )
                    .replace("  parameters: {domain: example.com}\n", ""),
            ),
            ("components/a/component.yaml", comp),
            ("components/a/conf/app.properties", "a=1\n"),
            ("components/a/conf/other.txt", "other"),
            ("components/a/conf/x.env", "X=1\nY=two\n"),
        ]);
        let lp = load(
            &RealFs,
            &t.path().join("platforms/p"),
            &LoadOptions {
                root: Some(t.path()),
                ..Default::default()
            },
        )
        .unwrap();
        let p = crate::validate::validate(lp).unwrap();
        let mut plans = evaluate(&p, &Selection::default()).unwrap();
        let out = render(&mut plans, &p.sources, &RealFs, &|_, r| {
            r().map(Rendered::into_owned)
        })
        .unwrap();
        let cm = out[0]
            .resources
            .iter()
            .find(|r| r.kind() == "ConfigMap")
            .unwrap();
        assert_eq!(cm.value["data"]["app.properties"], "a=1\n");
        assert_eq!(cm.value["data"]["key.txt"], "other");
        assert_eq!(cm.value["data"]["Y"], "two");
        let secret = out[0]
            .resources
            .iter()
            .find(|r| r.kind() == "Secret")
            .unwrap();
        assert_eq!(secret.value["data"]["PASSWORD"], "aHVudGVyMg==");
        assert!(
            secret.name().starts_with("s-"),
            "hash suffix: {}",
            secret.name()
        );
    }

    #[test]
    fn duplicate_resources_are_an_error() {
        let comp = HEAD.replace("  - configMapGenerator", "  - resources: [{apiVersion: v1, kind: ServiceAccount, metadata: {name: a}}]\n  - configMapGenerator");
        let errs = rendered(&comp).unwrap_err();
        assert_eq!(errs.len(), 1, "{errs:?}");
        // Both inline resources, at their names in component.yaml (lines 25 and 27).
        assert!(
            errs[0].starts_with("components/a/component.yaml:26:")
                && errs[0].contains("two resources with id `ServiceAccount/a`")
                && errs[0].contains("first defined at components/a/component.yaml:25:"),
            "{errs:?}"
        );
    }

    /// Repro A1, the same through a transformer: two objects the namespace transformer
    /// makes identical are named where each is defined.
    #[test]
    fn objects_a_namespace_makes_identical_are_named_where_defined() {
        let cm = |ns: &str| {
            format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\n  namespace: {ns}\n")
        };
        let comp = "apiVersion: kiln/v1alpha1\nkind: Component\nmetadata:\n  name: a\nspec:\n  parameters:\n    type: object\n    properties:\n      replicas: {type: integer, default: 1}\n      domain: {type: string}\n  generators:\n  - files: [a.yaml, b.yaml]\n  transformers:\n  - namespace: shared\n";
        let errs = rendered_with(
            comp,
            &[
                ("a.yaml", &cm("a")),
                ("b.yaml", &format!("# b\n{}", cm("b"))),
            ],
        );
        assert_eq!(errs.len(), 1, "{errs:?}");
        assert!(
            errs[0].contains("makes two objects `ConfigMap/shared/cfg` identical (defined at components/a/a.yaml:4:9 and components/a/b.yaml:5:9)"),
            "{errs:?}"
        );
    }

    /// Repro A2: an operation validate leaves to render (its `op` is a `${…}`) is reported
    /// at its `op`, not at the transformer's first line.
    #[test]
    fn an_invalid_json_patch_operation_is_reported_at_its_member() {
        let comp = format!(
            "{HEAD}  transformers:\n  - jsonPatch:\n      target: {{kind: Deployment}}\n      patch:\n      - {{op: \"${{params.domain}}\", path: /metadata/x, value: 1}}\n"
        );
        let errs = rendered(&comp).unwrap_err();
        assert_eq!(errs.len(), 1, "{errs:?}");
        assert!(
            errs[0].starts_with("components/a/component.yaml:31:14: jsonPatch failed")
                && errs[0].contains("unknown op `example.com`"),
            "{errs:?}"
        );
    }

    /// Renders platform `p` of `validate::tests` with component `a` and the manifest `files`
    /// beside it (paths relative to the component): the errors, empty when it renders. The
    /// tree lives until the render is done (an optional entry is read by the render).
    fn rendered_with(component: &str, files: &[(&str, &str)]) -> Vec<String> {
        let platform = platform_yaml(ENVS, PROJECTS);
        let named: Vec<(String, &str)> = files
            .iter()
            .map(|(n, t)| (format!("components/a/{n}"), *t))
            .collect();
        let mut all = vec![
            ("platforms/p/platform.yaml", platform.as_str()),
            ("components/a/component.yaml", component),
        ];
        all.extend(named.iter().map(|(n, t)| (n.as_str(), *t)));
        let t = crate::validate::tests::tree(&all);
        let opts = crate::load::LoadOptions {
            root: Some(t.path()),
            ..Default::default()
        };
        let lp = crate::load::load(&RealFs, &t.path().join("platforms/p"), &opts).unwrap();
        let p = crate::validate::validate(lp).unwrap();
        let mut plans = evaluate(&p, &Selection::default()).unwrap();
        match render(&mut plans, &p.sources, &RealFs, &|_, r| r().map(|_| ())) {
            Ok(_) => Vec::new(),
            Err(e) => e.errors.iter().map(|e| e.to_string()).collect(),
        }
    }

    /// Repro A1 (a newcomer's report): two manifests defining one object were reported at the
    /// `files:` generator only, naming neither manifest. The error names both, file and line
    /// of each `metadata.name`, whether load read the files or the render did (an optional
    /// entry is read per BuildPlan).
    #[test]
    fn duplicate_resources_name_both_manifests() {
        const SVC: &str =
            "apiVersion: v1\nkind: Service\nmetadata:\n  name: web\nspec:\n  ports: [{port: 80}]\n";
        let copy = format!(
            "# a copy\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {{name: other}}\n---\n{SVC}"
        );
        let comp = |files: &str| {
            format!(
                "apiVersion: kiln/v1alpha1\nkind: Component\nmetadata:\n  name: a\nspec:\n  parameters:\n    type: object\n    properties:\n      replicas: {{type: integer, default: 1}}\n      domain: {{type: string}}\n  generators:\n  - files: {files}\n"
            )
        };
        for files in [
            "[svc.yaml, copy.yaml]",
            "[svc.yaml, {path: copy.yaml, optional: true}]",
        ] {
            let errs = rendered_with(&comp(files), &[("svc.yaml", SVC), ("copy.yaml", &copy)]);
            assert_eq!(errs.len(), 1, "{files}: {errs:?}");
            assert!(
                errs[0].starts_with("components/a/copy.yaml:10:9: ")
                    && errs[0].contains("two resources with id `Service/web`")
                    && errs[0].contains("first defined at components/a/svc.yaml:4:9"),
                "{files}: {errs:?}"
            );
        }
    }
}
