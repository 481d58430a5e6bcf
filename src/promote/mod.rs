//! `kiln promote`: runs one Stage's promotion locally, with Kargo v1.11.2's step semantics,
//! against local stand-ins for the remote repositories — so a platform team can try a
//! promotion before applying anything.
//!
//! The platform is rendered in memory ([`crate::pipeline::build`]); the Stage,
//! its Warehouses and the Argo CD Applications are read back from the emitted objects
//! ([`Objects`]), so whatever Stage kiln emits is what runs. Freight comes from `--freight`
//! ([`assemble_freight`]); then [`runner::Promotion`] runs `promotionTemplate.spec.steps`.
//!
//! Submodules, each citing the Kargo source it implements:
//! - [`expr`] — `${{ }}` expressions (`pkg/expressions/json_templates.go`,
//!   `pkg/expressions/function/functions.go`);
//! - [`freight`] — Freight, `commitFrom`/`imageFrom` (`pkg/controller/freight/finder.go`,
//!   `pkg/urls/git.go`);
//! - [`steps`] — step configs and pure step logic (`pkg/promotion/runner/builtin/`
//!   `git_cloner.go`, `file_deleter.go`, `kustomize_image_setter.go`, `kustomize_builder.go`,
//!   `git_commiter.go`, `git_pusher.go`, `argocd_updater.go`, `argocd_revisions.go`);
//! - [`runner`] — the step loop (`pkg/promotion/local_orchestrator.go`,
//!   `pkg/promotion/evaluator.go`);
//! - [`repo`] — the only I/O: Git through libgit2 and the work directory
//!   (`pkg/controller/git/work_tree.go`, `remote_commit_integration.go`).
//!
//! Invariant: nothing outside the work directory and the mapped repositories is written; a
//! push only ever moves a branch forward (compare-and-swap, never forced).

pub mod bootstrap;
pub mod expr;
pub mod freight;
pub mod repo;
pub mod runner;
pub mod steps;

use crate::artifact::ArtifactSet;
use freight::{
    FreightArg, FreightCommit, FreightImage, FreightReference, FreightSet, Subscriptions,
};
use miette::Diagnostic;
use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeMap;
use thiserror::Error;

pub use runner::{Context, HealthCheck, Promotion, StepReport, StepStatus, check_health};

/// The live Argo CD Applications, by (namespace, name): kiln's emitted objects, then changed
/// by `argocd-update` steps as Kargo would patch them.
pub type Applications = BTreeMap<(String, String), Value>;

/// Errors before any step runs. Codes are `kiln::promote::<condition>`.
#[derive(Debug, Error, Diagnostic)]
pub enum PromoteError {
    #[error("no Stage `{stage}` among the emitted Kargo objects")]
    #[diagnostic(code(kiln::promote::unknown_stage), help("Stages kiln emits: {known}"))]
    UnknownStage { stage: String, known: String },

    #[error("Stage `{stage}` exists in several projects: {projects}")]
    #[diagnostic(code(kiln::promote::ambiguous_stage), help("pass --project"))]
    AmbiguousStage { stage: String, projects: String },

    #[error("Stage `{stage}` cannot run: {message}")]
    #[diagnostic(
        code(kiln::promote::invalid_stage),
        help("this is the Stage kiln emitted; `kiln validate` shows what Kargo would reject")
    )]
    InvalidStage { stage: String, message: String },

    #[error("the Freight does not fit Stage `{stage}`: {message}")]
    #[diagnostic(
        code(kiln::promote::freight),
        help(
            "pass `--freight image=<repo>:<tag>` for images the Stage's Warehouses subscribe to, `--freight commit=<sha>` for the source repository, or `--freight latest`"
        )
    )]
    Freight { stage: String, message: String },

    /// A Git subscription's repository could not be read (no network, no such path): the
    /// Freight is fine, the repository is missing, so the fix is `--repo-map`.
    #[error("cannot read the Freight's commit for Stage `{stage}`: {message}")]
    #[diagnostic(
        code(kiln::promote::repository_unavailable),
        help(
            "map the repository to a local clone with `--repo-map URL=PATH` (docs/pipeline.md, \"Trying a promotion\"); unmapped URLs are fetched over the network"
        )
    )]
    RepositoryUnavailable { stage: String, message: String },

    /// `--live FILE` does not hold Applications.
    #[error("cannot read the live Applications in {file}: {message}")]
    #[diagnostic(
        code(kiln::promote::live_applications),
        help("give the output of `kubectl get applications -n <argocd namespace> -o yaml`")
    )]
    Live { file: String, message: String },

    #[error("{message}")]
    #[diagnostic(
        code(kiln::promote::io),
        help("check the --repo-map paths and that the work directory is writable")
    )]
    Io { message: String },
}

/// How a promotion ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Phase {
    Succeeded,
    Failed,
    Running,
}

/// What `kiln promote` prints (`-o json` serializes it).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PromotionReport {
    pub project: String,
    pub stage: String,
    pub promotion: String,
    pub freight: Vec<FreightReference>,
    pub phase: Phase,
    pub steps: Vec<StepReport>,
    /// What kiln could not check and Kargo would (the CLI prints them on stderr).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

impl PromotionReport {
    /// The text form: one line per step, its outputs and any message.
    pub fn to_text(&self) -> String {
        let mut out = format!(
            "promotion {} of Stage {}/{}\n",
            self.promotion, self.project, self.stage
        );
        for r in &self.freight {
            for i in &r.images {
                let mut s = i.repo_url.clone();
                if !i.tag.is_empty() {
                    s = format!("{s}:{}", i.tag);
                }
                if !i.digest.is_empty() {
                    s = format!("{s}@{}", i.digest);
                }
                out.push_str(&format!("  freight {}: image {s}\n", r.origin));
            }
            for c in &r.commits {
                out.push_str(&format!(
                    "  freight {}: commit {} {}\n",
                    r.origin, c.repo_url, c.id
                ));
            }
        }
        for s in &self.steps {
            out.push_str(&format!(
                "{:<10} {} ({})\n",
                format!("{:?}", s.status),
                s.alias,
                s.uses
            ));
            if let Value::Object(o) = &s.outputs {
                for (k, v) in o {
                    let shown = match v {
                        Value::String(s) => s.replace('\n', "\\n"),
                        other => other.to_string(),
                    };
                    out.push_str(&format!("           {k}: {shown}\n"));
                }
            }
            for line in s.message.iter().flat_map(|m| m.lines()) {
                out.push_str(&format!("           {line}\n"));
            }
        }
        out.push_str(&format!("{:?}\n", self.phase));
        out
    }

    /// The first failed step: alias and why.
    pub fn failure(&self) -> Option<(&str, &str)> {
        self.steps
            .iter()
            .find(|s| matches!(s.status, StepStatus::Failed | StepStatus::Errored))
            .map(|s| (s.alias.as_str(), s.message.as_deref().unwrap_or("")))
    }
}

/// One promotion step as the Stage declares it.
#[derive(Debug, Clone, PartialEq)]
pub struct StepDef {
    pub uses: String,
    pub alias: String,
    pub config: Value,
    pub if_expr: Option<String>,
    pub vars: Vec<(String, String)>,
    pub continue_on_error: bool,
}

/// A Stage with what a promotion needs of it.
#[derive(Debug, Clone, PartialEq)]
pub struct StageDef {
    /// The Kargo project (the Stage's namespace).
    pub project: String,
    pub name: String,
    /// `promotionTemplate.spec.vars`, in order.
    pub vars: Vec<(String, String)>,
    pub steps: Vec<StepDef>,
    /// Warehouses of `requestedFreight[].origin`.
    pub requested: Vec<String>,
    /// `requestedFreight[].sources.stages`: upstream Stages, of every origin.
    pub upstream: Vec<String>,
    /// `requestedFreight[]`: each origin's upstream Stages (empty: `direct`).
    pub upstream_of: Vec<(String, Vec<String>)>,
}

fn s<'v>(v: &'v Value, pointer: &str) -> &'v str {
    v.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

fn var_list(v: Option<&Value>) -> Vec<(String, String)> {
    v.and_then(Value::as_array)
        .map(|vars| {
            vars.iter()
                .map(|x| (s(x, "/name").to_string(), value_text(x.get("value"))))
                .collect()
        })
        .unwrap_or_default()
}

fn value_text(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    }
}

/// One folder a Stage's promotion writes: a `kustomize-build` step's output, relative to the
/// pushed work tree (`git-push`'s `path`), on the checked-out branch, with the source folder
/// it builds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Written {
    /// The branch of the `git-clone` checkout that `git-push` pushes.
    pub branch: String,
    /// The folder in the write repository (`.` for its root).
    pub dir: String,
    /// The `kustomize-build` step's `path`, below the source checkout.
    pub source: String,
}

impl StageDef {
    /// `${{ vars.NAME }}` replaced by the Stage's value; other expressions stay as written.
    pub fn substitute(&self, text: &str) -> String {
        self.vars.iter().fold(text.to_string(), |t, (name, value)| {
            t.replace(&format!("${{{{ vars.{name} }}}}"), value)
        })
    }

    /// The repository and branch the Stage pushes: the `git-clone` checkout that `git-push`
    /// pushes (its `path`), and the clone's `repoURL` (vars substituted); empty strings when
    /// the Stage has no such pair.
    pub fn pushed(&self) -> (String, String) {
        let root = self
            .steps
            .iter()
            .find(|st| st.uses == "git-push")
            .map(|st| self.substitute(s(&st.config, "/path")))
            .unwrap_or_default();
        let root = root.trim_end_matches('/');
        self.steps
            .iter()
            .filter(|st| st.uses == "git-clone")
            .flat_map(|st| {
                st.config
                    .get("checkout")
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default()
                    .into_iter()
                    .map(move |c| (st, c))
            })
            .find(|(_, c)| self.substitute(s(c, "/path")).trim_end_matches('/') == root)
            .map(|(st, c)| {
                (
                    self.substitute(s(&st.config, "/repoURL")),
                    self.substitute(s(&c, "/branch")),
                )
            })
            .unwrap_or_default()
    }

    /// The folders the Stage's `kustomize-build` steps write into the write repository, in
    /// step order, each once.
    pub fn written(&self) -> Vec<Written> {
        let root = self
            .steps
            .iter()
            .find(|st| st.uses == "git-push")
            .map(|st| self.substitute(s(&st.config, "/path")))
            .unwrap_or_default();
        let root = root.trim_end_matches('/');
        let branch = self.pushed().1;
        let mut out: Vec<Written> = Vec::new();
        for st in self.steps.iter().filter(|st| st.uses == "kustomize-build") {
            let out_path = self.substitute(s(&st.config, "/outPath"));
            let rel = out_path
                .strip_prefix(root)
                .and_then(|r| r.strip_prefix('/'))
                .unwrap_or(&out_path);
            // `outPath` names a file when it ends in .yaml/.yml, else a directory of files.
            let dir = match rel.rsplit_once('/') {
                Some((d, f)) if f.ends_with(".yaml") || f.ends_with(".yml") => d.to_string(),
                None if rel.ends_with(".yaml") || rel.ends_with(".yml") => ".".to_string(),
                _ => rel.to_string(),
            };
            if !out.iter().any(|w| w.dir == dir) {
                out.push(Written {
                    branch: branch.clone(),
                    dir,
                    source: self.substitute(s(&st.config, "/path")),
                });
            }
        }
        out
    }

    /// Reads a Stage object.
    pub fn from_object(stage: &Value) -> Result<Self, PromoteError> {
        let name = s(stage, "/metadata/name").to_string();
        let invalid = |message: String| PromoteError::InvalidStage {
            stage: name.clone(),
            message,
        };
        let template = stage
            .pointer("/spec/promotionTemplate/spec")
            .ok_or_else(|| invalid("it has no spec.promotionTemplate.spec".into()))?;
        let mut steps = Vec::new();
        for (i, step) in template
            .get("steps")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            if step.get("task").is_some() {
                return Err(invalid(format!(
                    "step {} uses a PromotionTask, which kiln promote does not expand",
                    i + 1
                )));
            }
            let alias = match s(step, "/as") {
                "" => format!("step-{}", i + 1),
                a => a.to_string(),
            };
            steps.push(StepDef {
                uses: s(step, "/uses").to_string(),
                alias,
                config: step.get("config").cloned().unwrap_or(Value::Null),
                if_expr: step
                    .get("if")
                    .and_then(Value::as_str)
                    .filter(|c| !c.is_empty())
                    .map(str::to_string),
                vars: var_list(step.get("vars")),
                continue_on_error: step
                    .get("continueOnError")
                    .and_then(Value::as_bool)
                    .unwrap_or(false),
            });
        }
        if steps.is_empty() {
            return Err(invalid("its promotion template has no steps".into()));
        }
        let mut requested = Vec::new();
        let mut upstream = Vec::new();
        let mut upstream_of = Vec::new();
        for r in stage
            .pointer("/spec/requestedFreight")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if s(r, "/origin/kind") != "Warehouse" {
                return Err(invalid(format!(
                    "requested Freight of origin kind {:?}",
                    s(r, "/origin/kind")
                )));
            }
            requested.push(s(r, "/origin/name").to_string());
            let mine: Vec<String> = r
                .pointer("/sources/stages")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect();
            for n in &mine {
                if !upstream.contains(n) {
                    upstream.push(n.clone());
                }
            }
            upstream_of.push((s(r, "/origin/name").to_string(), mine));
        }
        Ok(StageDef {
            project: s(stage, "/metadata/namespace").to_string(),
            name,
            vars: var_list(template.get("vars")),
            steps,
            requested,
            upstream,
            upstream_of,
        })
    }
}

/// The Kargo and Argo CD objects of a render.
#[derive(Debug, Clone, Default)]
pub struct Objects {
    pub stages: Vec<Value>,
    pub warehouses: Vec<Value>,
    pub applications: Vec<Value>,
}

impl Objects {
    /// Every Stage, Warehouse and Application in the artifact set's YAML files.
    pub fn from_artifacts(set: &ArtifactSet) -> Result<Self, PromoteError> {
        let mut out = Objects::default();
        for (path, text) in Self::files(set) {
            let docs = crate::yaml::parse_stream(path, text).map_err(|e| PromoteError::Io {
                message: format!("{path}: {e}"),
            })?;
            for d in docs {
                match (s(&d, "/apiVersion"), s(&d, "/kind")) {
                    ("kargo.akuity.io/v1alpha1", "Stage") => out.stages.push(d),
                    ("kargo.akuity.io/v1alpha1", "Warehouse") => out.warehouses.push(d),
                    ("argoproj.io/v1alpha1", "Application") => out.applications.push(d),
                    _ => {}
                }
            }
        }
        Ok(out)
    }

    /// The YAML files of `set` that may hold Kargo or Argo CD objects, as text.
    pub fn files(set: &ArtifactSet) -> impl Iterator<Item = (&str, &str)> {
        set.files
            .iter()
            .filter(|(path, _)| path.ends_with(".yaml") || path.ends_with(".yml"))
            .filter_map(|(path, bytes)| {
                let text = std::str::from_utf8(bytes).ok()?;
                (text.contains("kargo.akuity.io/") || text.contains("argoproj.io/"))
                    .then_some((path.as_str(), text))
            })
    }

    /// The Stage `name`, in `project` when given.
    pub fn stage(&self, name: &str, project: Option<&str>) -> Result<StageDef, PromoteError> {
        let found: Vec<&Value> = self
            .stages
            .iter()
            .filter(|st| s(st, "/metadata/name") == name)
            .filter(|st| project.is_none_or(|p| s(st, "/metadata/namespace") == p))
            .collect();
        match found.as_slice() {
            [one] => StageDef::from_object(one),
            [] => Err(PromoteError::UnknownStage {
                stage: name.to_string(),
                known: self.stage_names().join(", "),
            }),
            many => Err(PromoteError::AmbiguousStage {
                stage: name.to_string(),
                projects: many
                    .iter()
                    .map(|st| s(st, "/metadata/namespace"))
                    .collect::<Vec<_>>()
                    .join(", "),
            }),
        }
    }

    /// `<project>/<stage>` of every Stage.
    pub fn stage_names(&self) -> Vec<String> {
        self.stages
            .iter()
            .map(|st| {
                format!(
                    "{}/{}",
                    s(st, "/metadata/namespace"),
                    s(st, "/metadata/name")
                )
            })
            .collect()
    }

    /// Every Stage, upstream ones first (Kahn's order over `sources.stages`, ties by name).
    pub fn stages_in_graph_order(&self) -> Result<Vec<StageDef>, PromoteError> {
        let mut all: Vec<StageDef> = self
            .stages
            .iter()
            .map(StageDef::from_object)
            .collect::<Result<_, _>>()?;
        all.sort_by(|a, b| (&a.project, &a.name).cmp(&(&b.project, &b.name)));
        let mut done: std::collections::BTreeSet<(String, String)> = Default::default();
        let mut out = Vec::new();
        while out.len() < all.len() {
            let before = out.len();
            for st in &all {
                let key = (st.project.clone(), st.name.clone());
                if done.contains(&key) {
                    continue;
                }
                if st
                    .upstream
                    .iter()
                    .all(|u| done.contains(&(st.project.clone(), u.clone())))
                {
                    done.insert(key);
                    out.push(st.clone());
                }
            }
            if out.len() == before {
                return Err(PromoteError::InvalidStage {
                    stage: "(graph)".into(),
                    message: "the Stages' upstream references form a cycle or name unknown Stages"
                        .into(),
                });
            }
        }
        Ok(out)
    }

    /// What each Warehouse of `project` subscribes to.
    pub fn subscriptions(&self, project: &str) -> BTreeMap<String, Subscriptions> {
        let mut out = BTreeMap::new();
        for w in self
            .warehouses
            .iter()
            .filter(|w| s(w, "/metadata/namespace") == project)
        {
            let mut subs = Subscriptions::default();
            for sub in w
                .pointer("/spec/subscriptions")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                if let Some(img) = sub.get("image") {
                    subs.images.push(freight::ImageSubscription {
                        repo_url: s(img, "/repoURL").to_string(),
                        strategy: s(img, "/imageSelectionStrategy").to_string(),
                        constraint: img
                            .get("constraint")
                            .and_then(Value::as_str)
                            .map(str::to_string),
                        strict_semvers: img
                            .get("strictSemvers")
                            .and_then(Value::as_bool)
                            .unwrap_or(true),
                    });
                }
                if let Some(git) = sub.get("git") {
                    subs.git.push((
                        s(git, "/repoURL").to_string(),
                        s(git, "/branch").to_string(),
                    ));
                    let list = |k: &str| -> Vec<String> {
                        git[k]
                            .as_array()
                            .into_iter()
                            .flatten()
                            .filter_map(Value::as_str)
                            .map(str::to_string)
                            .collect()
                    };
                    subs.git_paths.push(freight::PathFilter {
                        include: list("includePaths"),
                        exclude: list("excludePaths"),
                    });
                }
            }
            out.insert(s(w, "/metadata/name").to_string(), subs);
        }
        out
    }

    /// Where every Stage writes each component ([`crate::git::WriteLayout`]): the unit of a
    /// written folder is the source folder it builds, which kiln's emit layout names
    /// `…/<project>/<env>/<component>`. Stages that fail to read are left out (`kiln
    /// validate` reports them).
    pub fn write_layout(&self) -> crate::git::WriteLayout {
        let mut layout = crate::git::WriteLayout::default();
        for stage in &self.stages {
            let Ok(def) = StageDef::from_object(stage) else {
                continue;
            };
            for w in def.written() {
                let parts: Vec<&str> = w.source.trim_end_matches('/').rsplit('/').take(3).collect();
                let [component, environment, project] = parts[..] else {
                    continue;
                };
                layout.insert(
                    &w.branch,
                    &w.dir,
                    crate::git::Unit::Component {
                        project: project.to_string(),
                        environment: environment.to_string(),
                        component: component.to_string(),
                    },
                );
            }
        }
        layout
    }

    /// The Applications as Argo CD would hold them after `kubectl apply`.
    pub fn applications(&self) -> Applications {
        self.applications
            .iter()
            .map(|a| {
                let ns = match s(a, "/metadata/namespace") {
                    "" => steps::DEFAULT_ARGOCD_NAMESPACE.to_string(),
                    n => n.to_string(),
                };
                ((ns, s(a, "/metadata/name").to_string()), a.clone())
            })
            .collect()
    }
}

/// Live Applications (`kubectl get applications -o yaml`: a `List` with `items`, or a stream
/// of Application documents) from `text`, read from `file`.
pub fn parse_live_applications(file: &str, text: &str) -> Result<Vec<Value>, PromoteError> {
    let docs = crate::yaml::parse_stream(file, text).map_err(|e| PromoteError::Live {
        file: file.to_string(),
        message: e.to_string(),
    })?;
    let mut out = Vec::new();
    for d in docs {
        match s(&d, "/kind") {
            "List" | "ApplicationList" => {
                out.extend(d["items"].as_array().into_iter().flatten().cloned());
            }
            "Application" => out.push(d),
            other => {
                return Err(PromoteError::Live {
                    file: file.to_string(),
                    message: format!(
                        "a document of kind {other:?}: expected Applications or a List of them"
                    ),
                });
            }
        }
    }
    if let Some(a) = out.iter().find(|a| s(a, "/kind") != "Application") {
        return Err(PromoteError::Live {
            file: file.to_string(),
            message: format!("a List item of kind {:?}", s(a, "/kind")),
        });
    }
    Ok(out)
}

/// Whether the `ignoreDifferences` entry `e` names the Application `app`: group and kind
/// (Argo CD matches them as globs; kiln's entries are literal), and the name and namespace
/// when the entry gives them (argo-cd `util/argo/normalizers/diff_normalizer.go`
/// `ignoreNormalizer.Normalize`, Argo CD v3.5.1).
fn ignores(e: &Value, app: &Value) -> bool {
    let given = |k: &str, actual: &str| {
        e.get(k)
            .and_then(Value::as_str)
            .is_none_or(|v| v.is_empty() || v == actual)
    };
    given("group", "argoproj.io")
        && given("kind", "Application")
        && given("name", s(app, "/metadata/name"))
        && given("namespace", s(app, "/metadata/namespace"))
}

impl Objects {
    /// The Applications as Argo CD holds them after the root Application's next sync over the
    /// `live` ones: each emitted Application as Git has it, except that where an
    /// `ignoreDifferences` entry of the root (syncing with `RespectIgnoreDifferences=true`)
    /// names it, the live value stays (argo-cd `controller/sync.go`
    /// `normalizeTargetResources`, Argo CD v3.5.1: the ignored fields of the live object are
    /// copied into what is applied). The sync runs with the root as it is live, when `live`
    /// holds it (the root manages itself: its new spec counts from the sync after), else as
    /// Git has it. An Application that is not live yet is created as Git has it.
    pub fn applications_after_root_sync(&self, live: &[Value]) -> Applications {
        let key = |a: &Value| {
            let ns = match s(a, "/metadata/namespace") {
                "" => steps::DEFAULT_ARGOCD_NAMESPACE.to_string(),
                n => n.to_string(),
            };
            (ns, s(a, "/metadata/name").to_string())
        };
        let live: BTreeMap<(String, String), &Value> = live.iter().map(|a| (key(a), a)).collect();
        let respects = |root: &Value| {
            root["spec"]["syncPolicy"]["syncOptions"]
                .as_array()
                .is_some_and(|o| o.iter().any(|o| o == "RespectIgnoreDifferences=true"))
        };
        // kiln's roots: the Applications that sync the others from a directory in Git.
        let entries: Vec<&Value> = self
            .applications
            .iter()
            .filter(|root| root["spec"]["source"].get("directory").is_some())
            .map(|root| live.get(&key(root)).copied().unwrap_or(root))
            .filter(|root| respects(root))
            .flat_map(|root| {
                root["spec"]["ignoreDifferences"]
                    .as_array()
                    .into_iter()
                    .flatten()
            })
            .collect();
        let mut apps = self.applications();
        for (k, app) in apps.iter_mut() {
            let Some(current) = live.get(k) else {
                continue;
            };
            let matching: Vec<&&Value> = entries.iter().filter(|e| ignores(e, app)).collect();
            for e in matching {
                for pointer in e["jsonPointers"].as_array().into_iter().flatten() {
                    let Some(pointer) = pointer.as_str() else {
                        continue;
                    };
                    if let (Some(value), Some(target)) =
                        (current.pointer(pointer), app.pointer_mut(pointer))
                    {
                        *target = value.clone();
                    }
                }
            }
        }
        apps
    }
}

/// The newest image in the spec for a Warehouse's repository: the component's declared tag
/// and digest.
pub fn spec_images(platform: &crate::validate::Platform) -> BTreeMap<String, FreightImage> {
    let mut out = BTreeMap::new();
    for c in &platform.components {
        for img in &c.images {
            let repo = crate::kargo::repo_url(&img.repository);
            out.entry(repo.clone()).or_insert(FreightImage {
                repo_url: repo,
                tag: img.tag.clone().unwrap_or_default(),
                digest: img.digest.clone().unwrap_or_default(),
            });
        }
    }
    out
}

/// Builds the Freight of one promotion: for each requested Warehouse, each subscribed image
/// from `--freight image=…` (else the spec's), each subscribed Git repository at
/// `--freight commit=…` (else its branch head). Every `--freight image` must be subscribed.
pub fn assemble_freight(
    stage: &StageDef,
    objects: &Objects,
    spec: &BTreeMap<String, FreightImage>,
    args: &[FreightArg],
    git: &repo::Git<'_>,
    scratch: &std::path::Path,
) -> Result<FreightSet, PromoteError> {
    let err = |message: String| PromoteError::Freight {
        stage: stage.name.clone(),
        message,
    };
    let warehouses = objects.subscriptions(&stage.project);
    let explicit: Vec<&FreightImage> = args
        .iter()
        .filter_map(|a| match a {
            FreightArg::Image(i) => Some(i),
            _ => None,
        })
        .collect();
    let commit = args.iter().find_map(|a| match a {
        FreightArg::Commit(c) => Some(c.clone()),
        _ => None,
    });
    let target = target_origin(stage, &warehouses, &explicit, args).map_err(err)?;
    // Every image is checked before any repository is opened: a Freight the Warehouses
    // would never produce fails without touching the network.
    let mut used = vec![false; explicit.len()];
    let mut images_of = Vec::new();
    // The promoted Freight comes from one Warehouse (its origin); the Stage's Freight from
    // its other Warehouses is what earlier promotions left, which kiln cannot see.
    let origins: Vec<&String> = stage.requested.iter().filter(|w| **w == target).collect();
    for w in origins.iter().copied() {
        let Some(subs) = warehouses.get(w) else {
            return Err(err(format!(
                "requested Warehouse {w:?} is not among the emitted objects"
            )));
        };
        let mut images = Vec::new();
        for sub in &subs.images {
            let repo = &sub.repo_url;
            let given = explicit
                .iter()
                .position(|i| i.repo_url == *repo || crate::kargo::repo_url(&i.repo_url) == *repo);
            let image = match given {
                Some(k) => {
                    used[k] = true;
                    let image = FreightImage {
                        repo_url: repo.clone(),
                        ..explicit[k].clone()
                    };
                    if let Some(why) = sub.refuses(&image) {
                        return Err(err(format!(
                            "Warehouse {w} would never discover {repo}:{}: {why}",
                            image.tag
                        )));
                    }
                    image
                }
                None => spec.get(repo).cloned().ok_or_else(|| {
                    err(format!(
                        "no image for {repo} (Warehouse {w}): pass --freight image={repo}:<tag>"
                    ))
                })?,
            };
            images.push(image);
        }
        images_of.push(images);
    }
    // Kargo records each image's digest from the registry; kiln asks no registry, so an
    // image the Stage pins by digest needs one on the command line (or in the spec).
    let by_digest = digest_promoted(stage);
    if let Some(i) = images_of
        .iter()
        .flatten()
        .find(|i| i.digest.is_empty() && by_digest.contains(&i.repo_url))
    {
        return Err(err(format!(
            "Stage {} pins {} by digest, and the Freight's {}:{} has none: kiln asks no registry for it (Kargo's Warehouse would), so give `--freight image={}:{}@sha256:<digest>`",
            stage.name, i.repo_url, i.repo_url, i.tag, i.repo_url, i.tag
        )));
    }
    if let Some(k) = used.iter().position(|u| !u) {
        return Err(err(format!(
            "no requested Warehouse ({}) subscribes to image {}",
            origins
                .iter()
                .map(|w| w.as_str())
                .collect::<Vec<_>>()
                .join(", "),
            explicit[k].repo_url
        )));
    }
    let mut references = Vec::new();
    let mut n = 0;
    for (w, images) in origins.iter().copied().zip(images_of) {
        let subs = &warehouses[w];
        let mut commits = Vec::new();
        for (k, (repo_url, branch)) in subs.git.iter().enumerate() {
            n += 1;
            let repo = git
                .open_for_read(repo_url, &scratch.join(n.to_string()))
                .map_err(|message| PromoteError::RepositoryUnavailable {
                    stage: stage.name.clone(),
                    message,
                })?;
            let id = match &commit {
                Some(c) => repo
                    .revparse_single(c)
                    .and_then(|o| o.peel_to_commit())
                    .map_err(|_| err(format!("commit {c} not found in {repo_url}")))?
                    .id(),
                None => {
                    let head = repo::resolve_revision(
                        &repo,
                        if branch.is_empty() { "HEAD" } else { branch },
                    )
                    .ok_or_else(|| err(format!("branch {branch:?} not found in {repo_url}")))?;
                    // Kargo's NewestFromBranch takes the newest commit that changes a path
                    // the subscription selects, not the head (`newest_from_branch_selector.go`
                    // `selectCommits`).
                    let paths = subs.git_paths.get(k).cloned().unwrap_or_default();
                    if paths.is_empty() {
                        head
                    } else {
                        repo::newest_commit_changing(&repo, head, &|changed| paths.matches(changed))
                            .map_err(|message| err(format!("{repo_url}: {message}")))?
                            .ok_or_else(|| {
                                err(format!(
                                    "no commit on branch {branch:?} of {repo_url} changes a path Warehouse {w} selects (includePaths {:?}, excludePaths {:?}): it would make no Freight",
                                    paths.include, paths.exclude
                                ))
                            })?
                    }
                }
            };
            commits.push(FreightCommit {
                repo_url: repo_url.clone(),
                id: id.to_string(),
                branch: branch.clone(),
            });
        }
        references.push(FreightReference {
            origin: w.clone(),
            images,
            commits,
        });
    }
    if commit.is_some() && references.iter().all(|r| r.commits.is_empty()) {
        return Err(err(
            "`--freight commit=…` given, but no requested Warehouse subscribes to a Git repository"
                .into(),
        ));
    }
    Ok(FreightSet {
        requested: stage.requested.clone(),
        warehouses,
        references,
        target,
    })
}

/// The Warehouse the promoted Freight comes from: `--freight warehouse=<name>`, else the
/// Stage's only requested Warehouse, else the one requested Warehouse that subscribes to
/// every `--freight image` given.
fn target_origin(
    stage: &StageDef,
    warehouses: &BTreeMap<String, Subscriptions>,
    images: &[&FreightImage],
    args: &[FreightArg],
) -> Result<String, String> {
    let named: Vec<&String> = args
        .iter()
        .filter_map(|a| match a {
            FreightArg::Warehouse(w) => Some(w),
            _ => None,
        })
        .collect();
    match (named.as_slice(), stage.requested.as_slice()) {
        ([w], _) if stage.requested.contains(w) => return Ok((*w).clone()),
        ([w], _) => {
            return Err(format!(
                "Stage {} requests no Freight from Warehouse {w} (it requests {})",
                stage.name,
                stage.requested.join(", ")
            ));
        }
        ([_, _, ..], _) => {
            return Err("one promotion moves one Freight: give `--freight warehouse=` once".into());
        }
        ([], [one]) => return Ok(one.clone()),
        ([], _) => {}
    }
    let subscribes = |w: &&String| {
        !images.is_empty()
            && images.iter().all(|i| {
                warehouses.get(*w).is_some_and(|s| {
                    s.images.iter().any(|sub| {
                        sub.repo_url == i.repo_url
                            || crate::kargo::repo_url(&i.repo_url) == sub.repo_url
                    })
                })
            })
    };
    match stage
        .requested
        .iter()
        .filter(subscribes)
        .collect::<Vec<_>>()[..]
    {
        [one] => Ok(one.clone()),
        _ => Err(format!(
            "Stage {} requests Freight from several Warehouses ({}), and one promotion moves the Freight of one: name it with `--freight warehouse=<name>`",
            stage.name,
            stage.requested.join(", ")
        )),
    }
}

/// The name of the promotion's target Freight, as Kargo names it:
/// [`freight::generate_freight_id`]. Empty without Freight.
pub fn freight_name(freight: &FreightSet) -> String {
    freight
        .target_reference()
        .map(freight::generate_freight_id)
        .unwrap_or_default()
}

/// What `kiln promote` runs with.
pub struct PromoteOptions {
    pub stage: String,
    pub project: Option<String>,
    pub freight: Vec<FreightArg>,
    pub repo_map: repo::RepoMap,
    pub identity: crate::git::Identity,
    pub time: crate::git::CommitTime,
    pub auth: crate::git::RemoteAuth,
    /// An empty directory to work in (the CLI makes a temporary one).
    pub work_dir: std::path::PathBuf,
    /// The live Applications (`--live`): the promotion runs against them after the root
    /// Application's sync ([`Objects::applications_after_root_sync`]) instead of against
    /// Git's. `None`: Git's, as if just applied.
    pub live: Option<Vec<Value>>,
    /// The Freight was verified in the upstream Stages (`--assume-verified`): no warning.
    pub assume_verified: bool,
}

/// The warning for a Stage that takes the promoted Freight from upstream Stages when that
/// Freight was not verified in any of them: Kargo offers a Stage only Freight whose
/// `status.verifiedIn` names one of its `requestedFreight[].sources.stages` for the Freight's
/// origin (`api/v1alpha1/freight_types.go` `IsVerifiedIn`, Kargo v1.11.2). kiln's Stages
/// define no verification, so Kargo records Freight as verified in a Stage once a promotion
/// of it there has succeeded and the Stage is healthy; kiln sees the promotion in Git: a
/// commit on the upstream Stage's write branch whose message names the Freight and the Stage
/// (`freight: <name>`, `stage: <project>/<stage>`, written by kiln's `git-commit` step).
/// `None`: a root Stage for this origin, or a promotion found upstream.
pub fn unverified_warning(
    stage: &StageDef,
    objects: &Objects,
    freight: &FreightSet,
    git: &repo::Git<'_>,
    scratch: &std::path::Path,
) -> Option<String> {
    let origin = freight.target_origin();
    let upstream: &[String] = stage
        .upstream_of
        .iter()
        .find(|(o, _)| o == origin)
        .map_or(&[], |(_, up)| up.as_slice());
    if upstream.is_empty() {
        return None;
    }
    let name = freight_name(freight);
    let mut unreadable = Vec::new();
    for (i, up) in upstream.iter().enumerate() {
        match promoted_in(
            objects,
            &stage.project,
            up,
            &name,
            git,
            &scratch.join(i.to_string()),
        ) {
            Ok(true) => return None,
            Ok(false) => {}
            Err(e) => unreadable.push(format!("{up}: {e}")),
        }
    }
    let short = &name[..name.len().min(7)];
    let mut text = format!(
        "Kargo offers Stage {} only Freight verified in upstream Stage {}, and no promotion of Freight {short} is on {} write branch",
        stage.name,
        upstream.join(" or "),
        if upstream.len() > 1 { "their" } else { "its" },
    );
    if !unreadable.is_empty() {
        text.push_str(&format!(" (unreadable: {})", unreadable.join("; ")));
    }
    text.push_str(": promote and verify it there first, or pass --assume-verified");
    Some(text)
}

/// Whether the write branch of Stage `upstream` of `project` holds a promotion of Freight
/// `freight` into it (see [`unverified_warning`]). A branch that does not exist holds none.
fn promoted_in(
    objects: &Objects,
    project: &str,
    upstream: &str,
    freight: &str,
    git: &repo::Git<'_>,
    scratch: &std::path::Path,
) -> Result<bool, String> {
    let def = objects
        .stage(upstream, Some(project))
        .map_err(|e| e.to_string())?;
    let (url, branch) = def.pushed();
    if url.is_empty() {
        return Err("it pushes no write branch kiln can read".into());
    }
    let repo = git.open_for_read(&url, scratch)?;
    let Some(head) = repo::resolve_revision(&repo, &branch) else {
        return Ok(false);
    };
    let (freight_line, stage_line) = (
        format!("\nfreight: {freight}\n"),
        format!("\nstage: {project}/{upstream}\n"),
    );
    repo::any_commit_message(&repo, head, &|m| {
        m.contains(&freight_line) && m.contains(&stage_line)
    })
}

/// The repositories whose images the Stage's `kustomize-set-image` steps pin by digest
/// (`digest: ${{ imageFrom(vars.x).Digest }}`), through the Stage's `vars`.
fn digest_promoted(stage: &StageDef) -> std::collections::BTreeSet<String> {
    static IMAGE_FROM: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"imageFrom\(\s*vars\.([A-Za-z_][A-Za-z0-9_]*)").expect("valid regex")
    });
    stage
        .steps
        .iter()
        .filter(|st| st.uses == "kustomize-set-image")
        .flat_map(|st| st.config["images"].as_array().into_iter().flatten())
        .filter_map(|i| i.get("digest").and_then(Value::as_str))
        .filter_map(|d| IMAGE_FROM.captures(d))
        .filter_map(|c| {
            stage
                .vars
                .iter()
                .find(|(n, _)| *n == c[1])
                .map(|(_, v)| v.clone())
        })
        .collect()
}

/// Files written by a promotion, by (repository URL, path in the repository).
pub type Built = BTreeMap<(String, String), Vec<u8>>;

/// What `stage`'s promotion of `freight` writes, without committing it (`kiln status`'s drift
/// check): runs its steps in a temporary directory up to its first `git-commit`, as
/// [`promote`] would, and returns the files its `kustomize-build` steps wrote, by (repository
/// URL, path in the repository). A step that fails is an error naming it.
pub fn rebuild(
    stage: StageDef,
    freight: FreightSet,
    objects: &Objects,
    git: repo::Git<'_>,
) -> Result<Built, String> {
    let (_guard, work) = repo::WorkDir::temporary()?;
    // Nothing is committed: the signature is never written.
    let signature = git2::Signature::new("kiln", "kiln@localhost", &git2::Time::new(0, 0))
        .map_err(|e| e.to_string())?;
    let commit = stage
        .steps
        .iter()
        .find(|st| st.uses == "git-commit")
        .map(|st| st.alias.clone());
    let name = format!("{}.rebuild", stage.name);
    let mut promotion = Promotion::new(stage, freight, name);
    let cx = Context {
        git,
        work: &work,
        signature,
    };
    let mut apps = objects.applications();
    match &commit {
        Some(alias) => promotion.run_until(alias, &cx, &mut apps),
        None => promotion.run(&cx, &mut apps),
    }
    if let Some((alias, message)) = promotion.report().failure() {
        return Err(format!("step {alias}: {message}"));
    }
    Ok(promotion
        .built()
        .map(|(url, path, bytes)| ((url.to_string(), path.to_string()), bytes.to_vec()))
        .collect())
}

/// `kiln promote`: finds the Stage in the rendered objects, assembles the Freight and runs
/// every step. A failed step is a report with [`Phase::Failed`], not an error.
pub fn promote(
    set: &ArtifactSet,
    platform: &crate::validate::Platform,
    options: &PromoteOptions,
) -> Result<PromotionReport, PromoteError> {
    let objects = Objects::from_artifacts(set)?;
    let stage = objects.stage(&options.stage, options.project.as_deref())?;
    let work =
        repo::WorkDir::new(&options.work_dir).map_err(|message| PromoteError::Io { message })?;
    let git = repo::Git {
        map: &options.repo_map,
        auth: &options.auth,
    };
    let freight = assemble_freight(
        &stage,
        &objects,
        &spec_images(platform),
        &options.freight,
        &git,
        &work.join(".kiln-scratch/freight"),
    )?;
    let signature = options
        .identity
        .signature(options.time)
        .map_err(|e| PromoteError::Io {
            message: e.to_string(),
        })?;
    let name = format!("{}.local.{}", stage.name, &freight_name(&freight)[..7]);
    let mut apps = match &options.live {
        Some(live) => objects.applications_after_root_sync(live),
        None => objects.applications(),
    };
    let warning = (!options.assume_verified)
        .then(|| {
            unverified_warning(
                &stage,
                &objects,
                &freight,
                &git,
                &work.join(".kiln-scratch/upstream"),
            )
        })
        .flatten();
    let mut promotion = Promotion::new(stage, freight, name);
    let cx = Context {
        git,
        work: &work,
        signature,
    };
    promotion.run(&cx, &mut apps);
    let mut report = promotion.report();
    report.warnings.extend(warning);
    Ok(report)
}
