//! The Argo CD objects: one Application per (component, environment), and the bootstrap
//! objects of the platform (its AppProject and one root "app of apps" Application).
//!
//! With Kargo: an Application tracks the write repository's branch and the component's
//! folder there, and carries `kargo.akuity.io/authorized-stage: <project>:<stage>` (the Kargo
//! project, not the Argo CD AppProject; case g01) so the Stage's `argocd-update` may sync it.
//! Without Kargo: it tracks the rendered folder on the source repository's branch.
//!
//! Prune policy: every Application has `syncPolicy.automated` with `prune` and `selfHeal`,
//! and no `enabled`: that field exists only from Argo CD v3.1, an older API server drops it
//! (or rejects it under strict validation), and an absent `enabled` already means enabled
//! (`pkg/apis/application/v1alpha1/types.go` `IsAutomatedSyncEnabled`, Argo CD v3.5.1), so
//! the Applications read the same on v3.0 and later.
//! Kargo's own syncs never prune (`argocd-update` starts an operation with no `prune`,
//! `pkg/promotion/runner/builtin/argocd_updater.go` `syncApplication`, Kargo v1.11.2), so a
//! resource removed from a render would stay in the cluster. With automated prune and
//! self-heal, Argo CD follows Kargo's sync of a revision with its own pruning sync of the
//! same revision once the Application is still OutOfSync (`controller/appcontroller.go`
//! `autoSync`, Argo CD v3.5.1: an already attempted, successful revision is synced again
//! only under `selfHeal`, with `Prune` from the policy). A Stage pinned to its commit
//! (`updateTargetRevision`) keeps its Application on that commit, so automated sync never
//! runs ahead of Kargo.
//!
//! Bootstrap (`bootstrap/`, under the rendered tree): the AppProject allows exactly the
//! repositories the Applications read, the (server, namespace) pairs they deploy to, and the
//! cluster-scoped kinds the render holds plus `Namespace` (for `CreateNamespace=true`). The
//! root Application, in Argo CD's `default` project so it can create that AppProject, syncs
//! every `*/kargo/*.yaml`, `*/argocd/*.yaml` and `bootstrap/*.yaml` of the rendered tree on
//! the source branch. It ignores `/spec/source/targetRevision` of each *pinned* Application,
//! one `ignoreDifferences` entry per Application by name, and syncs with
//! `RespectIgnoreDifferences=true`, so it never reverts a commit that Kargo pinned
//! (`updateTargetRevision`, `pkg/promotion/runner/builtin/argocd_updater.go`
//! `applyArgoCDSourceUpdate`, Kargo v1.11.2) but does set the branch of every Application that
//! tracks one: with RespectIgnoreDifferences the sync copies the live value of an ignored
//! field into what it applies (`controller/sync.go` `normalizeTargetResources`, Argo CD
//! v3.5.1), so one entry matching every Application would keep a branch-tracking Application
//! on its old branch forever after a `branchPattern` or `pathPattern` change. The root also
//! syncs with `ServerSideApply=true`: a project-mode Stage passes the 256 KiB
//! `kubectl.kubernetes.io/last-applied-configuration` annotation of client-side apply at about
//! 360 components. Argo CD matches
//! `directory.include` against the path relative to `path`, with a glob that has no
//! separators, so `*` spans directories (`reposerver/repository/repository.go`
//! `getPotentiallyValidManifests`, `util/glob/glob.go`).

use super::{ARGOCD_API, AUTHORIZED_STAGE, Input, Pair, Project, SYNC_WAVE, object, pair_labels};
use crate::resource::Resource;
use serde_json::{Value, json};
use std::collections::BTreeSet;

/// Where the bootstrap objects go, relative to the rendered tree.
pub const BOOTSTRAP_DIR: &str = "bootstrap";
/// The in-cluster API server: where Argo CD and Kargo run.
pub const IN_CLUSTER: &str = "https://kubernetes.default.svc";

/// `syncPolicy.automated` of every generated Application (see the module docs).
fn automated() -> Value {
    json!({ "prune": true, "selfHeal": true })
}

/// Builds the Application of `p`.
pub(super) fn application(input: &Input<'_>, p: &Pair<'_>) -> Resource {
    let (metadata, source) = match &p.target {
        Some(t) => (
            json!({
                "name": p.app,
                "namespace": input.platform.argocd.namespace,
                "labels": pair_labels(p),
                "annotations": { AUTHORIZED_STAGE: format!("{}:{}", p.project.name, p.stage) },
            }),
            json!({ "repoURL": t.repo_url, "targetRevision": t.branch, "path": t.path }),
        ),
        None => (
            json!({ "name": p.app, "namespace": input.platform.argocd.namespace, "labels": pair_labels(p) }),
            json!({
                "repoURL": input.platform.source.repo_url.clone().unwrap_or_default(),
                "targetRevision": match &input.opts.environment_branches {
                    Some(prefix) => format!("{prefix}{}", p.env.name),
                    None => input.platform.source.branch.clone(),
                },
                "path": match &input.opts.environment_branches {
                    Some(_) => without_environment(&p.src_path, &p.env.name),
                    None => p.src_path.clone(),
                },
            }),
        ),
    };
    object(
        ARGOCD_API,
        "Application",
        metadata,
        Some(json!({
            "project": input.platform.argocd.project,
            "source": source,
            "destination": { "server": p.server, "namespace": p.namespace },
            "syncPolicy": { "automated": automated(), "syncOptions": ["CreateNamespace=true"] },
        })),
    )
}

/// `src_path` (`deploy/<project>/<env>/<component>`, or its cluster-layout form) without its
/// environment segment: where `kiln publish --per-environment` puts the folder on the
/// environment's branch (`git::split_by_environment` drops the same segment).
fn without_environment(src_path: &str, env: &str) -> String {
    let mut segments: Vec<&str> = src_path.split('/').collect();
    // The environment is the segment before the component's name, the last one.
    if segments.len() >= 2 && segments[segments.len() - 2] == env {
        segments.remove(segments.len() - 2);
    }
    segments.join("/")
}

/// The AppProject named by `spec.gitops.argocd.project`, allowing what `pairs` need. `None`
/// for `default`: that project exists in every Argo CD and other Applications use it, so
/// kiln does not narrow it.
pub(super) fn app_project(
    input: &Input<'_>,
    resolved: &[(&Project, Vec<Pair<'_>>)],
) -> Option<Resource> {
    if input.platform.argocd.project == "default" {
        return None;
    }
    let mut repos = BTreeSet::new();
    let mut destinations = BTreeSet::new();
    for p in resolved.iter().flat_map(|(_, pairs)| pairs) {
        let repo = match &p.target {
            Some(t) => t.repo_url.clone(),
            None => input.platform.source.repo_url.clone().unwrap_or_default(),
        };
        repos.insert(repo);
        destinations.insert((p.server.clone(), p.namespace.clone()));
    }
    let mut kinds: BTreeSet<(String, String)> = input.opts.cluster_kinds.clone();
    kinds.insert((String::new(), "Namespace".into()));
    Some(object(
        ARGOCD_API,
        "AppProject",
        json!({
            "name": input.platform.argocd.project,
            "namespace": input.platform.argocd.namespace,
            "annotations": { SYNC_WAVE: "-1" },
            "labels": { "app.kubernetes.io/managed-by": "kiln" },
        }),
        Some(json!({
            "description": format!("Applications of platform {} (generated by kiln)", input.platform.name),
            "sourceRepos": repos.into_iter().collect::<Vec<_>>(),
            "destinations": destinations
                .into_iter()
                .map(|(server, namespace)| json!({ "server": server, "namespace": namespace }))
                .collect::<Vec<_>>(),
            "clusterResourceWhitelist": kinds
                .into_iter()
                .map(|(group, kind)| json!({ "group": group, "kind": kind }))
                .collect::<Vec<_>>(),
        })),
    ))
}

/// The root Application: applies kiln's Kargo and Argo CD objects from the source
/// repository, ignoring the `targetRevision` of the pinned Applications among `resolved`
/// (see the module docs).
pub(super) fn root_application(
    input: &Input<'_>,
    resolved: &[(&Project, Vec<Pair<'_>>)],
) -> Resource {
    let repo = input.platform.source.repo_url.clone().unwrap_or_default();
    let path = super::join_path(&[&input.platform.source.rendered_path]);
    // By name, in name order: a branch-tracking Application must follow its branch in Git.
    let pinned: BTreeSet<&str> = resolved
        .iter()
        .flat_map(|(_, pairs)| pairs)
        .filter(|p| p.pin)
        .map(|p| p.app.as_str())
        .collect();
    let pinned: Vec<Value> = pinned
        .into_iter()
        .map(|name| {
            json!({
                "group": "argoproj.io",
                "kind": "Application",
                "name": name,
                "namespace": input.platform.argocd.namespace,
                "jsonPointers": ["/spec/source/targetRevision"],
            })
        })
        .collect();
    let mut root = object(
        ARGOCD_API,
        "Application",
        json!({
            "name": format!("{}-root", input.platform.name),
            "namespace": input.platform.argocd.namespace,
            "labels": { "app.kubernetes.io/managed-by": "kiln" },
        }),
        Some(json!({
            "project": "default",
            "source": {
                "repoURL": repo,
                "targetRevision": input.platform.source.branch,
                "path": if path.is_empty() { ".".to_string() } else { path },
                "directory": {
                    "recurse": true,
                    "include": format!("{{*/kargo/*.yaml,*/argocd/*.yaml,{BOOTSTRAP_DIR}/*.yaml}}"),
                },
            },
            "destination": { "server": IN_CLUSTER, "namespace": input.platform.argocd.namespace },
            "ignoreDifferences": pinned,
            "syncPolicy": {
                "automated": automated(),
                "syncOptions": ["RespectIgnoreDifferences=true", "ServerSideApply=true"],
            },
        })),
    );
    if let Some(spec) = root.value.get_mut("spec").and_then(Value::as_object_mut)
        && spec["ignoreDifferences"]
            .as_array()
            .is_some_and(Vec::is_empty)
    {
        // Nothing pinned: no entry, as Argo CD would store the field (omitempty).
        spec.remove("ignoreDifferences");
    }
    root
}
