//! Runs a Stage's promotion steps one at a time, as Kargo's local orchestrator does.
//!
//! Implemented from Kargo v1.11.2:
//! - `pkg/promotion/local_orchestrator.go`: steps run in order; a step without `if` is skipped
//!   once an earlier step failed, one with `if` runs when its expression is true; each step's
//!   output is stored under its alias (`outputs.<alias>`); Skipped is a success.
//! - `pkg/promotion/evaluator.go`: promotion `vars` are evaluated in order (each may use the
//!   earlier ones and the Freight), then the step's own `vars` (which may also use `outputs`),
//!   then the step's `config`; `ctx` holds project, stage, promotion, targetFreight, meta.
//! - `api/v1alpha1/promotion_types.go` `GetAlias`: a step without `as` is `step-<n>`.
//!
//! Differences, on purpose: a step that errors is not retried (Kargo retries errored steps
//! until their error threshold or timeout; locally the same input fails the same way), except
//! `git-push`, which retries rejected pushes itself as Kargo does. The Argo CD side of
//! `argocd-update` is a check against kiln's own Application objects (see
//! `Promotion::argocd_update`).

use super::expr::{self, Env, Functions};
use super::freight::{FreightSet, normalize_git};
use super::repo::{Git, PushError, WorkDir, resolve_revision, short, tree_files};
use super::steps::{self, Ref};
use super::{Applications, StageDef, StepDef};
use serde::Serialize;
use serde_json::{Map, Value, json};
use std::path::PathBuf;

/// How a step ended (Kargo's `PromotionStepStatus`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum StepStatus {
    Succeeded,
    Skipped,
    Failed,
    Errored,
}

/// One step as it ran.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StepReport {
    pub alias: String,
    pub uses: String,
    pub status: StepStatus,
    /// The step's output (`outputs.<alias>`), `null` when it has none.
    pub outputs: Value,
    /// Why it failed, or what it noticed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// The health check a successful `argocd-update` leaves behind: which revision each source of
/// the Application must keep showing for the Stage to stay Healthy.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HealthCheck {
    pub namespace: String,
    pub name: String,
    pub desired_revisions: Vec<String>,
}

/// Everything a promotion needs from outside: Git, the work directory, who commits.
pub struct Context<'a> {
    pub git: Git<'a>,
    pub work: &'a WorkDir,
    pub signature: git2::Signature<'static>,
}

/// A clone made by `git-clone`.
#[derive(Debug, Clone)]
struct CheckoutRecord {
    /// Path relative to the work directory.
    path: String,
    repo_url: String,
    author: Option<steps::Author>,
}

/// A file `kustomize-build` wrote inside a clone.
#[derive(Debug, Clone)]
struct BuildRecord {
    repo_url: String,
    /// Path relative to the repository root.
    path: String,
    bytes: Vec<u8>,
    step: String,
}

/// One promotion of one Stage with one Freight, run step by step.
pub struct Promotion {
    stage: StageDef,
    freight: FreightSet,
    name: String,
    outputs: Map<String, Value>,
    next: usize,
    failed: bool,
    reports: Vec<StepReport>,
    checkouts: Vec<CheckoutRecord>,
    builds: Vec<BuildRecord>,
    health: Vec<HealthCheck>,
    scratch: usize,
    /// What the running step noticed, for its report.
    note: Option<String>,
}

/// The Freight look-ups and step status for expressions.
struct Lookups<'a> {
    freight: &'a FreightSet,
    failed: bool,
}

impl Functions for Lookups<'_> {
    fn commit_from(&self, repo_url: &str, origin: Option<&str>) -> Result<Value, String> {
        self.freight.find_commit(repo_url, origin)
    }
    fn image_from(&self, repo_url: &str, origin: Option<&str>) -> Result<Value, String> {
        self.freight.find_image(repo_url, origin)
    }
    fn any_failure(&self) -> bool {
        self.failed
    }
}

/// Why a step did not succeed: Failed (terminal) or Errored.
struct StepError {
    status: StepStatus,
    message: String,
}

fn errored(message: impl Into<String>) -> StepError {
    StepError {
        status: StepStatus::Errored,
        message: message.into(),
    }
}

fn failed(message: impl Into<String>) -> StepError {
    StepError {
        status: StepStatus::Failed,
        message: message.into(),
    }
}

type StepResult = Result<(StepStatus, Value), StepError>;

impl Promotion {
    /// A promotion named `name` (Kargo: `<stage>.<ulid>.<freight>`) of `stage` with `freight`.
    pub fn new(stage: StageDef, freight: FreightSet, name: String) -> Self {
        Promotion {
            stage,
            freight,
            name,
            outputs: Map::new(),
            next: 0,
            failed: false,
            reports: Vec::new(),
            checkouts: Vec::new(),
            builds: Vec::new(),
            health: Vec::new(),
            scratch: 0,
            note: None,
        }
    }

    /// The promotion's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Whether every step has run.
    pub fn is_done(&self) -> bool {
        self.next >= self.stage.steps.len()
    }

    /// The alias of the next step to run.
    pub fn next_alias(&self) -> Option<&str> {
        self.stage.steps.get(self.next).map(|s| s.alias.as_str())
    }

    /// Steps run so far.
    pub fn reports(&self) -> &[StepReport] {
        &self.reports
    }

    /// What the `kustomize-build` steps wrote into clones so far: (repository URL, path in the
    /// repository, bytes), in step order.
    pub fn built(&self) -> impl Iterator<Item = (&str, &str, &[u8])> {
        self.builds
            .iter()
            .map(|b| (b.repo_url.as_str(), b.path.as_str(), b.bytes.as_slice()))
    }

    /// Health checks left by the `argocd-update` steps that succeeded.
    pub fn health_checks(&self) -> &[HealthCheck] {
        &self.health
    }

    /// Whether a step failed or errored.
    pub fn has_failed(&self) -> bool {
        self.failed
    }

    /// Runs every remaining step.
    pub fn run(&mut self, cx: &Context<'_>, apps: &mut Applications) {
        while !self.is_done() {
            self.step(cx, apps);
        }
    }

    /// Runs steps until the next one is `alias` (or the end).
    pub fn run_until(&mut self, alias: &str, cx: &Context<'_>, apps: &mut Applications) {
        while !self.is_done() && self.next_alias() != Some(alias) {
            self.step(cx, apps);
        }
    }

    fn ctx(&self, alias: &str) -> Value {
        json!({
            "uiBaseUrl": "",
            "project": self.stage.project,
            "promotion": self.name,
            "stage": self.stage.name,
            "targetFreight": {
                "name": self.freight_name(),
                "alias": "",
                "origin": { "name": self.freight.target_origin() },
            },
            "meta": {
                "promotion": { "actor": "", "rollback": false },
                "step": { "alias": alias },
            },
        })
    }

    /// A stable name for the Freight: the hex digest of its artifacts.
    pub fn freight_name(&self) -> String {
        super::freight_name(&self.freight)
    }

    /// `StepEvaluator.Vars`: promotion vars, then the step's vars.
    fn vars(&self, step: &StepDef, lookups: &Lookups<'_>) -> Result<Map<String, Value>, String> {
        let mut vars = Map::new();
        let ctx = self.ctx(&step.alias);
        // The Stage's variables first, without the steps' outputs; then the step's, with them.
        let stage_vars = self.stage.vars.iter().map(|(n, t)| (n, t, None));
        let step_vars = step.vars.iter().map(|(n, t)| (n, t, Some(&self.outputs)));
        for (name, template, outputs) in stage_vars.chain(step_vars) {
            let names = env_names(&ctx, &vars, outputs);
            let v = expr::evaluate_template(
                template,
                &Env {
                    names: &names,
                    functions: lookups,
                },
            )
            .map_err(|e| format!("error pre-processing promotion variable {name:?}: {e}"))?;
            vars.insert(name.clone(), v);
        }
        Ok(vars)
    }

    /// Runs the next step and returns its report.
    pub fn step(&mut self, cx: &Context<'_>, apps: &mut Applications) -> Option<&StepReport> {
        let step = self.stage.steps.get(self.next)?.clone();
        self.next += 1;
        let lookups = Lookups {
            freight: &self.freight,
            failed: self.failed,
        };
        let evaluated = self.vars(&step, &lookups).and_then(|vars| {
            let names = env_names(&self.ctx(&step.alias), &vars, Some(&self.outputs));
            let env = Env {
                names: &names,
                functions: &lookups,
            };
            // `ShouldSkip`: without `if`, skip once anything failed.
            let skip = match &step.if_expr {
                None => self.failed,
                Some(cond) => match expr::evaluate_template(cond, &env)? {
                    Value::Bool(b) => !b,
                    other => {
                        return Err(format!(
                            "expression must evaluate to a boolean, got {other}"
                        ));
                    }
                },
            };
            if skip {
                return Ok(None);
            }
            expr::evaluate_config(&step.config, &env).map(Some)
        });
        let result = match evaluated {
            Ok(None) => Ok((StepStatus::Skipped, Value::Null)),
            Ok(Some(config)) => self.execute(&step, &config, cx, apps),
            Err(e) => Err(errored(format!("failed to get step config: {e}"))),
        };
        let report = match result {
            Ok((status, outputs)) => {
                self.outputs.insert(step.alias.clone(), outputs.clone());
                StepReport {
                    alias: step.alias.clone(),
                    uses: step.uses.clone(),
                    status,
                    outputs,
                    message: self.note.take(),
                }
            }
            Err(e) => {
                if !step.continue_on_error {
                    self.failed = true;
                }
                StepReport {
                    alias: step.alias.clone(),
                    uses: step.uses.clone(),
                    status: e.status,
                    outputs: Value::Null,
                    message: Some(e.message),
                }
            }
        };
        self.reports.push(report);
        self.reports.last()
    }

    fn execute(
        &mut self,
        step: &StepDef,
        config: &Value,
        cx: &Context<'_>,
        apps: &mut Applications,
    ) -> StepResult {
        // A config that does not convert is Failed (terminal), as in every Kargo runner.
        let bad = |e: String| failed(e);
        match step.uses.as_str() {
            "git-clone" => self.git_clone(steps::GitCloneConfig::parse(config).map_err(bad)?, cx),
            "delete" => self.delete(steps::DeleteConfig::parse(config).map_err(bad)?, cx),
            "kustomize-set-image" => self.set_image(
                steps::KustomizeSetImageConfig::parse(config).map_err(bad)?,
                cx,
            ),
            "kustomize-build" => self.build(
                steps::KustomizeBuildConfig::parse(config).map_err(bad)?,
                &step.alias,
                cx,
            ),
            "git-commit" => {
                self.git_commit(steps::GitCommitConfig::parse(config).map_err(bad)?, cx)
            }
            "git-push" => self.git_push(steps::GitPushConfig::parse(config).map_err(bad)?, cx),
            "argocd-update" => self.argocd_update(
                steps::ArgoCdUpdateConfig::parse(config).map_err(bad)?,
                cx,
                apps,
            ),
            other => Err(errored(format!(
                "step kind {other:?} is not supported by kiln promote (it runs git-clone, delete, kustomize-set-image, kustomize-build, git-commit, git-push and argocd-update)"
            ))),
        }
    }

    fn scratch_dir(&mut self, cx: &Context<'_>) -> PathBuf {
        self.scratch += 1;
        cx.work.join(&format!(".kiln-scratch/{}", self.scratch))
    }

    /// `git-clone`: each checkout into its own working tree; a missing branch with `create`
    /// becomes an orphan branch first. Output: `commits` by checkout `as`/path.
    fn git_clone(&mut self, cfg: steps::GitCloneConfig, cx: &Context<'_>) -> StepResult {
        let mut commits = Map::new();
        for ch in &cfg.checkout {
            if !ch.sparse.is_empty() {
                return Err(failed(
                    "git-clone `sparse` checkouts are not supported by kiln promote",
                ));
            }
            let rel = steps::work_path(&ch.path).map_err(errored)?;
            let reference = ch.reference();
            if let Ref::Branch(b) = &reference
                && cx
                    .git
                    .remote_branch_tip(&cfg.repo_url, b)
                    .map_err(errored)?
                    .is_none()
            {
                if !ch.create {
                    return Err(errored(format!(
                        "error ensuring existence of remote branch {b}: remote branch {b:?} of repo {} does not exist; set create=true if you'd like a non-existent remote branch to be automatically created at checkout",
                        cfg.repo_url
                    )));
                }
                let scratch = self.scratch_dir(cx);
                let signature = signature_for(cfg.author.as_ref(), cx);
                cx.git
                    .create_orphan_branch(&cfg.repo_url, b, &signature, &scratch)
                    .map_err(errored)?;
            }
            let dest = cx.work.join(&rel);
            let id = cx
                .git
                .clone(&cfg.repo_url, &dest, &reference)
                .map_err(|e| errored(format!("error adding work tree {}: {e}", ch.path)))?;
            commits.insert(ch.key().to_string(), Value::String(id.to_string()));
            self.checkouts.push(CheckoutRecord {
                path: rel,
                repo_url: cfg.repo_url.clone(),
                author: cfg.author.clone(),
            });
        }
        Ok((StepStatus::Succeeded, json!({ "commits": commits })))
    }

    /// `delete`: literal paths; missing ones are fine unless `strict`.
    fn delete(&mut self, cfg: steps::DeleteConfig, cx: &Context<'_>) -> StepResult {
        for p in cfg.all_paths() {
            let rel = steps::work_path(&p).map_err(errored)?;
            if rel.is_empty() {
                return Err(errored("refusing to delete the work directory itself"));
            }
            let removed = cx.work.remove(&rel).map_err(errored)?;
            if !removed && cfg.strict {
                return Err(errored(format!("path {p:?} does not exist")));
            }
        }
        Ok((StepStatus::Succeeded, Value::Null))
    }

    /// `kustomize-set-image`: merge the configured images (or, without `images`, every image
    /// of the Freight) into the kustomization's `images`. Output: `commitMessage`.
    fn set_image(&mut self, cfg: steps::KustomizeSetImageConfig, cx: &Context<'_>) -> StepResult {
        let rel = steps::work_path(&cfg.path).map_err(errored)?;
        let file = cx
            .work
            .find_kustomization(&rel)
            .map_err(|e| errored(format!("could not discover kustomization file: {e}")))?;
        let targets = if cfg.images.is_empty() {
            self.automatic_images()?
        } else {
            steps::target_images(&cfg.images)
        };
        let text = cx.work.read(&file).map_err(errored)?;
        let current = crate::yaml::parse_one(&file.display().to_string(), &text)
            .map_err(|e| errored(format!("could not unmarshal Kustomization file: {e}")))?;
        let updated = steps::merge_images(&current, targets.clone()).map_err(errored)?;
        cx.work
            .write(&file, crate::yaml::to_yaml(&updated).as_bytes())
            .map_err(errored)?;
        let outputs = match steps::set_image_commit_message(&cfg.path, &targets) {
            Some(m) => json!({ "commitMessage": m }),
            None => Value::Null,
        };
        Ok((StepStatus::Succeeded, outputs))
    }

    /// `buildTargetImagesAutomatically`: every image of the Freight, unless two requested
    /// Warehouses subscribe to the same repository.
    fn automatic_images(
        &self,
    ) -> Result<std::collections::BTreeMap<String, steps::KusImage>, StepError> {
        let mut seen = std::collections::BTreeSet::new();
        for w in &self.freight.requested {
            for repo in self
                .freight
                .warehouses
                .get(w)
                .map(|s| s.images.as_slice())
                .unwrap_or(&[])
                .iter()
                .map(|s| &s.repo_url)
            {
                if !seen.insert(repo.clone()) {
                    return Err(errored(format!(
                        "manual configuration required due to ambiguous result: multiple requested Freight could potentially provide a container image from repository {repo}"
                    )));
                }
            }
        }
        let mut out = std::collections::BTreeMap::new();
        for r in &self.freight.references {
            for i in &r.images {
                out.insert(
                    i.repo_url.clone(),
                    steps::KusImage {
                        name: i.repo_url.clone(),
                        new_tag: i.tag.clone(),
                        digest: i.digest.clone(),
                        ..Default::default()
                    },
                );
            }
        }
        Ok(out)
    }

    /// `kustomize-build` with kiln's engine, confined to the work directory.
    fn build(
        &mut self,
        cfg: steps::KustomizeBuildConfig,
        alias: &str,
        cx: &Context<'_>,
    ) -> StepResult {
        let src = steps::work_path(&cfg.path).map_err(errored)?;
        let out = steps::work_path(&cfg.out_path).map_err(errored)?;
        let fs = cx.work.rooted_fs();
        let options = crate::kustomize::BuildOptions {
            load_restrictor: crate::kustomize::LoadRestrictor::None,
            enable_helm: true,
            ..Default::default()
        };
        let resources = crate::kustomize::build(&fs, &cx.work.join(&src), &options)
            .map_err(|e| errored(format!("kustomize build of {}: {e}", cfg.path)))?;
        let values: Vec<Value> = resources.into_iter().map(|r| r.value).collect();
        let mut files: Vec<(String, Vec<u8>)> = Vec::new();
        if cfg.single_file() {
            files.push((
                out.clone(),
                crate::yaml::to_yaml_stream(&values).into_bytes(),
            ));
        } else {
            cx.work.create_dir(&cx.work.join(&out)).map_err(errored)?;
            let namespaces: std::collections::BTreeSet<&str> = values
                .iter()
                .filter_map(|v| v.pointer("/metadata/namespace").and_then(Value::as_str))
                .collect();
            for v in &values {
                let name = match cfg.output_format.as_deref() {
                    Some("kustomize") => steps::kustomize_file_name(v, namespaces.len() > 1),
                    _ => steps::kargo_file_name(v),
                };
                steps::check_generated_file_name(&name).map_err(errored)?;
                files.push((
                    format!("{out}/{name}"),
                    crate::yaml::to_yaml(v).into_bytes(),
                ));
            }
        }
        for (rel, bytes) in files {
            cx.work.write(&cx.work.join(&rel), &bytes).map_err(|e| {
                errored(format!(
                    "failed to write built manifests to {:?}: {e}",
                    cfg.out_path
                ))
            })?;
            if let Some((checkout, inner)) = self.checkout_of(&rel) {
                self.builds.push(BuildRecord {
                    repo_url: checkout.repo_url.clone(),
                    path: inner,
                    bytes,
                    step: alias.to_string(),
                });
            }
        }
        Ok((StepStatus::Succeeded, Value::Null))
    }

    /// The clone holding `rel` (a work-directory path) and the path inside that clone.
    fn checkout_of(&self, rel: &str) -> Option<(&CheckoutRecord, String)> {
        self.checkouts.iter().rev().find_map(|c| {
            if rel == c.path {
                Some((c, String::new()))
            } else {
                rel.strip_prefix(&format!("{}/", c.path))
                    .map(|r| (c, r.to_string()))
            }
        })
    }

    fn checkout_dir(
        &self,
        path: &str,
        cx: &Context<'_>,
    ) -> Result<(CheckoutRecord, PathBuf), StepError> {
        let rel = steps::work_path(path).map_err(errored)?;
        match self.checkout_of(&rel) {
            Some((c, _)) => Ok((c.clone(), cx.work.join(&c.path))),
            None => Err(errored(format!(
                "error loading working tree from {path}: no git-clone checkout there"
            ))),
        }
    }

    /// `git-commit`: commit everything when something changed; Skipped otherwise. Output:
    /// `commit` (HEAD either way).
    fn git_commit(&mut self, cfg: steps::GitCommitConfig, cx: &Context<'_>) -> StepResult {
        let (checkout, dir) = self.checkout_dir(&cfg.path, cx)?;
        let author = cfg.author.as_ref().or(checkout.author.as_ref());
        let signature = signature_for(author, cx);
        let (committed, id) = cx
            .git
            .commit_all(&dir, &cfg.message, &signature)
            .map_err(errored)?;
        let status = if committed {
            StepStatus::Succeeded
        } else {
            StepStatus::Skipped
        };
        Ok((status, json!({ "commit": id.to_string() })))
    }

    /// `git-push` with AlwaysRebase and retries. Output: `commit`, `branch`.
    fn git_push(&mut self, cfg: steps::GitPushConfig, cx: &Context<'_>) -> StepResult {
        let (checkout, dir) = self.checkout_dir(&cfg.path, cx)?;
        let branch = if cfg.generate_target_branch {
            format!("kargo/promotion/{}", self.name)
        } else if !cfg.target_branch.is_empty() {
            cfg.target_branch.clone()
        } else {
            current_branch(&dir).map_err(errored)?
        };
        let attempts = cfg.max_attempts.unwrap_or(steps::DEFAULT_PUSH_ATTEMPTS);
        match cx.git.push(&dir, &checkout.repo_url, &branch, attempts) {
            Ok(p) => Ok((
                StepStatus::Succeeded,
                json!({ "commit": p.commit.to_string(), "branch": branch }),
            )),
            Err(PushError::MergeConflict(m)) => Err(failed(format!("merge conflict: {m}"))),
            Err(e) => Err(errored(e.to_string())),
        }
    }

    /// `argocd-update`, modelled as a check: the named Application (kiln's own object, as
    /// Argo CD would hold it) must authorize the Stage; the source updates apply as Kargo
    /// applies them (`updateTargetRevision` pins `targetRevision`); then each source resolves
    /// as Argo CD would sync it — `repoURL` + `targetRevision` to a commit, which must equal
    /// `desiredRevision` when one is given (Kargo compares the sync result by equality and
    /// retries until the step times out), and `path` must hold exactly the manifests this
    /// promotion built into that repository.
    fn argocd_update(
        &mut self,
        cfg: steps::ArgoCdUpdateConfig,
        cx: &Context<'_>,
        apps: &mut Applications,
    ) -> StepResult {
        let mut checks = Vec::new();
        let mut notes = Vec::new();
        for update in &cfg.apps {
            let ns = if update.namespace.is_empty() {
                steps::DEFAULT_ARGOCD_NAMESPACE.to_string()
            } else {
                update.namespace.clone()
            };
            let key = (ns.clone(), update.name.clone());
            let Some(app) = apps.get(&key) else {
                return Err(errored(format!(
                    "unable to find Argo CD Application {:?} in namespace {ns:?} (among the Applications kiln emits)",
                    update.name
                )));
            };
            steps::authorize(app, &self.stage.project, &self.stage.name).map_err(errored)?;
            let sources = steps::app_sources(app);
            if sources.is_empty() {
                return Err(errored(format!(
                    "Argo CD Application {:?} has no source",
                    update.name
                )));
            }
            let revisions = steps::desired_revisions(update, &sources);
            let desired = steps::desired_sources(&update.name, update, &sources)
                .map_err(|e| errored(format!("error building desired sources: {e}")))?;
            let mut tracked = 0;
            for (i, src) in desired.iter().enumerate() {
                let field = |k: &str| src.get(k).and_then(Value::as_str).unwrap_or("").to_string();
                let (url, revision, path) =
                    (field("repoURL"), field("targetRevision"), field("path"));
                if !field("chart").is_empty() {
                    continue;
                }
                let scratch = self.scratch_dir(cx);
                let repo = cx.git.open_for_read(&url, &scratch).map_err(errored)?;
                let Some(resolved) = resolve_revision(&repo, &revision) else {
                    return Err(errored(format!(
                        "Application {:?}: targetRevision {revision:?} does not resolve in {url}",
                        update.name
                    )));
                };
                if !revisions[i].is_empty() && resolved.to_string() != revisions[i] {
                    return Err(errored(format!(
                        "Application {:?} would sync {url} at {revision:?} = {}, but desiredRevision is {}: sync result revisions do not match desired revisions, so Kargo keeps retrying until the step times out (pin the source with updateTargetRevision, or give each Stage its own branch)",
                        update.name,
                        short(resolved),
                        revisions[i].get(..7).unwrap_or(&revisions[i]),
                    )));
                }
                let files = tree_files(&repo, resolved, &path).map_err(errored)?;
                if files.is_empty() {
                    return Err(errored(format!(
                        "Application {:?}: path {path:?} at {} in {url} holds no manifests",
                        update.name,
                        short(resolved)
                    )));
                }
                let prefix = path.trim_matches('/');
                for b in self
                    .builds
                    .iter()
                    .filter(|b| normalize_git(&b.repo_url) == normalize_git(&url))
                {
                    let inside = prefix.is_empty()
                        || prefix == "."
                        || b.path.starts_with(&format!("{prefix}/"));
                    if !inside {
                        continue;
                    }
                    tracked += 1;
                    match files.get(&b.path) {
                        Some(bytes) if *bytes == b.bytes => {}
                        Some(_) => {
                            return Err(errored(format!(
                                "Application {:?} would deploy a different {} than step {:?} built (at {} of {url})",
                                update.name,
                                b.path,
                                b.step,
                                short(resolved)
                            )));
                        }
                        None => {
                            return Err(errored(format!(
                                "Application {:?} would not deploy {} built by step {:?}: it is not at {} of {url}",
                                update.name,
                                b.path,
                                b.step,
                                short(resolved)
                            )));
                        }
                    }
                }
                notes.push(format!(
                    "{}: {url} {path} @ {}",
                    update.name,
                    short(resolved)
                ));
            }
            if tracked == 0 && !self.builds.is_empty() {
                let built: Vec<String> = self
                    .builds
                    .iter()
                    .map(|b| format!("{} in {}", b.path, b.repo_url))
                    .collect();
                let tracks: Vec<String> = desired
                    .iter()
                    .map(|s| {
                        format!(
                            "{} path {}",
                            s.get("repoURL").and_then(Value::as_str).unwrap_or(""),
                            s.get("path").and_then(Value::as_str).unwrap_or("")
                        )
                    })
                    .collect();
                return Err(errored(format!(
                    "Application {:?} does not track what Stage {} writes: it deploys {}, the promotion built {}",
                    update.name,
                    self.stage.name,
                    tracks.join("; "),
                    built.join(", ")
                )));
            }
            // Kargo patches the desired sources into the Application before it syncs.
            if let Some(live) = apps.get_mut(&key) {
                steps::set_app_sources(live, desired);
            }
            checks.push(HealthCheck {
                namespace: ns,
                name: update.name.clone(),
                desired_revisions: revisions,
            });
        }
        self.health.extend(checks);
        self.note = Some(notes.join("\n"));
        Ok((StepStatus::Succeeded, Value::Null))
    }

    /// The report of the whole promotion.
    pub fn report(&self) -> super::PromotionReport {
        super::PromotionReport {
            project: self.stage.project.clone(),
            stage: self.stage.name.clone(),
            promotion: self.name.clone(),
            freight: self.freight.references.clone(),
            phase: if self.failed {
                super::Phase::Failed
            } else if self.is_done() {
                super::Phase::Succeeded
            } else {
                super::Phase::Running
            },
            steps: self.reports.clone(),
            warnings: Vec::new(),
        }
    }
}

/// The Stage's lasting Argo CD health check (`pkg/health/checker/builtin/argocd.go`): the
/// Application's sources, as they are now, must still resolve to the desired revisions.
pub fn check_health(
    git: &Git<'_>,
    apps: &Applications,
    check: &HealthCheck,
    scratch: &std::path::Path,
) -> Result<(), String> {
    let key = (check.namespace.clone(), check.name.clone());
    let app = apps
        .get(&key)
        .ok_or_else(|| format!("Application {:?} not found", check.name))?;
    for (i, src) in steps::app_sources(app).iter().enumerate() {
        let Some(want) = check.desired_revisions.get(i).filter(|w| !w.is_empty()) else {
            continue;
        };
        let field = |k: &str| src.get(k).and_then(Value::as_str).unwrap_or("").to_string();
        let dir = scratch.join(i.to_string());
        let repo = git.open_for_read(&field("repoURL"), &dir)?;
        let got = resolve_revision(&repo, &field("targetRevision"));
        if got.map(|g| g.to_string()).as_deref() != Some(want.as_str()) {
            return Err(format!(
                "Application {:?} syncs {} at {:?} = {}, not the promoted {}: the Stage turns Unhealthy",
                check.name,
                field("repoURL"),
                field("targetRevision"),
                got.map(short).unwrap_or_else(|| "nothing".into()),
                want.get(..7).unwrap_or(want)
            ));
        }
    }
    Ok(())
}

fn env_names(
    ctx: &Value,
    vars: &Map<String, Value>,
    outputs: Option<&Map<String, Value>>,
) -> Map<String, Value> {
    let mut names = Map::new();
    names.insert("ctx".into(), ctx.clone());
    names.insert("vars".into(), Value::Object(vars.clone()));
    if let Some(o) = outputs {
        names.insert("outputs".into(), Value::Object(o.clone()));
    }
    names
}

fn signature_for(author: Option<&steps::Author>, cx: &Context<'_>) -> git2::Signature<'static> {
    author
        .and_then(|a| git2::Signature::new(&a.name, &a.email, &cx.signature.when()).ok())
        .unwrap_or_else(|| cx.signature.clone())
}

fn current_branch(dir: &std::path::Path) -> Result<String, String> {
    let repo = git2::Repository::open(dir).map_err(|e| e.message().to_string())?;
    let head = repo
        .find_reference("HEAD")
        .map_err(|e| e.message().to_string())?;
    head.symbolic_target()
        .ok()
        .flatten()
        .and_then(|t| t.strip_prefix("refs/heads/"))
        .map(str::to_string)
        .ok_or_else(|| "error getting current branch: HEAD is detached; set targetBranch".into())
}
