//! Kargo and Argo CD generation: the platform's environment graph becomes a promotion
//! pipeline per project, and each (component, environment) an Argo CD Application that Kargo
//! is authorized to update.
//!
//! Where it sits: part of `emit`. Input is the validated
//! `Platform` itself (the one model: nothing is copied out of it)
//! with its BuildPlans and the [`KargoOptions`] render decided; output is a list of (relative
//! path, resources) that the
//! emit stage writes as YAML under the output root:
//!
//! ```text
//! <project>/kargo/project.yaml       Namespace, Project, ProjectConfig
//! <project>/kargo/<component>.yaml   Warehouse, then one Stage per environment
//! <project>/argocd/<component>.yaml  one Application per environment
//! ```
//!
//! Per (component, environment) the Stage's promotion reads the source repository at the
//! Freight's commit, pins the component's images in its rendered `kustomization.yaml`,
//! builds it, and commits the result into the project's write repository (a branch or a
//! path per environment, or a cluster repository), then has Argo CD sync to that commit.
//! With Kargo disabled, only Applications are emitted, tracking the rendered tree on the
//! source repository's branch.
//!
//! Invariant: output is a pure function of the input; names follow [`naming`]; no field that
//! Kargo v1.11 removed is ever emitted, and every server default that Kargo would add is
//! written out, so Argo CD never shows the objects out of sync.

mod argocd;
pub mod constraint;
pub mod expressions;
pub mod naming;
mod stage;
mod steps;
mod warehouse;

pub use warehouse::repo_url;

use crate::diag::{Errors, Loc, Sources};
use crate::evaluate::BuildPlan;
use crate::resource::Resource;
use crate::spec::{OutputMode, PromotionUnit};
use crate::validate::{ComponentInstance as Component, Environment, Platform, Project};
use miette::{Diagnostic, NamedSource, SourceSpan};
use serde_json::{Map, Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::ops::ControlFlow;
use thiserror::Error;

/// Kargo's API version.
pub const KARGO_API: &str = "kargo.akuity.io/v1alpha1";
/// Argo CD's API version.
pub const ARGOCD_API: &str = "argoproj.io/v1alpha1";
/// The label that lets Kargo adopt an existing namespace as a project (value `"true"`).
pub const PROJECT_LABEL: &str = "kargo.akuity.io/project";
/// The annotation that lets a Stage update an Application: `<project>:<stage>`.
pub const AUTHORIZED_STAGE: &str = "kargo.akuity.io/authorized-stage";
/// Argo CD's sync-wave annotation.
pub const SYNC_WAVE: &str = "argocd.argoproj.io/sync-wave";

/// Sync waves of the Kargo objects, so Argo CD applies them in dependency order.
pub mod wave {
    pub const NAMESPACE: &str = "0";
    pub const PROJECT: &str = "1";
    pub const PROJECT_CONFIG: &str = "2";
    pub const WAREHOUSE: &str = "3";
    pub const STAGE: &str = "4";
}

/// Where `kiln render` puts a component's rendered files inside the source repository (under
/// `spec.source.renderedPath`): the emit stage's layout, `Service`
/// (`<project>/<env>/<component>/`) or `Cluster` (`clusters/<cluster>/<project>/<env>/<component>/`).
pub use crate::artifact::Layout;

/// Image selection strategy of a Warehouse image subscription.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Strategy {
    /// Newest version within a semver `constraint` (the default).
    #[default]
    SemVer,
    /// Follow the digest of one mutable tag (`constraint` names the tag).
    Digest,
    /// Lexically greatest tag.
    Lexical,
    /// Most recently built image.
    NewestBuild,
}

impl Strategy {
    /// The value Kargo writes (`imageSelectionStrategy`).
    pub fn as_str(self) -> &'static str {
        match self {
            Strategy::SemVer => "SemVer",
            Strategy::Digest => "Digest",
            Strategy::Lexical => "Lexical",
            Strategy::NewestBuild => "NewestBuild",
        }
    }
}

/// What `render` decided beside the validated platform.
#[derive(Debug, Clone, Default)]
pub struct KargoOptions {
    /// The rendered tree's layout: where promotions read each component's folder.
    pub layout: Layout,
    /// Generate these projects only; empty: every project. A selection also leaves out the
    /// bootstrap objects, whose AppProject would miss the other projects.
    pub projects: Vec<String>,
    /// Cluster-scoped (group, kind)s of the rendered manifests, allowed by the AppProject
    /// (`crate::emit::cluster_kinds`, per rendered plan).
    pub cluster_kinds: BTreeSet<(String, String)>,
    /// Without Kargo: each environment's folders live on their own branch `<prefix><env>`,
    /// without the environment segment (`kiln publish --per-environment`), and the
    /// Applications track them there. `None`: everything on `spec.source.branch`.
    pub environment_branches: Option<String>,
}

/// One generation run: the validated platform (the one model; nothing is copied out of
/// it), its BuildPlans by (project, component, environment), and the options.
struct Input<'a> {
    platform: &'a Platform,
    plans: BTreeMap<(&'a str, &'a str, &'a str), &'a BuildPlan>,
    opts: &'a KargoOptions,
    /// The folders kiln itself writes on the source repository's branch ([`kiln_folders`]).
    kiln_folders: BTreeSet<String>,
}

impl<'a> Input<'a> {
    fn new(platform: &'a Platform, plans: &'a [BuildPlan], opts: &'a KargoOptions) -> Self {
        let plans = plans
            .iter()
            .map(|b| {
                (
                    (
                        b.project.as_str(),
                        b.component.as_str(),
                        b.environment.as_str(),
                    ),
                    b,
                )
            })
            .collect();
        Input {
            platform,
            plans,
            opts,
            kiln_folders: kiln_folders(platform, opts.layout),
        }
    }

    /// Kargo objects on; when off, only Applications tracking the source branch.
    fn enabled(&self) -> bool {
        self.platform.kargo.enabled
    }

    fn sources(&self) -> &'a Sources {
        &self.platform.sources
    }

    /// The projects to generate.
    fn projects(&self) -> impl Iterator<Item = &'a Project> + '_ {
        self.platform
            .projects
            .iter()
            .filter(|p| self.opts.projects.is_empty() || self.opts.projects.contains(&p.name))
    }

    /// The images of an instance after evaluation (any environment's plan: images do not
    /// vary by environment), else as its component declares them (a render that selected
    /// other environments or components still generates every Stage).
    fn images(&self, project: &Project, inst: &'a Component) -> &'a [crate::spec::Image] {
        self.platform
            .environments
            .iter()
            .find_map(|e| {
                self.plans
                    .get(&(project.name.as_str(), inst.name.as_str(), e.name.as_str()))
            })
            .map_or(inst.component.images.as_slice(), |b| b.images.as_slice())
    }

    /// The workload namespace of an instance in an environment: the plan's, else the
    /// environment's namespace pattern resolved.
    fn namespace(&self, project: &Project, inst: &Component, env: &Environment) -> String {
        if let Some(b) =
            self.plans
                .get(&(project.name.as_str(), inst.name.as_str(), env.name.as_str()))
        {
            return b.namespace.clone();
        }
        resolve_pattern(
            &env.namespace,
            &[
                ("project.name", &project.name),
                ("env.name", &env.name),
                ("env.tier", &env.tier),
                ("env.cluster", &env.cluster),
                ("platform.name", &self.platform.name),
                ("component.name", &inst.name),
            ],
        )
        .unwrap_or_else(|_| format!("{}-{}", project.name, env.name))
    }

    /// Auto-promotion of an environment (absent: off).
    fn auto_promotion(&self, env: &str) -> bool {
        self.platform
            .kargo
            .promotion
            .get(env)
            .is_some_and(|p| p.auto)
    }
}

/// Why the Kargo/Argo CD objects cannot be generated. Codes `kiln::kargo::<condition>`.
#[derive(Debug, Error, Diagnostic)]
pub enum KargoError {
    /// A project name is not a valid namespace name.
    #[error("{at}project name `{name}` is not a valid namespace name: {reason}")]
    #[diagnostic(
        code(kiln::kargo::invalid_project_name),
        help(
            "a Kargo project is a namespace: use a DNS-1123 label (lower-case letters, digits, `-`, at most 63 characters)"
        )
    )]
    InvalidProjectName {
        name: String,
        reason: String,
        at: String,
        #[source_code]
        src: Option<NamedSource<String>>,
        #[label("not a namespace name")]
        span: Option<SourceSpan>,
    },

    /// A generated object name is not a DNS-1123 label.
    #[error("{at}generated {kind} name `{name}` is invalid: {reason}")]
    #[diagnostic(
        code(kiln::kargo::invalid_generated_name),
        help(
            "the name is built from project, component and environment names (see docs/pipeline.md, the naming rule); shorten or rename them"
        )
    )]
    InvalidGeneratedName {
        kind: &'static str,
        name: String,
        reason: String,
        at: String,
        #[source_code]
        src: Option<NamedSource<String>>,
        #[label("used in this name")]
        span: Option<SourceSpan>,
    },

    /// Two (component, environment) pairs map to one Stage or Application name.
    #[error(
        "{at}{kind} name `{name}` is generated twice in project `{project}`: for {first} and {second}"
    )]
    #[diagnostic(
        code(kiln::kargo::duplicate_name),
        help(
            "names join component and environment with `-` (see docs/pipeline.md); rename a component or an environment so the joined names differ"
        )
    )]
    DuplicateName {
        kind: &'static str,
        name: String,
        project: String,
        first: String,
        second: String,
        at: String,
        #[source_code]
        src: Option<NamedSource<String>>,
        #[label("second use")]
        span: Option<SourceSpan>,
    },

    /// An image `constraint` is not a semver constraint Kargo can parse.
    #[error(
        "{at}image `{image}` of component `{component}`: constraint `{constraint}` does not parse: {message}"
    )]
    #[diagnostic(
        code(kiln::kargo::constraint_invalid),
        help(
            "use Masterminds/semver syntax, e.g. `^1.4.0`, `~1.2`, `>=1.0 <2.0`, `1.x`, `^1 || ^2`"
        )
    )]
    ConstraintInvalid {
        component: String,
        image: String,
        constraint: String,
        message: String,
        at: String,
        #[source_code]
        src: Option<NamedSource<String>>,
        #[label("invalid constraint")]
        span: Option<SourceSpan>,
    },

    /// An image repository cannot be a Kargo image subscription `repoURL`.
    #[error(
        "{at}image `{image}` of component `{component}`: repository `{repository}` is not a valid image repository"
    )]
    #[diagnostic(
        code(kiln::kargo::image_repository_invalid),
        help(
            "write `[registry[:port]/]path` with lower-case path segments, e.g. `ghcr.io/acme/api`"
        )
    )]
    ImageRepositoryInvalid {
        component: String,
        image: String,
        repository: String,
        at: String,
        #[source_code]
        src: Option<NamedSource<String>>,
        #[label("invalid repository")]
        span: Option<SourceSpan>,
    },

    /// A digest-pinned image has no tag for Kargo to follow.
    #[error(
        "{at}image `{image}` of component `{component}` is pinned by digest but names no tag to follow"
    )]
    #[diagnostic(
        code(kiln::kargo::digest_tag_missing),
        help(
            "set `constraint` to the mutable tag whose digest Kargo should follow (e.g. `stable`), or give a `tag`"
        )
    )]
    DigestTagMissing {
        component: String,
        image: String,
        at: String,
        #[source_code]
        src: Option<NamedSource<String>>,
        #[label("no tag to follow")]
        span: Option<SourceSpan>,
    },

    /// A Digest image's constraint is not a tag Kargo could look up.
    #[error(
        "{at}image `{image}` of component `{component}`: `strategy: Digest` follows one mutable tag, but constraint `{constraint}` is not a valid OCI tag"
    )]
    #[diagnostic(
        code(kiln::kargo::digest_constraint_not_tag),
        help(
            "under Digest, Kargo asks the registry for the constraint as a literal tag; name a tag such as `latest`, or drop `strategy: Digest` to follow a semver range by digest"
        )
    )]
    DigestConstraintNotTag {
        component: String,
        image: String,
        constraint: String,
        at: String,
        #[source_code]
        src: Option<NamedSource<String>>,
        #[label("not a tag")]
        span: Option<SourceSpan>,
    },

    /// Kargo is enabled but the platform names no source repository.
    #[error("Kargo is enabled but `spec.source.repoURL` is not set")]
    #[diagnostic(
        code(kiln::kargo::source_repo_missing),
        help(
            "Warehouses watch the repository that holds the rendered tree: set `spec.source.repoURL`"
        )
    )]
    SourceRepoMissing,

    /// Kargo is enabled but a project has no write repository.
    #[error("{at}project `{project}` has no `output`: Kargo promotions need a write repository")]
    #[diagnostic(
        code(kiln::kargo::output_missing),
        help("add `output: {{repoURL: …, mode: branch-per-environment}}` to the project")
    )]
    OutputMissing {
        project: String,
        at: String,
        #[source_code]
        src: Option<NamedSource<String>>,
        #[label("no output")]
        span: Option<SourceSpan>,
    },

    /// A pattern uses a reference that is not available there.
    #[error("{at}`{pattern}` uses unknown reference `{reference}`")]
    #[diagnostic(
        code(kiln::kargo::unknown_reference),
        help(
            "output patterns may use ${{project.name}}, ${{env.name}}, ${{env.tier}}, ${{env.cluster}}, ${{platform.name}}"
        )
    )]
    UnknownReference {
        pattern: String,
        reference: String,
        at: String,
        #[source_code]
        src: Option<NamedSource<String>>,
        #[label("here")]
        span: Option<SourceSpan>,
    },

    /// A resolved branch name is not valid.
    #[error("{at}project `{project}`, environment `{environment}`: {reason}")]
    #[diagnostic(
        code(kiln::kargo::invalid_branch),
        help(
            "branch names start with a letter or digit and use letters, digits, `.`, `_`, `/`, `-`"
        )
    )]
    InvalidBranch {
        project: String,
        environment: String,
        reason: String,
        at: String,
        #[source_code]
        src: Option<NamedSource<String>>,
        #[label("this pattern")]
        span: Option<SourceSpan>,
    },

    /// Two promotions would write the same folder of the same branch.
    #[error("{at}{first} and {second} both write `{path}` on branch `{branch}` of `{repo}`")]
    #[diagnostic(
        code(kiln::kargo::write_path_collision),
        help(
            "each (component, environment) needs its own folder: use a branch per environment, or a path pattern with `${{env.name}}`"
        )
    )]
    WritePathCollision {
        first: String,
        second: String,
        path: String,
        branch: String,
        repo: String,
        at: String,
        #[source_code]
        src: Option<NamedSource<String>>,
        #[label("this output")]
        span: Option<SourceSpan>,
    },

    /// A resolved write path leaves the repository (`..` past its root).
    #[error(
        "{at}project `{project}`, environment `{environment}`: the write path `{path}` leaves the repository"
    )]
    #[diagnostic(
        code(kiln::kargo::write_path_outside_repository),
        help("a `pathPattern` is a folder inside the write repository: drop the leading `..`")
    )]
    WritePathOutsideRepository {
        project: String,
        environment: String,
        path: String,
        at: String,
        #[source_code]
        src: Option<NamedSource<String>>,
        #[label("this pattern")]
        span: Option<SourceSpan>,
    },

    /// A project writes into kiln's own rendered folders (any project's) on the watched branch.
    #[error(
        "{at}project `{project}` writes `{path}/` on branch `{branch}` of the source repository, inside kiln's rendered folders `{rendered}/`: its Warehouse excludes what it includes and never makes Freight, and each promotion would delete kiln's rendered input"
    )]
    #[diagnostic(
        code(kiln::kargo::write_path_in_rendered_tree),
        help(
            "write elsewhere: another repository or branch (`output.repoURL`, `output.branchPattern`), or a `pathPattern` outside every project's `spec.source.renderedPath`/<project>/ (Kargo's MatchesPaths makes Freight from a path included and not excluded, pkg/controller/git/commit/base_selector.go)"
        )
    )]
    WritePathInRenderedTree {
        project: String,
        path: String,
        branch: String,
        rendered: String,
        at: String,
        #[source_code]
        src: Option<NamedSource<String>>,
        #[label("writes into the rendered tree")]
        span: Option<SourceSpan>,
    },
}

/// A source snippet for an error: `(at-prefix, source, span)`. Built only when an error is
/// reported: it copies and scans the file, which per (component, environment) would make
/// generation quadratic in the size of `platform.yaml`.
fn snippet(
    sources: &Sources,
    loc: &Loc,
) -> (String, Option<NamedSource<String>>, Option<SourceSpan>) {
    if loc.file < sources.files().len() {
        let sn = sources.snippet(loc);
        (format!("{}: ", sn.at), Some(sn.src), sn.span)
    } else {
        (String::new(), None, None)
    }
}

/// Substitutes `${project.name}`, `${env.name}`, `${env.tier}`, `${env.cluster}`,
/// `${platform.name}` and `${component.name}` in an output pattern. `${{ … }}` (a Kargo
/// expression) is left alone.
///
/// Errors: the first unknown reference, as `Err(reference)`.
pub fn resolve_pattern(pattern: &str, values: &[(&str, &str)]) -> Result<String, String> {
    // The first problem from the left: an unknown reference, or a `${` nothing closes.
    let mut unknown: Option<(usize, String)> = None;
    let out = kiln_base::reference::replace(pattern, |r| {
        let found = values.iter().find(|(k, _)| *k == r.name());
        if found.is_none() && unknown.is_none() {
            unknown = Some((r.start, r.name().to_string()));
        }
        found.map(|(_, v)| v.to_string())
    });
    let unterminated = kiln_base::reference::unterminated(pattern);
    match (unknown, unterminated) {
        (Some((at, name)), open) if open.is_none_or(|o| at < o) => Err(name),
        (_, Some(open)) => Err(pattern[open..].to_string()),
        _ => Ok(out),
    }
}

/// A JSON object with `apiVersion`, `kind` and `metadata` filled in.
fn object(api_version: &str, kind: &str, metadata: Value, spec: Option<Value>) -> Resource {
    let mut m = Map::new();
    m.insert("apiVersion".into(), json!(api_version));
    m.insert("kind".into(), json!(kind));
    m.insert("metadata".into(), metadata);
    if let Some(s) = spec {
        m.insert("spec".into(), s);
    }
    Resource::new(Value::Object(m), None)
}

/// Where one (component, environment) is promoted to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// Write repository URL (resolved).
    pub repo_url: String,
    /// Branch in it.
    pub branch: String,
    /// The component's folder in that branch (no leading or trailing `/`).
    pub path: String,
}

/// One Stage/Application pair, resolved: the unit every builder works on.
#[derive(Debug, Clone)]
struct Pair<'a> {
    project: &'a Project,
    component: &'a Component,
    env: &'a Environment,
    stage: String,
    app: String,
    /// Path of the component's rendered folder in the source repository.
    src_path: String,
    /// Workload namespace.
    namespace: String,
    server: String,
    /// The instance's images after evaluation ([`Input::images`]).
    images: &'a [crate::spec::Image],
    /// `None` when Kargo is off.
    target: Option<Target>,
    /// Another Stage writes the same (repository, branch): `argocd-update` pins the
    /// Application to the pushed commit ([`pin_shared_branches`]).
    pin: bool,
}

/// The name the Stages of `component` of `project` are built from: the component (Stages
/// `<component>-<env>`), or the project when one Stage serves every component of an
/// environment (`project` and `environment-stage` modes: Stages `<project>-<env>`).
pub fn unit<'a>(project: &'a Project, component: &'a Component) -> &'a str {
    if project.promotion.stage_per_environment() {
        &project.name
    } else {
        &component.name
    }
}

/// Marks every pair whose write (repository, branch) is shared with another Stage, across
/// projects.
///
/// Why: `argocd-update` syncs the Application's `targetRevision` and then compares the sync
/// result's revision with `desiredRevision` by equality, retrying until the step times out
/// (`pkg/promotion/runner/builtin/argocd_updater.go` `mustPerformUpdate`, Kargo v1.11.2); the
/// Stage health check compares `status.sync.revision` the same way
/// (`pkg/health/checker/builtin/argocd.go`). On a branch that several Stages push to, the
/// head moves past each Stage's commit, so the Applications tracking the branch would end
/// Errored or Unhealthy. `updateTargetRevision: true` sets the Application's
/// `targetRevision` to the Stage's own commit (`applyArgoCDSourceUpdate`), which later pushes
/// by other Stages do not move.
fn pin_shared_branches(resolved: &mut [(&Project, Vec<Pair<'_>>)]) {
    // (repository, branch) → the (project, Stage)s pushing to it.
    let mut writers: BTreeMap<(String, String), BTreeSet<(String, String)>> = BTreeMap::new();
    let key = |t: &Target| (normalize_repo(&t.repo_url), t.branch.clone());
    for (project, pairs) in resolved.iter() {
        for p in pairs {
            if let Some(t) = &p.target {
                writers
                    .entry(key(t))
                    .or_default()
                    .insert((project.name.clone(), p.stage.clone()));
            }
        }
    }
    for (_, pairs) in resolved.iter_mut() {
        for p in pairs.iter_mut() {
            p.pin = p
                .target
                .as_ref()
                .is_some_and(|t| writers[&key(t)].len() > 1);
        }
    }
}

/// Whether `kustomize-set-image` pins `img` by digest (`imageFrom(...).Digest`) rather than
/// by tag: Digest selection always; SemVer selection whenever the image is pinned by
/// `digest` ("pinned by digest, following versions"), with or without a `tag`. Each Freight
/// image records both (`api/v1alpha1/stage_types.go` `Image`, Kargo v1.11.2).
///
/// An image pinned by tag *and* digest keeps its digest pin: Kargo's `kustomize-set-image`
/// writes the digest when one is given and the tag only otherwise, never both
/// (`pkg/promotion/runner/builtin/kustomize_image_setter.go` `buildTargetImagesFromConfig`),
/// so promoting the tag would drop the digest at the first promotion. After it the manifest
/// reads `<repo>@<digest>`; the tag stays in the Freight (`imageFrom(...).Tag`).
pub fn promotes_digest(img: &crate::spec::Image) -> bool {
    img.digest.is_some() || image_strategy(img) == Strategy::Digest
}

/// The selection strategy of a component image. Explicit `strategy` wins. Otherwise an image
/// pinned by digest (no `tag`) follows a mutable tag by digest only when its `constraint` is
/// a plain OCI tag (`latest`, `stable`) or absent; a semver range such as `~1.4` means
/// "pinned by digest, following versions": `SemVer`, promoted by digest. Under `Digest`,
/// Kargo asks the registry for the constraint as a literal tag
/// (`pkg/image/digest_selector.go` at v1.11.2), so a range there never makes Freight.
pub fn image_strategy(i: &crate::spec::Image) -> Strategy {
    match i.strategy {
        Some(crate::spec::ImageStrategy::Digest) => Strategy::Digest,
        Some(crate::spec::ImageStrategy::SemVer) => Strategy::SemVer,
        None if i.digest.is_some()
            && i.tag.is_none()
            && i.constraint
                .as_deref()
                .is_none_or(crate::validate::is_oci_tag) =>
        {
            Strategy::Digest
        }
        None => Strategy::SemVer,
    }
}

/// Environments ordered so that each comes after its upstreams (ties in declared order).
/// Validate has proven that every upstream exists and that `from` has no cycle
/// (`kiln::validate::unknown_environment`, `environment_cycle`); were one left, its
/// environments would come last rather than loop.
fn promotion_order(platform: &Platform) -> Vec<&Environment> {
    let envs = &platform.environments;
    let mut done: BTreeSet<&str> = BTreeSet::new();
    let mut out = Vec::new();
    while out.len() < envs.len() {
        let before = out.len();
        for e in envs {
            if !done.contains(e.name.as_str()) && e.from.iter().all(|f| done.contains(f.as_str())) {
                done.insert(&e.name);
                out.push(e);
            }
        }
        if out.len() == before {
            out.extend(envs.iter().filter(|e| !done.contains(e.name.as_str())));
            break;
        }
    }
    out
}

/// Generates the Kargo and Argo CD objects of every project, grouped by output file (see the
/// module docs for the paths).
///
/// Input: the validated platform and its BuildPlans (which give each instance's resolved
/// namespace and images; instances without a plan fall back to the environment's namespace
/// pattern and the component's images as written).
///
/// Errors (all together): [`KargoError`] — invalid project or generated names, duplicate
/// Stage or Application names, unparsable image constraints, a missing source or write
/// repository while Kargo is enabled, colliding write paths.
pub fn emit_kargo(
    platform: &Platform,
    plans: &[BuildPlan],
    opts: &KargoOptions,
) -> Result<Vec<(String, Vec<Resource>)>, Errors<KargoError>> {
    let mut files = Vec::new();
    emit_kargo_each(platform, plans, opts, &mut |path, objects| {
        files.push((path, objects))
    })?;
    Ok(files)
}

/// [`emit_kargo`], handing each file's objects to `each` as soon as they are generated, in
/// the same order, instead of collecting them: a caller that serializes each file at once
/// never holds the objects of every Stage and Application (2.6 GB at 100,000 BuildPlans,
/// against 350 MB of YAML).
///
/// Errors: as [`emit_kargo`]; `each` may have been called for some files before them.
pub fn emit_kargo_each(
    platform: &Platform,
    plans: &[BuildPlan],
    opts: &KargoOptions,
    each: &mut dyn FnMut(String, Vec<Resource>),
) -> Result<(), Errors<KargoError>> {
    generate(
        platform,
        plans,
        opts,
        KARGO_PIECE,
        &|path, objects| (path, objects),
        &mut |files| {
            for (path, objects) in files {
                each(path, objects);
            }
            ControlFlow::Continue(())
        },
    )
}

/// [`emit_kargo`], serialized: each file as a YAML stream (kubectl kustomize style,
/// [`crate::yaml::to_yaml_stream`]) under `prefix` (e.g. `""` or `"deploy/"`), handed to
/// `each` a piece of at most `piece` files at a time, in [`emit_kargo`]'s order, as soon
/// as the piece is generated (issue 38, item 8). The files of a piece are generated and
/// printed in parallel on rayon's pool, each on its own, and put back in order before
/// `each` sees them: the pieces are the same whatever thread made each file. A caller that
/// writes each piece (`kiln render`) never holds the 350 MB of YAML of 10,000 × 10 at once;
/// `each` returning [`ControlFlow::Break`] stops the generation (SIGINT during the write).
///
/// Errors: as [`emit_kargo`], every one found in the pieces generated; `each` may have
/// been called for some pieces before them.
pub fn emit_pieces(
    platform: &Platform,
    plans: &[BuildPlan],
    opts: &KargoOptions,
    prefix: &str,
    piece: usize,
    each: &mut dyn FnMut(Vec<(String, Vec<u8>)>) -> ControlFlow<()>,
) -> Result<(), Errors<KargoError>> {
    let print = |path: String, resources: Vec<Resource>| {
        let values: Vec<Value> = resources.into_iter().map(|r| r.value).collect();
        let yaml = crate::yaml::to_yaml_stream(&values);
        (format!("{prefix}{path}"), yaml.into_bytes())
    };
    generate(platform, plans, opts, piece, &print, each)
}

/// [`emit_pieces`] collected into `set`.
///
/// Errors: as [`emit_kargo`]; `set` is untouched on error.
pub fn emit_into(
    set: &mut crate::artifact::ArtifactSet,
    prefix: &str,
    platform: &Platform,
    plans: &[BuildPlan],
    opts: &KargoOptions,
) -> Result<(), Errors<KargoError>> {
    let mut printed = Vec::new();
    emit_pieces(platform, plans, opts, prefix, KARGO_PIECE, &mut |files| {
        printed.push(files);
        ControlFlow::Continue(())
    })?;
    for (path, bytes) in printed.into_iter().flatten() {
        set.insert(path, bytes);
    }
    Ok(())
}

/// How many files [`emit_kargo_each`] and [`emit_into`] generate at once: enough that both
/// cores share a piece's work, few enough that a piece's objects (about 17 KB of YAML a file
/// at 10,000 × 10, several times that as objects) stay a few tens of MB.
pub const KARGO_PIECE: usize = 1024;

/// One project's files to generate, prepared on the calling thread: its pairs looked up by
/// instance and by component name, and its promotion units. Shared by its files' [`Job`]s.
struct Prepared<'r, 'a> {
    project: &'a Project,
    pairs: &'r [Pair<'a>],
    /// Each instance's pairs, by the instance's address: scanning every pair of the project
    /// for each instance was quadratic in the instances of one project (issue 39, item 11).
    by_instance: BTreeMap<usize, Vec<&'r Pair<'a>>>,
    by_name: BTreeMap<&'a str, Vec<&'r Pair<'a>>>,
    /// The promotion units, each with its file: each component, or the whole project (one
    /// Warehouse, or one per component in `environment-stage` mode).
    units: Vec<(&'a str, Vec<&'a Component>)>,
}

impl<'r, 'a> Prepared<'r, 'a> {
    fn new(project: &'a Project, pairs: &'r [Pair<'a>]) -> Self {
        let mut by_instance: BTreeMap<usize, Vec<&Pair<'_>>> = BTreeMap::new();
        let mut by_name: BTreeMap<&str, Vec<&Pair<'_>>> = BTreeMap::new();
        for p in pairs {
            by_instance.entry(address(p.component)).or_default().push(p);
            by_name
                .entry(p.component.name.as_str())
                .or_default()
                .push(p);
        }
        let units = match project.promotion {
            PromotionUnit::Component => project
                .components
                .iter()
                .map(|c| (c.name.as_str(), vec![c]))
                .collect(),
            PromotionUnit::Project | PromotionUnit::EnvironmentStage => {
                vec![(project.name.as_str(), project.components.iter().collect())]
            }
        };
        Prepared {
            project,
            pairs,
            by_instance,
            by_name,
            units,
        }
    }

    /// The pairs of the instance `c`.
    fn pairs_of(&self, c: &Component) -> Vec<&'r Pair<'a>> {
        self.by_instance
            .get(&address(c))
            .into_iter()
            .flatten()
            .copied()
            .collect()
    }
}

/// An instance's identity (two instances of one component may share a name across
/// projects, never an address).
fn address(c: &Component) -> usize {
    std::ptr::from_ref(c).addr()
}

/// One Kargo or Argo CD file, generated on its own, on any thread.
#[derive(Clone, Copy)]
enum Job<'p, 'r, 'a> {
    /// `<project>/kargo/project.yaml`.
    Project(&'p Prepared<'r, 'a>),
    /// `<project>/kargo/<unit>.yaml`: the Warehouses and Stages of the project's `n`th unit.
    Unit(&'p Prepared<'r, 'a>, usize),
    /// `<project>/argocd/<component>.yaml`: the Applications of the project's `n`th
    /// component.
    Applications(&'p Prepared<'r, 'a>, usize),
    /// The bootstrap AppProject (none for Argo CD's `default`).
    AppProject(&'r [(&'a Project, Vec<Pair<'a>>)]),
    /// The bootstrap root Application.
    Root(&'r [(&'a Project, Vec<Pair<'a>>)]),
}

impl Job<'_, '_, '_> {
    /// The job's file (path, objects), if it has one, and its errors.
    fn run(
        self,
        input: &Input<'_>,
        order: &[&Environment],
    ) -> (Option<(String, Vec<Resource>)>, Vec<KargoError>) {
        let mut errors = Vec::new();
        let file = match self {
            Job::Project(p) => Some((
                format!("{}/kargo/project.yaml", p.project.name),
                project_objects(input, p.project, p.pairs),
            )),
            Job::Unit(p, n) => {
                let (unit, components) = (p.units[n].0, &p.units[n].1);
                let mine: Vec<&Pair<'_>> = components.iter().flat_map(|c| p.pairs_of(c)).collect();
                let mut objects = Vec::new();
                // The Warehouses: the unit's own, or one per component.
                let warehouses: Vec<(&str, Vec<&Component>, Vec<&Pair<'_>>)> =
                    if p.project.promotion == PromotionUnit::EnvironmentStage {
                        components
                            .iter()
                            .map(|c| (c.name.as_str(), vec![*c], p.pairs_of(c)))
                            .collect()
                    } else {
                        vec![(unit, components.clone(), mine.clone())]
                    };
                for (name, of, pairs) in warehouses {
                    match warehouse::warehouse(input, p.project, name, &of, &pairs) {
                        Ok(w) => objects.push(w),
                        Err(mut e) => errors.append(&mut e),
                    }
                }
                for env in order {
                    let at_env: Vec<&Pair<'_>> = mine
                        .iter()
                        .copied()
                        .filter(|p| p.env.name == env.name)
                        .collect();
                    if !at_env.is_empty() {
                        objects.push(stage::stage(input, unit, &at_env));
                    }
                }
                Some((format!("{}/kargo/{unit}.yaml", p.project.name), objects))
            }
            Job::Applications(p, n) => {
                let c = &p.project.components[n];
                let apps: Vec<Resource> = p
                    .by_name
                    .get(c.name.as_str())
                    .into_iter()
                    .flatten()
                    .map(|pair| argocd::application(input, pair))
                    .collect();
                Some((format!("{}/argocd/{}.yaml", p.project.name, c.name), apps))
            }
            Job::AppProject(resolved) => argocd::app_project(input, resolved).map(|p| {
                (
                    format!("{}/appproject.yaml", argocd::BOOTSTRAP_DIR),
                    vec![p],
                )
            }),
            Job::Root(resolved) => Some((
                format!("{}/root.yaml", argocd::BOOTSTRAP_DIR),
                vec![argocd::root_application(input, resolved)],
            )),
        };
        (file, errors)
    }
}

/// The generation behind [`emit_kargo_each`] and [`emit_pieces`]: names and write paths
/// resolved and checked across projects on the calling thread, then every file generated
/// on rayon's pool, `piece` files at a time, each turned into a `T` by `map` on the thread
/// that generated it; `each` takes each piece in file order (issue 38, item 8: this was
/// one thread, 8 s at 10,000 × 10, its YAML collected whole before the write). Errors are
/// kept in the order one thread would find them.
fn generate<T: Send>(
    platform: &Platform,
    plans: &[BuildPlan],
    opts: &KargoOptions,
    piece: usize,
    map: &(dyn Fn(String, Vec<Resource>) -> T + Sync),
    each: &mut dyn FnMut(Vec<T>) -> ControlFlow<()>,
) -> Result<(), Errors<KargoError>> {
    use rayon::prelude::*;
    let input = &Input::new(platform, plans, opts);
    let mut errors = Vec::new();
    let order = promotion_order(platform);
    if platform.source.repo_url.is_none() {
        if input.enabled() {
            errors.push(KargoError::SourceRepoMissing);
        }
        // Without a source repository there is nothing for Applications to track.
        return Errors::check(errors, || ());
    }
    // Application names share the Argo CD namespace and write folders may share a
    // repository: both are checked across projects.
    let mut seen = Seen::default();
    let mut resolved: Vec<(&Project, Vec<Pair<'_>>)> = Vec::new();
    let projects: Vec<&Project> = input.projects().collect();
    let drafted: Vec<Vec<Draft<'_>>> = projects
        .par_iter()
        .map(|project| drafts(input, project, &order))
        .collect();
    for (project, drafts) in projects.into_iter().zip(drafted) {
        if let Some(reason) = crate::names::dns1123_label(&project.name) {
            let (at, src, span) = snippet(input.sources(), &project.loc.join("name"));
            errors.push(KargoError::InvalidProjectName {
                name: project.name.clone(),
                reason,
                at,
                src,
                span,
            });
            continue;
        }
        if input.enabled() && project.output.is_none() {
            let (at, src, span) = snippet(input.sources(), &project.loc);
            errors.push(KargoError::OutputMissing {
                project: project.name.clone(),
                at,
                src,
                span,
            });
            continue;
        }
        let pairs = pairs(input, project, drafts, &mut seen, &mut errors);
        resolved.push((project, pairs));
    }
    pin_shared_branches(&mut resolved);
    let prepared: Vec<Prepared<'_, '_>> = resolved
        .iter()
        .map(|(project, pairs)| Prepared::new(project, pairs))
        .collect();
    let mut jobs = Vec::new();
    for p in &prepared {
        if input.enabled() {
            jobs.push(Job::Project(p));
            jobs.extend((0..p.units.len()).map(|n| Job::Unit(p, n)));
        }
        jobs.extend((0..p.project.components.len()).map(|n| Job::Applications(p, n)));
    }
    if opts.projects.is_empty() {
        jobs.push(Job::AppProject(&resolved));
        jobs.push(Job::Root(&resolved));
    }
    for jobs in jobs.chunks(piece.max(1)) {
        let done: Vec<(Option<T>, Vec<KargoError>)> = jobs
            .par_iter()
            .map(|job| {
                let (file, errors) = job.run(input, &order);
                (file.map(|(path, objects)| map(path, objects)), errors)
            })
            .collect();
        let mut files = Vec::with_capacity(done.len());
        for (file, mut found) in done {
            files.extend(file);
            errors.append(&mut found);
        }
        if each(files).is_break() {
            break;
        }
    }
    Errors::check(errors, || ())
}

/// Names and write folders already taken, across projects: who took them. Only looked up,
/// never iterated (the errors come in the spec's order): hash maps, as a B-tree of 100,000
/// names compared their shared prefixes for most of a second of one thread.
#[derive(Default)]
struct Seen {
    applications: rustc_hash::FxHashMap<String, String>,
    writes: rustc_hash::FxHashMap<(String, String, String), String>,
}

/// One (component, environment) of a project as [`drafts`] works it out, before the checks
/// across pairs and projects ([`pairs`]).
struct Draft<'a> {
    /// Its target still unresolved (`None`): `target` holds it.
    pair: Pair<'a>,
    /// "component `c` of project `p` in environment `e`", for the errors.
    what: String,
    /// `None` when Kargo is off or the project names no output.
    target: Option<Result<Target, KargoError>>,
}

/// Every (component, environment) of `project`, in the spec's order: its names, folders,
/// namespace and write target. A function of the spec alone, so projects are drafted on
/// rayon's pool (one after another, 100,000 of them held one thread for most of a second).
fn drafts<'a>(
    input: &Input<'a>,
    project: &'a Project,
    order: &[&'a Environment],
) -> Vec<Draft<'a>> {
    let mut out = Vec::new();
    for component in &project.components {
        for env in order.iter().filter(|e| component.deployed_in(e)) {
            let what = format!(
                "component `{}` of project `{}` in environment `{}`",
                component.name, project.name, env.name
            );
            // Validate has proven that the cluster exists (`kiln::validate::unknown_cluster`).
            let server = input
                .platform
                .clusters
                .iter()
                .find(|c| c.name == env.cluster)
                .map(|c| c.server.clone())
                .unwrap_or_default();
            let target = if input.enabled() {
                project
                    .output
                    .as_ref()
                    .map(|o| target(input, project, o, component, env))
            } else {
                None
            };
            out.push(Draft {
                pair: Pair {
                    project,
                    component,
                    env,
                    stage: naming::stage_name(unit(project, component), &env.name),
                    app: naming::application_name(&project.name, &component.name, &env.name),
                    src_path: source_path(input, project, component, env),
                    namespace: input.namespace(project, component, env),
                    images: input.images(project, component),
                    server,
                    target: None,
                    pin: false,
                },
                what,
                target,
            });
        }
    }
    out
}

/// The pairs of `project` from its [`drafts`], checking names and write paths: against
/// each other and, through `seen`, against the projects before it. The errors come pair by
/// pair in the spec's order.
fn pairs<'a>(
    input: &Input<'a>,
    project: &'a Project,
    drafts: Vec<Draft<'a>>,
    seen: &mut Seen,
    errors: &mut Vec<KargoError>,
) -> Vec<Pair<'a>> {
    let mut out = Vec::with_capacity(drafts.len());
    let mut stage_names: rustc_hash::FxHashMap<String, String> = Default::default();
    let app_names = &mut seen.applications;
    let writes = &mut seen.writes;
    for Draft {
        mut pair,
        what,
        target,
    } in drafts
    {
        let component = pair.component;
        // Built on error only (see `snippet`).
        let here = || snippet(input.sources(), &component.loc);
        for (kind, name, seen) in [
            ("Stage", &pair.stage, &mut stage_names),
            ("Application", &pair.app, &mut *app_names),
        ] {
            if kind == "Stage"
                && (!input.enabled()
                    || (project.promotion.stage_per_environment() && seen.contains_key(name)))
            {
                // One Stage per (project, environment): checked with the first component
                // deployed there.
                continue;
            }
            if let Some(reason) = crate::names::dns1123_label(name) {
                let (at, src, span) = here();
                errors.push(KargoError::InvalidGeneratedName {
                    kind,
                    name: name.clone(),
                    reason,
                    at,
                    src,
                    span,
                });
            }
            if let Some(first) = seen.get(name) {
                let (at, src, span) = here();
                errors.push(KargoError::DuplicateName {
                    kind,
                    name: name.clone(),
                    project: project.name.clone(),
                    first: first.clone(),
                    second: what.clone(),
                    at,
                    src,
                    span,
                });
            } else {
                seen.insert(name.clone(), what.clone());
            }
        }
        let target = match target {
            Some(Ok(t)) => {
                let key = (
                    normalize_repo(&t.repo_url),
                    t.branch.clone(),
                    t.path.clone(),
                );
                if let Some(first) = writes.get(&key) {
                    let (at, src, span) = snippet(input.sources(), &project.loc.join("output"));
                    errors.push(KargoError::WritePathCollision {
                        first: first.clone(),
                        second: what.clone(),
                        path: t.path.clone(),
                        branch: t.branch.clone(),
                        repo: t.repo_url.clone(),
                        at,
                        src,
                        span,
                    });
                } else {
                    writes.insert(key, what.clone());
                }
                Some(t)
            }
            Some(Err(e)) => {
                errors.push(e);
                None
            }
            None => None,
        };
        if let Some(t) = &target
            && let Some(rendered) = rendered_overlap(input, t)
            && !errors.iter().any(|e| {
                matches!(e, KargoError::WritePathInRenderedTree { project: p, .. } if *p == project.name)
            })
        {
            let field = if project.output.as_ref().is_some_and(|o| o.path_pattern.is_some()) {
                project.loc.join("output").join("pathPattern")
            } else {
                project.loc.join("output")
            };
            let (at, src, span) = snippet(input.sources(), &field);
            errors.push(KargoError::WritePathInRenderedTree {
                project: project.name.clone(),
                path: t.path.clone(),
                branch: t.branch.clone(),
                rendered: rendered.to_string(),
                at,
                src,
                span,
            });
        }
        pair.target = target;
        out.push(pair);
    }
    out
}

/// The folders kiln writes on the source repository's watched branch, every project's
/// (not only the selected ones): `<renderedPath>/<project>` (its rendered folders in the
/// service layout, its `kargo/` and `argocd/` files in both),
/// `<renderedPath>/clusters/<cluster>/<project>` in the cluster layout, and
/// `<renderedPath>/bootstrap`.
fn kiln_folders(platform: &Platform, layout: Layout) -> BTreeSet<String> {
    let rendered = platform.source.rendered_path.as_str();
    let mut folders = BTreeSet::from([join_path(&[rendered, argocd::BOOTSTRAP_DIR])]);
    for project in &platform.projects {
        folders.insert(join_path(&[rendered, &project.name]));
        if layout == Layout::Cluster {
            for cluster in &platform.clusters {
                folders.insert(join_path(&[
                    rendered,
                    "clusters",
                    &cluster.name,
                    &project.name,
                ]));
            }
        }
    }
    folders
}

/// The folder of kiln's own (any project's, [`kiln_folders`]) that the write folder `t`
/// overlaps, one inside the other, on the source repository's watched branch; `None` when it
/// overlaps none. Every Warehouse's `includePaths` are inside these folders, and its
/// `excludePaths` are only its own project's write folders: Kargo's `MatchesPaths` makes
/// Freight from a commit touching a path that is included and not excluded
/// (`pkg/controller/git/commit/base_selector.go`, Kargo v1.11.2). Inside the project's own
/// folders the excludes cancel the includes (no Freight ever); inside another project's, each
/// promotion rewrites that project's rendered input and makes Freight for its Warehouse; and
/// each promotion's `delete` removes kiln's rendered input, which `kiln publish` then writes
/// back.
fn rendered_overlap<'i>(input: &'i Input<'_>, t: &Target) -> Option<&'i str> {
    let source = input
        .platform
        .source
        .repo_url
        .as_deref()
        .unwrap_or_default();
    if normalize_repo(&t.repo_url) != normalize_repo(source)
        || t.branch != input.platform.source.branch
    {
        return None;
    }
    let folders = &input.kiln_folders;
    // A kiln folder containing the write folder (or equal to it): one of its prefixes.
    let mut prefix = String::new();
    for segment in t.path.split('/') {
        if !prefix.is_empty() {
            prefix.push('/');
        }
        prefix.push_str(segment);
        if let Some(f) = folders.get(&prefix) {
            return Some(f);
        }
    }
    // A kiln folder inside the write folder: the first folder sorting after `path/`
    // (the whole tree when the write folder is the repository root).
    let below = if t.path.is_empty() {
        String::new()
    } else {
        format!("{}/", t.path)
    };
    folders
        .range(below.clone()..)
        .next()
        .filter(|f| f.starts_with(&below))
        .map(String::as_str)
}

/// A repository URL for comparisons: no trailing `/` or `.git`, lower-case host part.
pub fn normalize_repo(url: &str) -> String {
    let u = url.trim_end_matches('/');
    u.strip_suffix(".git").unwrap_or(u).to_ascii_lowercase()
}

/// `a/b/c` from non-empty parts, without duplicate or edge slashes.
fn join_path(parts: &[&str]) -> String {
    parts
        .iter()
        .flat_map(|p| p.split('/'))
        .filter(|s| !s.is_empty() && *s != ".")
        .collect::<Vec<_>>()
        .join("/")
}

/// `a/b/../c` → `a/c` (Go's `path.Clean` on a relative path, as Kargo's `filepath.Join`
/// cleans a step's `./out/<path>`); `None` when a `..` climbs past the root.
fn lexical_path(path: &str) -> Option<String> {
    let mut out: Vec<&str> = Vec::new();
    for segment in path.split('/') {
        match segment {
            "" | "." => {}
            ".." => {
                out.pop()?;
            }
            s => out.push(s),
        }
    }
    Some(out.join("/"))
}

/// The component's rendered folder in the source repository.
fn source_path(
    input: &Input<'_>,
    project: &Project,
    component: &Component,
    env: &Environment,
) -> String {
    let rendered = &input.platform.source.rendered_path;
    match input.opts.layout {
        Layout::Service => join_path(&[rendered, &project.name, &env.name, &component.name]),
        Layout::Cluster => join_path(&[
            rendered,
            "clusters",
            &env.cluster,
            &project.name,
            &env.name,
            &component.name,
        ]),
    }
}

/// Resolves the write repository, branch and folder of one (component, environment).
fn target(
    input: &Input<'_>,
    project: &Project,
    output: &crate::spec::ProjectOutput,
    component: &Component,
    env: &Environment,
) -> Result<Target, KargoError> {
    let values = [
        ("project.name", project.name.as_str()),
        ("env.name", env.name.as_str()),
        ("env.tier", env.tier.as_str()),
        ("env.cluster", env.cluster.as_str()),
        ("platform.name", input.platform.name.as_str()),
    ];
    let (branch_default, path_default) = match output.mode {
        OutputMode::BranchPerEnvironment => ("stage/${env.name}", ""),
        OutputMode::PathPerEnvironment => ("main", "${env.name}"),
        OutputMode::ClusterRepo => (
            "main",
            "clusters/${env.cluster}/${project.name}/${env.name}",
        ),
    };
    let at_output = |field: &str| project.loc.join("output").join(field);
    let resolve = |pattern: &str, field: &str| {
        resolve_pattern(pattern, &values).map_err(|reference| {
            let (at, src, span) = snippet(input.sources(), &at_output(field));
            KargoError::UnknownReference {
                pattern: pattern.to_string(),
                reference,
                at,
                src,
                span,
            }
        })
    };
    let repo_url = resolve(&output.repo_url, "repoURL")?;
    let branch = resolve(
        output.branch_pattern.as_deref().unwrap_or(branch_default),
        "branchPattern",
    )?;
    if let Some(reason) = naming::branch_problem(&branch) {
        let (at, src, span) = snippet(input.sources(), &at_output("branchPattern"));
        return Err(KargoError::InvalidBranch {
            project: project.name.clone(),
            environment: env.name.clone(),
            reason,
            at,
            src,
            span,
        });
    }
    let base = resolve(
        output.path_pattern.as_deref().unwrap_or(path_default),
        "pathPattern",
    )?;
    // Normalized first: Kargo writes `./out/<path>` cleaned, and every check (collisions,
    // kiln's folders) and the Warehouse's `excludePaths` compare the folder it really writes.
    let joined = join_path(&[&base, &component.name]);
    let Some(path) = lexical_path(&joined) else {
        let (at, src, span) = snippet(input.sources(), &at_output("pathPattern"));
        return Err(KargoError::WritePathOutsideRepository {
            project: project.name.clone(),
            environment: env.name.clone(),
            path: joined,
            at,
            src,
            span,
        });
    };
    Ok(Target {
        repo_url,
        branch,
        path,
    })
}

/// Namespace, Project and ProjectConfig of a project.
fn project_objects(input: &Input<'_>, project: &Project, pairs: &[Pair<'_>]) -> Vec<Resource> {
    let metadata = project.namespace_metadata.as_ref();
    let mut labels: Map<String, Value> = metadata
        .into_iter()
        .flat_map(|m| &m.labels)
        .map(|(k, v)| (k.clone(), json!(v)))
        .collect();
    // The string "true", not a boolean: label values are strings (case g04).
    labels.insert(PROJECT_LABEL.into(), json!("true"));
    let mut ns_annotations: Map<String, Value> = metadata
        .into_iter()
        .flat_map(|m| &m.annotations)
        .map(|(k, v)| (k.clone(), json!(v)))
        .collect();
    ns_annotations.insert(SYNC_WAVE.into(), json!(wave::NAMESPACE));
    let namespace = object(
        "v1",
        "Namespace",
        json!({ "name": project.name, "labels": labels, "annotations": ns_annotations }),
        None,
    );
    // Project has no spec since Kargo v1.7; its policies live in ProjectConfig.
    let kargo_project = object(
        KARGO_API,
        "Project",
        json!({ "name": project.name, "annotations": { SYNC_WAVE: wave::PROJECT } }),
        None,
    );
    let mut stages = BTreeSet::new();
    let policies: Vec<Value> = pairs
        .iter()
        .filter(|p| stages.insert(p.stage.as_str()))
        .map(|p| {
            json!({
                "stageSelector": { "name": p.stage },
                "autoPromotionEnabled": input.auto_promotion(&p.env.name),
            })
        })
        .collect();
    let config = object(
        KARGO_API,
        "ProjectConfig",
        json!({ "name": project.name, "namespace": project.name, "annotations": { SYNC_WAVE: wave::PROJECT_CONFIG } }),
        Some(json!({ "promotionPolicies": policies })),
    );
    vec![namespace, kargo_project, config]
}

/// Common labels of the objects generated for one (component, environment).
fn pair_labels(p: &Pair<'_>) -> Value {
    json!({
        "app.kubernetes.io/managed-by": "kiln",
        "kiln.dev/project": p.project.name,
        "kiln.dev/component": p.component.name,
        "kiln.dev/environment": p.env.name,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_resolve_known_references_and_leave_kargo_expressions() {
        let v = [("env.name", "dev"), ("project.name", "web")];
        assert_eq!(
            resolve_pattern("stage/${env.name}", &v).as_deref(),
            Ok("stage/dev")
        );
        assert_eq!(
            resolve_pattern("${project.name}/${env.name}/x", &v).as_deref(),
            Ok("web/dev/x")
        );
        assert_eq!(
            resolve_pattern("a/${{ vars.x }}/b", &v).as_deref(),
            Ok("a/${{ vars.x }}/b")
        );
        assert_eq!(
            resolve_pattern("${env.nmae}", &v),
            Err("env.nmae".to_string())
        );
        assert_eq!(
            resolve_pattern("x/${env.name", &v),
            Err("${env.name".to_string())
        );
    }

    #[test]
    fn paths_and_repository_urls_normalize() {
        assert_eq!(
            join_path(&["deploy/", "", "./web", "dev/"]),
            "deploy/web/dev"
        );
        assert_eq!(join_path(&["", ""]), "");
        assert_eq!(
            normalize_repo("https://GitHub.com/x/y.git/"),
            normalize_repo("https://github.com/x/y")
        );
    }
}
