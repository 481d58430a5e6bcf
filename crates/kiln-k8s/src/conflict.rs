//! Conflicts that only the whole platform shows, between the objects of different Argo CD
//! Applications (issue 36, item 3):
//!
//! - one object (cluster, namespace, group, kind, name) emitted by two Applications: with
//!   self-heal on both they overwrite each other forever (Argo CD's `SharedResourceWarning`,
//!   argo-cd `controller/state.go`, which compares the tracking label or annotation);
//! - a namespaced object with no namespace where its Application names no destination
//!   namespace (Argo CD then applies it into `default`, rarely what was meant);
//! - a cluster-scoped object emitted into two environments of one cluster with different
//!   content (the same content twice is one object, applied twice to the same effect).

use crate::{Code, Finding};
use serde_json::Value;
use std::collections::BTreeMap;

/// One rendered object where it is deployed.
#[derive(Debug, Clone)]
pub struct Placement<'a> {
    /// The owning Argo CD Application's name.
    pub application: &'a str,
    /// The destination cluster (its name or server URL).
    pub cluster: &'a str,
    /// The Application's `spec.destination.namespace`, when it names one.
    pub destination_namespace: Option<&'a str>,
    pub object: &'a Value,
    /// `Some(true)` namespaced, `Some(false)` cluster-scoped, `None` unknown (a kind with no
    /// schema: only its own namespace counts).
    pub namespaced: Option<bool>,
}

/// A conflict: which placement it is reported at, and the finding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conflict {
    /// Index into the placements given to [`conflicts`].
    pub at: usize,
    pub finding: Finding,
}

/// The platform-wide conflicts among `placements`, in placement order.
pub fn conflicts(placements: &[Placement]) -> Vec<Conflict> {
    let mut out = Vec::new();
    // (cluster, namespace, group, kind, name) → first placement seen.
    let mut owners: BTreeMap<(String, String, String, String, String), usize> = BTreeMap::new();
    for (i, p) in placements.iter().enumerate() {
        let api_version = p.object["apiVersion"].as_str().unwrap_or_default();
        let group = api_version
            .rsplit_once('/')
            .map(|(g, _)| g)
            .unwrap_or_default();
        let kind = p.object["kind"].as_str().unwrap_or_default();
        let name = p.object["metadata"]["name"].as_str().unwrap_or_default();
        let own_namespace = p.object["metadata"]["namespace"]
            .as_str()
            .filter(|n| !n.is_empty());
        let namespace = match p.namespaced {
            Some(false) => String::new(),
            _ => own_namespace
                .or(p.destination_namespace)
                .unwrap_or_default()
                .to_string(),
        };
        if p.namespaced == Some(true)
            && own_namespace.is_none()
            && p.destination_namespace.is_none()
        {
            out.push(Conflict {
                at: i,
                finding: Finding {
                    code: Code::MissingNamespace,
                    pointer: "/metadata".to_string(),
                    message: format!(
                        "{kind} `{name}` is namespaced but has no namespace, and Application `{}` names no destination namespace",
                        p.application
                    ),
                },
            });
        }
        let key = (
            p.cluster.to_string(),
            namespace.clone(),
            group.to_string(),
            kind.to_string(),
            name.to_string(),
        );
        let Some(&first) = owners.get(&key) else {
            owners.insert(key, i);
            continue;
        };
        let other = &placements[first];
        if other.application == p.application {
            continue;
        }
        let finding = if p.namespaced == Some(false) {
            if other.object == p.object {
                continue;
            }
            Finding {
                code: Code::ClusterScopedConflict,
                pointer: String::new(),
                message: format!(
                    "cluster-scoped {kind} `{name}` is emitted into cluster `{}` by Applications `{}` and `{}` with different content",
                    p.cluster, other.application, p.application
                ),
            }
        } else {
            let ns = if namespace.is_empty() {
                String::new()
            } else {
                format!(" in namespace `{namespace}`")
            };
            Finding {
                code: Code::SharedResource,
                pointer: String::new(),
                message: format!(
                    "{kind} `{name}`{ns} of cluster `{}` is owned by Applications `{}` and `{}`; they would overwrite each other (Argo CD's SharedResourceWarning)",
                    p.cluster, other.application, p.application
                ),
            }
        };
        out.push(Conflict { at: i, finding });
    }
    out
}
