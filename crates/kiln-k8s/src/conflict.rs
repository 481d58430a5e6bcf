//! Conflicts that only the whole platform shows, between the objects of different Argo CD
//! Applications (issue 36, item 3):
//!
//! - one object (cluster, namespace, group, kind, name) emitted by two Applications: with
//!   self-heal on both they overwrite each other forever (Argo CD's `SharedResourceWarning`,
//!   argo-cd `controller/state.go`, which compares the tracking label or annotation);
//! - a namespaced object with no namespace where its Application names no destination
//!   namespace (Argo CD then applies it into `default`, rarely what was meant);
//! - a cluster-scoped object emitted into two environments of one cluster with different
//!   content (the same content twice is one object, applied twice to the same effect); two
//!   Applications of one environment emitting it are the first conflict, whatever the
//!   content, as Argo CD warns of any object two Applications track.
//!
//! The rules read an object's [`Identity`] only, never the object: a render validates each
//! BuildPlan's objects as they are rendered and drops them (issue 38, item 8), keeping these
//! few strings and, where content is compared, a digest.

use crate::{Code, Finding};
use serde_json::Value;

/// What the conflict rules read of one object: its API group, kind, name and own
/// namespace, and a digest of its content where two copies may be compared.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    /// The group of `apiVersion` (`""` for the core group).
    pub group: Box<str>,
    pub kind: Box<str>,
    pub name: Box<str>,
    /// `metadata.namespace`, when not empty.
    pub namespace: Option<Box<str>>,
    /// SHA-256 of the object's canonical JSON (keys sorted), when it may be cluster-scoped:
    /// when `namespaced` is not `Some(true)` or it names no namespace (the only objects the
    /// rules compare by content).
    pub content: Option<[u8; 32]>,
}

impl Identity {
    /// The identity of `object`, whose scope is `namespaced` (as [`Placement::namespaced`]).
    pub fn of(object: &Value, namespaced: Option<bool>) -> Identity {
        let text = |v: &Value| v.as_str().unwrap_or_default().into();
        let group = object["apiVersion"]
            .as_str()
            .unwrap_or_default()
            .rsplit_once('/')
            .map(|(g, _)| g)
            .unwrap_or_default();
        let namespace: Option<Box<str>> = object["metadata"]["namespace"]
            .as_str()
            .filter(|n| !n.is_empty())
            .map(Into::into);
        let content = (namespaced != Some(true) || namespace.is_none()).then(|| {
            let mut json = Vec::new();
            canonical(object, &mut json);
            kiln_base::digest::sha256(&json)
        });
        Identity {
            group: group.into(),
            kind: text(&object["kind"]),
            name: text(&object["metadata"]["name"]),
            namespace,
            content,
        }
    }
}

/// `v` as JSON with every object's keys sorted: equal values (`Value`'s equality ignores key
/// order) give equal bytes, and unequal ones unequal bytes.
fn canonical(v: &Value, out: &mut Vec<u8>) {
    match v {
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                canonical(item, out);
            }
            out.push(b']');
        }
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push(b'{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                out.extend_from_slice(Value::String(k.clone()).to_string().as_bytes());
                out.push(b':');
                canonical(&map[k], out);
            }
            out.push(b'}');
        }
        scalar => out.extend_from_slice(scalar.to_string().as_bytes()),
    }
}

/// One rendered object where it is deployed.
#[derive(Debug, Clone)]
pub struct Placement<'a> {
    /// The owning Argo CD Application's name.
    pub application: &'a str,
    /// The environment the Application deploys.
    pub environment: &'a str,
    /// The destination cluster (its name or server URL).
    pub cluster: &'a str,
    /// The Application's `spec.destination.namespace`, when it names one.
    pub destination_namespace: Option<&'a str>,
    pub object: &'a Identity,
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
pub fn conflicts<'a>(placements: &[Placement<'a>]) -> Vec<Conflict> {
    let mut out = Vec::new();
    // (cluster, namespace, group, kind, name) → first placement seen. Only looked up, never
    // iterated (the findings come in `placements`' order), so a hash map: a B-tree of
    // five-string keys was a second of one thread at 1,000,000 objects, comparing prefixes.
    let mut owners: rustc_hash::FxHashMap<(&str, &str, &str, &str, &str), usize> =
        rustc_hash::FxHashMap::default();
    owners.reserve(placements.len());
    for (i, p) in placements.iter().enumerate() {
        let Identity {
            group, kind, name, ..
        } = p.object;
        let own_namespace = p.object.namespace.as_deref();
        let namespace: &'a str = match p.namespaced {
            Some(false) => "",
            _ => own_namespace
                .or(p.destination_namespace)
                .unwrap_or_default(),
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
        let key = (p.cluster, namespace, &**group, &**kind, &**name);
        let Some(&first) = owners.get(&key) else {
            owners.insert(key, i);
            continue;
        };
        let other = &placements[first];
        if other.application == p.application {
            continue;
        }
        let finding = if p.namespaced == Some(false) && other.environment != p.environment {
            // Both have a digest (see `Identity::content`): `p` is cluster-scoped, and
            // `other` shares its key, so it is cluster-scoped or names no namespace.
            if other.object.content.is_some() && other.object.content == p.object.content {
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
