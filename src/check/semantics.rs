//! Checks of meaning, beyond schemas and references: what would pass `kubectl apply` and
//! still not work in Kargo v1.11.2 and Argo CD v3.5.
//!
//! - `shared_branch_revision`: Stages that push to one (repository, branch) while their
//!   `argocd-update` compares `desiredRevision` with an Application that tracks the branch.
//!   `argocd-update` compares the sync result's revision with `desiredRevision` by equality
//!   and retries until the step times out (`pkg/promotion/runner/builtin/argocd_updater.go`
//!   `mustPerformUpdate`), and the Stage health check does the same with
//!   `status.sync.revision` (`pkg/health/checker/builtin/argocd.go`); the branch head moves
//!   with every other Stage's push. `updateTargetRevision: true` pins the Application.
//! - `digest_constraint_not_tag`: under `imageSelectionStrategy: Digest` Kargo asks the
//!   registry for `constraint` as a literal tag (`pkg/image/digest_selector.go`).
//! - `application_source_mismatch`: the Application an `argocd-update` names must read the
//!   repository, branch and folder the Stage's `git-push` and `kustomize-build` write;
//!   otherwise the sync deploys something else, or the revision never matches.
//! - `expression_in_manifest`: Kargo evaluates `${{ … }}` only in step config; a manifest
//!   holding one is deployed as text (`pkg/promotion/runner/builtin/kustomize_builder.go`).
//! - `invalid_image_reference`: a container `image` that is empty or holds whitespace (a tag
//!   rendered from `tag: "1.0.0 bad"`): the kubelet cannot pull it.
//! - `deprecated_field` for `ProjectConfig` `promotionPolicies[].stage` (deprecated for
//!   `stageSelector`, `api/v1alpha1/project_config_types.go`).
//!
//! What a Stage writes is read from its steps: the `git-push` step's `path` and
//! `targetBranch`, the `git-clone` step that checked out that path (its `repoURL`), and the
//! `kustomize-build` steps whose `outPath` lies under it; `${{ vars.x }}` is resolved from the
//! Stage's `vars`. Stages whose writes cannot be read this way are skipped, never guessed.

use super::rules::{ARGOCD_GROUP, KARGO_GROUP};
use super::{Document, RawFinding, Rule};
use crate::kargo::normalize_repo as normalize;
use serde_json::Value;
use std::collections::BTreeMap;

/// What one Stage pushes.
struct Writes {
    repo: String,
    branch: String,
    /// Folders (relative to the checkout) its builds write.
    folders: Vec<String>,
}

/// Runs the semantic checks over `docs`.
pub(super) fn run(docs: &[Document], out: &mut Vec<RawFinding>) {
    let is = |d: &Document, group: &str, kind: &str| {
        d.value["kind"] == kind
            && d.value["apiVersion"]
                .as_str()
                .is_some_and(|a| a.starts_with(&format!("{group}/")))
    };
    let apps: BTreeMap<(String, String), usize> = docs
        .iter()
        .enumerate()
        .filter(|(_, d)| is(d, ARGOCD_GROUP, "Application"))
        .map(|(i, d)| ((ns(&d.value), name(&d.value)), i))
        .collect();
    let mut stages: Vec<(usize, Writes)> = Vec::new();
    for (i, d) in docs.iter().enumerate() {
        if is(d, KARGO_GROUP, "Stage") {
            if let Some(w) = writes(&d.value) {
                stages.push((i, w));
            }
        } else if is(d, KARGO_GROUP, "Warehouse") {
            digest_constraints(i, &d.value, out);
        } else if is(d, KARGO_GROUP, "ProjectConfig") {
            policy_stage(i, &d.value, out);
        } else if !is(d, KARGO_GROUP, &kind(&d.value))
            && !is(d, ARGOCD_GROUP, &kind(&d.value))
            && d.value["kind"].is_string()
        {
            for (pointer, text) in crate::kargo::expressions::find(&d.value) {
                out.push(RawFinding {
                    rule: Rule::ExpressionInManifest,
                    doc: i,
                    pointer,
                    at_key: false,
                    message: format!(
                        "{} `{}`: `{text}` holds a Kargo expression, which Kargo never evaluates in a manifest: it reaches the cluster as text",
                        kind(&d.value),
                        name(&d.value)
                    ),
                    help: Some(
                        "inject the value with a promotion step before `kustomize-build` (e.g. `yaml-update`), or do not use it".into(),
                    ),
                });
            }
            let mut images = Vec::new();
            container_images(&d.value, String::new(), &mut images);
            for (pointer, image) in images {
                if image.chars().any(char::is_whitespace) || image.is_empty() {
                    out.push(RawFinding {
                        rule: Rule::InvalidImageReference,
                        doc: i,
                        pointer,
                        at_key: false,
                        message: format!(
                            "{} `{}`: image `{}` is not an image reference (it is empty or holds whitespace)",
                            kind(&d.value),
                            name(&d.value),
                            image.escape_debug()
                        ),
                        help: Some(
                            "a reference is `[registry/]path[:tag][@algo:hex]`, a tag `[A-Za-z0-9_][A-Za-z0-9._-]{0,127}`; fix the tag or digest it was rendered from".into(),
                        ),
                    });
                }
            }
        }
    }
    let mut writers: BTreeMap<(String, String), usize> = BTreeMap::new();
    for (_, w) in &stages {
        *writers
            .entry((normalize(&w.repo), w.branch.clone()))
            .or_default() += 1;
    }
    for (i, w) in &stages {
        let stage = &docs[*i].value;
        let shared = writers[&(normalize(&w.repo), w.branch.clone())] > 1;
        for (s, step) in steps(stage).iter().enumerate() {
            if step["uses"] != "argocd-update" {
                continue;
            }
            for (a, app) in array(&step["config"]["apps"]).iter().enumerate() {
                let at = format!("/spec/promotionTemplate/spec/steps/{s}/config/apps/{a}");
                let app_name = resolve(stage, app["name"].as_str().unwrap_or_default());
                let app_ns = app["namespace"].as_str().unwrap_or("argocd").to_string();
                let pinned: Vec<bool> = array(&app["sources"])
                    .iter()
                    .map(|src| src["updateTargetRevision"] == true)
                    .collect();
                for (k, src) in array(&app["sources"]).iter().enumerate() {
                    if shared && src.get("desiredRevision").is_some() && !pinned[k] {
                        out.push(RawFinding {
                            rule: Rule::SharedBranchRevision,
                            doc: *i,
                            pointer: format!("{at}/sources/{k}/desiredRevision"),
                            at_key: false,
                            message: format!(
                                "Stage `{}`: other Stages push to branch `{}` of `{}` too, so `{app_name}` tracking the branch head never matches `desiredRevision`: argocd-update retries until it times out and the Stage turns Unhealthy",
                                name(stage),
                                w.branch,
                                w.repo
                            ),
                            help: Some(
                                "set `updateTargetRevision: true` beside `desiredRevision` to pin the Application to the pushed commit (and ignore `/spec/source/targetRevision` where Argo CD syncs the Application from Git)".into(),
                            ),
                        });
                    }
                }
                let Some(&doc) = apps.get(&(app_ns, app_name.clone())) else {
                    continue;
                };
                if let Some(problem) =
                    source_problem(&docs[doc].value, w, pinned.iter().any(|p| *p))
                {
                    out.push(RawFinding {
                        rule: Rule::ApplicationSourceMismatch,
                        doc: *i,
                        pointer: format!("{at}/name"),
                        at_key: false,
                        message: format!(
                            "Stage `{}` updates Application `{app_name}`, which {problem}",
                            name(stage)
                        ),
                        help: Some(format!(
                            "point the Application at `{}`, branch `{}`, one of the folders the Stage builds ({})",
                            w.repo,
                            w.branch,
                            w.folders.join(", ")
                        )),
                    });
                }
            }
        }
    }
}

/// Why `app` does not read what `w` writes, or `None`.
fn source_problem(app: &Value, w: &Writes, pinned: bool) -> Option<String> {
    let sources: Vec<&Value> = match app.pointer("/spec/sources").and_then(Value::as_array) {
        Some(list) => list.iter().collect(),
        None => app.pointer("/spec/source").into_iter().collect(),
    };
    let mut reasons = Vec::new();
    for s in &sources {
        let repo = s["repoURL"].as_str().unwrap_or_default();
        if normalize(repo) != normalize(&w.repo) {
            reasons.push(format!("reads repository `{repo}`"));
            continue;
        }
        let revision = s["targetRevision"].as_str().unwrap_or("HEAD");
        if !pinned && revision != w.branch {
            reasons.push(format!("tracks revision `{revision}`"));
            continue;
        }
        let path = s["path"].as_str().unwrap_or_default().trim_matches('/');
        if !w.folders.is_empty() && !w.folders.iter().any(|f| f == path) {
            reasons.push(format!("reads folder `{path}`"));
            continue;
        }
        return None;
    }
    (!sources.is_empty()).then(|| reasons.join(" and "))
}

/// What `stage` pushes, when its steps say it plainly.
fn writes(stage: &Value) -> Option<Writes> {
    let steps = steps(stage);
    let push = steps.iter().find(|s| s["uses"] == "git-push")?;
    let dir = clean(&resolve(stage, push["config"]["path"].as_str()?));
    let mut repo = None;
    let mut branch = push["config"]["targetBranch"]
        .as_str()
        .map(|b| resolve(stage, b));
    for s in steps.iter().filter(|s| s["uses"] == "git-clone") {
        for c in array(&s["config"]["checkout"]) {
            if clean(&resolve(stage, c["path"].as_str().unwrap_or_default())) == dir {
                repo = s["config"]["repoURL"].as_str().map(|r| resolve(stage, r));
                if branch.is_none() {
                    branch = c["branch"].as_str().map(|b| resolve(stage, b));
                }
            }
        }
    }
    let folders = steps
        .iter()
        .filter(|s| s["uses"] == "kustomize-build")
        .filter_map(|s| s["config"]["outPath"].as_str())
        .map(|p| clean(&resolve(stage, p)))
        .filter_map(|p| {
            let rel = p.strip_prefix(&format!("{dir}/"))?.to_string();
            // An `outPath` ending in `.yaml` is a file: its folder is what Argo CD reads.
            Some(if rel.ends_with(".yaml") || rel.ends_with(".yml") {
                rel.rsplit_once('/')
                    .map_or(String::new(), |(d, _)| d.to_string())
            } else {
                rel
            })
        })
        .collect();
    Some(Writes {
        repo: repo?,
        branch: branch?,
        folders,
    })
}

/// Digest subscriptions whose constraint is not an OCI tag.
fn digest_constraints(doc: usize, warehouse: &Value, out: &mut Vec<RawFinding>) {
    for (i, sub) in array(&warehouse["spec"]["subscriptions"])
        .iter()
        .enumerate()
    {
        let image = &sub["image"];
        if image["imageSelectionStrategy"] != "Digest" {
            continue;
        }
        let Some(c) = image["constraint"].as_str() else {
            continue;
        };
        if !crate::validate::is_oci_tag(c) {
            out.push(RawFinding {
                rule: Rule::DigestConstraintNotTag,
                doc,
                pointer: format!("/spec/subscriptions/{i}/image/constraint"),
                at_key: false,
                message: format!(
                    "Warehouse `{}`: under `Digest`, Kargo asks the registry for tag `{c}`, which is not a valid tag, so no Freight is ever created",
                    name(warehouse)
                ),
                help: Some(
                    "name a mutable tag (`latest`), or use `imageSelectionStrategy: SemVer` with this range and promote `imageFrom(...).Digest`".into(),
                ),
            });
        }
    }
}

/// `promotionPolicies[].stage`, deprecated for `stageSelector`.
fn policy_stage(doc: usize, config: &Value, out: &mut Vec<RawFinding>) {
    for (i, p) in array(&config["spec"]["promotionPolicies"])
        .iter()
        .enumerate()
    {
        if let Some(stage) = p["stage"].as_str() {
            out.push(RawFinding {
                rule: Rule::DeprecatedField,
                doc,
                pointer: format!("/spec/promotionPolicies/{i}/stage"),
                at_key: true,
                message: format!(
                    "ProjectConfig `{}`: `stage` is deprecated since Kargo v1.7",
                    name(config)
                ),
                help: Some(format!("write `stageSelector: {{name: {stage}}}`")),
            });
        }
    }
}

/// Every string `image` of an element of a `containers`, `initContainers` or
/// `ephemeralContainers` list, at any depth (Pods, templates, CronJobs, custom resources),
/// with its JSON Pointer.
fn container_images(v: &Value, at: String, out: &mut Vec<(String, String)>) {
    match v {
        Value::Object(map) => {
            for (k, child) in map {
                let here = kiln_base::pointer::join(&at, k);
                if matches!(
                    k.as_str(),
                    "containers" | "initContainers" | "ephemeralContainers"
                ) && let Value::Array(items) = child
                {
                    for (n, item) in items.iter().enumerate() {
                        if let Some(image) = item.get("image").and_then(Value::as_str) {
                            out.push((format!("{here}/{n}/image"), image.to_string()));
                        }
                    }
                }
                container_images(child, here, out);
            }
        }
        Value::Array(items) => {
            for (n, item) in items.iter().enumerate() {
                container_images(item, format!("{at}/{n}"), out);
            }
        }
        _ => {}
    }
}

fn steps(stage: &Value) -> Vec<Value> {
    array(&stage["spec"]["promotionTemplate"]["spec"]["steps"]).to_vec()
}

fn array(v: &Value) -> &[Value] {
    v.as_array().map_or(&[], Vec::as_slice)
}

fn name(v: &Value) -> String {
    v["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

fn ns(v: &Value) -> String {
    v["metadata"]["namespace"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

fn kind(v: &Value) -> String {
    v["kind"].as_str().unwrap_or_default().to_string()
}

/// `text` with each `${{ vars.x }}` replaced by the Stage's var `x` (others left alone).
fn resolve(stage: &Value, text: &str) -> String {
    let vars = array(&stage["spec"]["promotionTemplate"]["spec"]["vars"]);
    let mut out = text.to_string();
    for v in vars {
        let (Some(n), Some(value)) = (v["name"].as_str(), v["value"].as_str()) else {
            continue;
        };
        out = out.replace(&format!("${{{{ vars.{n} }}}}"), value);
    }
    out
}

/// A path without `./` segments or edge slashes.
fn clean(p: &str) -> String {
    p.split('/')
        .filter(|s| !s.is_empty() && *s != ".")
        .collect::<Vec<_>>()
        .join("/")
}
