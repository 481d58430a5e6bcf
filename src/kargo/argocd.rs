//! The Argo CD Application of one (component, environment).
//!
//! With Kargo: it tracks the write repository's branch and the component's folder there,
//! carries `kargo.akuity.io/authorized-stage: <project>:<stage>` (the Kargo project, not the
//! Argo CD AppProject; case g01) so the Stage's `argocd-update` may sync it, and has no
//! automated sync (Kargo triggers it). Without Kargo: it tracks the rendered folder on the
//! source repository's branch and syncs automatically.

use super::{ARGOCD_API, AUTHORIZED_STAGE, KargoInput, Pair, object, pair_labels};
use crate::resource::Resource;
use serde_json::json;

/// Builds the Application of `p`.
pub(super) fn application(input: &KargoInput, p: &Pair<'_>) -> Resource {
    let (metadata, source, sync_policy) = match &p.target {
        Some(t) => (
            json!({
                "name": p.app,
                "namespace": input.argocd.namespace,
                "labels": pair_labels(p),
                "annotations": { AUTHORIZED_STAGE: format!("{}:{}", p.project.name, p.stage) },
            }),
            json!({ "repoURL": t.repo_url, "targetRevision": t.branch, "path": t.path }),
            json!({ "syncOptions": ["CreateNamespace=true"] }),
        ),
        None => (
            json!({ "name": p.app, "namespace": input.argocd.namespace, "labels": pair_labels(p) }),
            json!({
                "repoURL": input.source.repo_url.clone().unwrap_or_default(),
                "targetRevision": input.source.branch,
                "path": p.src_path,
            }),
            json!({
                "automated": { "enabled": true, "prune": true, "selfHeal": true },
                "syncOptions": ["CreateNamespace=true"],
            }),
        ),
    };
    object(
        ARGOCD_API,
        "Application",
        metadata,
        Some(json!({
            "project": input.argocd.project,
            "source": source,
            "destination": { "server": p.server, "namespace": p.namespace },
            "syncPolicy": sync_policy,
        })),
    )
}
