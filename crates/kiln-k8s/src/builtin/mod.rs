//! The built-in kinds' schemas per Kubernetes version (ADR 0020): tables committed under
//! `tables/`, written from k8s-openapi 0.29 by `regenerate` (a test behind the `regenerate`
//! feature, one version per run), read here with `include_str!` and compiled once per
//! version on first use (a few milliseconds; then every object of every kind is one walk).

use crate::schema::{NodeId, Schemas};
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::OnceLock;

#[cfg(feature = "regenerate")]
mod regenerate;
#[cfg(feature = "regenerate")]
mod resources;

/// The Kubernetes minor versions kiln has schemas for, oldest first.
pub const VERSIONS: [&str; 5] = ["1.33", "1.34", "1.35", "1.36", "1.37"];

/// The version used when a cluster names none (`clusters[].kubeVersion`, `--kube-version`):
/// the one kiln's Helm engine reports as `.Capabilities.KubeVersion` by default, so charts
/// choose their APIs for the version they are validated against.
pub const DEFAULT_VERSION: &str = "1.36";

const TEXTS: [&str; 5] = [
    include_str!("../../tables/v1.33.json"),
    include_str!("../../tables/v1.34.json"),
    include_str!("../../tables/v1.35.json"),
    include_str!("../../tables/v1.36.json"),
    include_str!("../../tables/v1.37.json"),
];

/// One built-in kind.
#[derive(Debug, Clone)]
pub struct Kind {
    pub root: NodeId,
    pub namespaced: bool,
}

/// The compiled schemas of one Kubernetes version.
#[derive(Debug)]
pub struct Builtin {
    pub version: &'static str,
    pub schemas: Schemas,
    /// (group, version, kind) → kind.
    pub kinds: BTreeMap<(String, String, String), Kind>,
    /// kind → its (group, version)s: what [`Builtin::kind`] looks up for every object, with
    /// no key to allocate (a lookup in `kinds` needs three owned strings).
    by_kind: rustc_hash::FxHashMap<String, Vec<(String, String, Kind)>>,
}

impl Builtin {
    /// The compiled schemas of `version` (`1.33`, `v1.33`, `1.33.4`), compiled on first use.
    /// Errors: a version kiln has no table for, naming the ones it has.
    pub fn get(version: &str) -> Result<&'static Builtin, String> {
        static CELLS: [OnceLock<Builtin>; 5] = [const { OnceLock::new() }; 5];
        let minor = normalize(version).ok_or_else(|| {
            format!(
                "no Kubernetes schemas for version `{version}`; kiln has {}",
                VERSIONS.join(", ")
            )
        })?;
        let i = VERSIONS.iter().position(|v| *v == minor).unwrap_or(0);
        Ok(CELLS[i].get_or_init(|| compile(VERSIONS[i], TEXTS[i])))
    }

    /// The kind, when this version serves it.
    pub fn kind(&self, group: &str, version: &str, kind: &str) -> Option<&Kind> {
        self.by_kind
            .get(kind)?
            .iter()
            .find(|(g, v, _)| g == group && v == version)
            .map(|(_, _, k)| k)
    }

    /// `true` when some built-in kind has this group (`""` is the core group).
    pub fn has_group(&self, group: &str) -> bool {
        // `extensions` served Deployments, Ingresses and more until 1.16/1.22.
        group == "extensions" || self.kinds.keys().any(|(g, _, _)| g == group)
    }

    /// The versions of `group` that serve `kind`, for the help of an unserved version.
    pub fn versions_of(&self, group: &str, kind: &str) -> Vec<&str> {
        self.kinds
            .keys()
            .filter(|(g, _, k)| g == group && k == kind)
            .map(|(_, v, _)| v.as_str())
            .collect()
    }
}

/// `v1.33.2` → `1.33`, when kiln has that minor version.
pub fn normalize(version: &str) -> Option<&'static str> {
    let v = version.trim().trim_start_matches('v');
    let mut parts = v.split('.');
    let minor = format!("{}.{}", parts.next()?, parts.next()?);
    VERSIONS.iter().find(|known| **known == minor).copied()
}

/// Compiles a committed table. The tables are written by `regenerate` and drift-tested,
/// so a table that does not parse is a build defect, reported as such.
fn compile(version: &'static str, text: &str) -> Builtin {
    let table: Value = serde_json::from_str(text).expect("committed table is JSON (regenerate it)");
    let defs = table["definitions"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    let schemas =
        Schemas::from_definitions(&defs).expect("committed table compiles (regenerate it)");
    let mut kinds = BTreeMap::new();
    for entry in table["kinds"].as_array().into_iter().flatten() {
        let s = |i: usize| entry[i].as_str().unwrap_or_default().to_string();
        if let Some(root) = schemas.definition(&s(3)) {
            kinds.insert(
                (s(0), s(1), s(2)),
                Kind {
                    root,
                    namespaced: entry[4].as_bool().unwrap_or(true),
                },
            );
        }
    }
    let mut by_kind: rustc_hash::FxHashMap<String, Vec<(String, String, Kind)>> =
        rustc_hash::FxHashMap::default();
    for ((group, version, kind), k) in &kinds {
        by_kind
            .entry(kind.clone())
            .or_default()
            .push((group.clone(), version.clone(), k.clone()));
    }
    Builtin {
        version,
        schemas,
        kinds,
        by_kind,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_version_compiles_with_its_kinds() {
        for v in VERSIONS {
            let b = Builtin::get(v).unwrap();
            assert!(
                b.kind("apps", "v1", "Deployment")
                    .is_some_and(|k| k.namespaced),
                "{v}"
            );
            assert!(
                b.kind("rbac.authorization.k8s.io", "v1", "ClusterRole")
                    .is_some_and(|k| !k.namespaced),
                "{v}"
            );
        }
    }

    #[test]
    fn versions_differ_where_kubernetes_does() {
        // resource.k8s.io/v1 arrived in 1.34.
        assert!(
            Builtin::get("1.33")
                .unwrap()
                .kind("resource.k8s.io", "v1", "ResourceClaim")
                .is_none()
        );
        assert!(
            Builtin::get("v1.34.1")
                .unwrap()
                .kind("resource.k8s.io", "v1", "ResourceClaim")
                .is_some()
        );
    }

    #[test]
    fn unknown_versions_are_refused() {
        assert!(Builtin::get("1.20").unwrap_err().contains("1.33, 1.34"));
    }
}
