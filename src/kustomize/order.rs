//! Output order of a kustomization build: kustomize's `sortOptions` (`fifo` or `legacy`).
//!
//! Runs last, on the root kustomization's resources. Mirrors kustomize v5.5's
//! `SortOrderTransformer` (api/internal/builtins/SortOrderTransformer.go): `legacy` -- the
//! default when `sortOptions` is absent -- ranks kinds by `orderFirst` (in list order), then
//! every other kind, then `orderLast`; equal ranks by the group/version/kind string
//! (`group_version_kind`, core group written `~G`, so core kinds sort after every named
//! group), with the one quirk that a core `Namespace` goes before a `Namespace` kind of
//! another group; equal kinds by namespace (`~X` when absent) then name. `fifo` keeps input
//! order.
//!
//! Invariant: the sort is total and stable, so output is byte-stable for equal input.

use crate::resource::Resource;
use serde::{Deserialize, Serialize};
use std::cmp::Ordering;
use std::collections::BTreeMap;

/// kustomize's default `orderFirst` list (kyaml/resid/gvk.go `orderFirst`).
pub const DEFAULT_ORDER_FIRST: &[&str] = &[
    "Namespace",
    "ResourceQuota",
    "StorageClass",
    "CustomResourceDefinition",
    "ServiceAccount",
    "PodSecurityPolicy",
    "Role",
    "ClusterRole",
    "RoleBinding",
    "ClusterRoleBinding",
    "ConfigMap",
    "Secret",
    "Endpoints",
    "Service",
    "LimitRange",
    "PriorityClass",
    "PersistentVolume",
    "PersistentVolumeClaim",
    "Deployment",
    "StatefulSet",
    "CronJob",
    "PodDisruptionBudget",
];

/// kustomize's default `orderLast` list.
pub const DEFAULT_ORDER_LAST: &[&str] = &[
    "MutatingWebhookConfiguration",
    "ValidatingWebhookConfiguration",
];

/// The kustomization's `sortOptions` (kustomize `types.SortOptions`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SortOptions {
    /// `fifo` or `legacy`; required when `sortOptions` is given.
    pub order: SortOrder,
    /// Only with `order: legacy`. When given, its lists *replace* the defaults (an absent list
    /// is empty, not defaulted), as in kustomize.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub legacy_sort_options: Option<LegacySortOptions>,
}

/// `sortOptions.order`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SortOrder {
    /// Keep the order resources were read and generated in.
    Fifo,
    /// Rank by kind (see the module docs).
    Legacy,
}

/// `sortOptions.legacySortOptions`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LegacySortOptions {
    #[serde(default)]
    pub order_first: Vec<String>,
    #[serde(default)]
    pub order_last: Vec<String>,
}

/// Errors of `sortOptions`.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum OrderError {
    /// `legacySortOptions` given with `order: fifo`.
    #[error("`sortOptions.legacySortOptions` is set but the sort order is `fifo`, not `legacy`")]
    #[diagnostic(
        code(kiln::kustomize::sort_options_conflict),
        help("remove `legacySortOptions`, or set `order: legacy`")
    )]
    LegacyOptionsWithFifo,
}

/// Sorts `resources` as the root kustomization's `sortOptions` say (`None`: legacy order with
/// the default lists).
///
/// Errors: [`OrderError::LegacyOptionsWithFifo`].
pub fn sort_resources(
    resources: &mut [Resource],
    options: Option<&SortOptions>,
) -> Result<(), OrderError> {
    match options {
        None => sort_legacy(resources, DEFAULT_ORDER_FIRST, DEFAULT_ORDER_LAST),
        Some(SortOptions {
            order: SortOrder::Fifo,
            legacy_sort_options: Some(_),
        }) => {
            return Err(OrderError::LegacyOptionsWithFifo);
        }
        Some(SortOptions {
            order: SortOrder::Fifo,
            legacy_sort_options: None,
        }) => {}
        Some(SortOptions {
            order: SortOrder::Legacy,
            legacy_sort_options: None,
        }) => sort_legacy(resources, DEFAULT_ORDER_FIRST, DEFAULT_ORDER_LAST),
        Some(SortOptions {
            order: SortOrder::Legacy,
            legacy_sort_options: Some(l),
        }) => {
            let first: Vec<&str> = l.order_first.iter().map(String::as_str).collect();
            let last: Vec<&str> = l.order_last.iter().map(String::as_str).collect();
            sort_legacy(resources, &first, &last)
        }
    }
    Ok(())
}

/// kustomize's legacy sort with the given priority lists: kinds in `order_first` get ranks
/// `-len..-1`, kinds in `order_last` `1..`, all others 0 (a kind in both lists takes its
/// `order_last` rank, as kustomize fills that map second).
pub fn sort_legacy<S: AsRef<str>>(resources: &mut [Resource], order_first: &[S], order_last: &[S]) {
    let mut ranks: BTreeMap<&str, i64> = BTreeMap::new();
    let n = order_first.len() as i64;
    for (i, k) in order_first.iter().enumerate() {
        ranks.insert(k.as_ref(), i as i64 - n);
    }
    for (i, k) in order_last.iter().enumerate() {
        ranks.insert(k.as_ref(), 1 + i as i64);
    }
    resources.sort_by(|a, b| legacy_cmp(a, b, &ranks));
}

/// `group_version_kind` with kustomize's `~G`/`~V`/`~K` placeholders for empty parts.
fn gvk_sort_string(r: &Resource) -> String {
    let or = |s: &str, d: &str| {
        if s.is_empty() {
            d.to_string()
        } else {
            s.to_string()
        }
    };
    format!(
        "{}_{}_{}",
        or(r.group(), "~G"),
        or(r.version(), "~V"),
        or(r.kind(), "~K")
    )
}

fn legacy_cmp(a: &Resource, b: &Resource, ranks: &BTreeMap<&str, i64>) -> Ordering {
    let same_gvk = a.group() == b.group() && a.version() == b.version() && a.kind() == b.kind();
    if !same_gvk {
        let (ra, rb) = (
            ranks.get(a.kind()).copied().unwrap_or(0),
            ranks.get(b.kind()).copied().unwrap_or(0),
        );
        if ra != rb {
            return ra.cmp(&rb);
        }
        let (ga, gb) = (gvk_sort_string(a), gvk_sort_string(b));
        // kustomize quirk (gvkLessThan): between two `Namespace` kinds where one is in the
        // core group, the comparison is reversed so the core Namespace (`~G_...`) comes first.
        if a.kind() == "Namespace"
            && b.kind() == "Namespace"
            && (a.group().is_empty() || b.group().is_empty())
        {
            return gb.cmp(&ga);
        }
        return ga.cmp(&gb);
    }
    // legacyResIDSortString: `gvk|namespace|name`; the gvk part is equal here, but the `|`
    // separator still decides between names that are prefixes of each other, so compare the
    // joined strings as kustomize does.
    let key = |r: &Resource| {
        format!(
            "{}|{}",
            r.namespace().unwrap_or("~X"),
            if r.name().is_empty() { "~N" } else { r.name() }
        )
    };
    key(a).cmp(&key(b))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn r(api: &str, kind: &str, ns: Option<&str>, name: &str) -> Resource {
        let mut md = json!({"name": name});
        if let Some(ns) = ns {
            md["namespace"] = json!(ns);
        }
        Resource::new(
            json!({"apiVersion": api, "kind": kind, "metadata": md}),
            None,
        )
    }

    fn ids(rs: &[Resource]) -> Vec<String> {
        rs.iter()
            .map(|r| format!("{}/{}", r.kind(), r.name()))
            .collect()
    }

    #[test]
    fn legacy_default_ranks_then_gvk_then_namespace_and_name() {
        let mut rs = vec![
            r(
                "admissionregistration.k8s.io/v1",
                "ValidatingWebhookConfiguration",
                None,
                "hook",
            ),
            r("example.com/v1", "Widget", Some("apps"), "w"),
            r("batch/v1", "Job", Some("apps"), "j"),
            r("v1", "ConfigMap", Some("zz"), "a"),
            r("v1", "ConfigMap", Some("apps"), "c"),
            r("v1", "ConfigMap", Some("apps"), "b"),
            r("apps/v1", "Deployment", Some("apps"), "d"),
            r("v1", "Namespace", None, "apps"),
            r("v1", "Pod", None, "p"),
        ];
        sort_resources(&mut rs, None).unwrap();
        assert_eq!(
            ids(&rs),
            [
                "Namespace/apps",
                "ConfigMap/b",
                "ConfigMap/c",
                "ConfigMap/a",
                "Deployment/d",
                "Job/j",
                "Widget/w",
                "Pod/p",
                "ValidatingWebhookConfiguration/hook"
            ]
        );
    }

    #[test]
    fn core_namespace_before_other_namespace_kinds() {
        let mut rs = vec![
            r("a.io/v1", "Namespace", None, "x"),
            r("v1", "Namespace", None, "y"),
        ];
        sort_resources(&mut rs, None).unwrap();
        assert_eq!(rs[0].group(), "");
    }

    #[test]
    fn custom_lists_replace_defaults() {
        let base = vec![
            r("v1", "ConfigMap", None, "c"),
            r("v1", "Service", None, "s"),
            r("apps/v1", "Deployment", None, "d"),
        ];
        let mut rs = base.clone();
        let opts = SortOptions {
            order: SortOrder::Legacy,
            legacy_sort_options: Some(LegacySortOptions {
                order_first: vec!["Service".into()],
                order_last: vec![],
            }),
        };
        sort_resources(&mut rs, Some(&opts)).unwrap();
        assert_eq!(ids(&rs), ["Service/s", "Deployment/d", "ConfigMap/c"]);

        let mut rs = base.clone();
        let opts = SortOptions {
            order: SortOrder::Legacy,
            legacy_sort_options: Some(LegacySortOptions::default()),
        };
        sort_resources(&mut rs, Some(&opts)).unwrap();
        assert_eq!(ids(&rs), ["Deployment/d", "ConfigMap/c", "Service/s"]);

        let mut rs = base.clone();
        sort_resources(
            &mut rs,
            Some(&SortOptions {
                order: SortOrder::Fifo,
                legacy_sort_options: None,
            }),
        )
        .unwrap();
        assert_eq!(ids(&rs), ids(&base));
    }

    #[test]
    fn fifo_with_legacy_options_is_an_error() {
        let opts = SortOptions {
            order: SortOrder::Fifo,
            legacy_sort_options: Some(LegacySortOptions::default()),
        };
        assert!(matches!(
            sort_resources(&mut [], Some(&opts)),
            Err(OrderError::LegacyOptionsWithFifo)
        ));
        assert!(serde_json::from_value::<SortOptions>(json!({"order": "bogus"})).is_err());
        assert!(serde_json::from_value::<SortOptions>(json!({})).is_err());
    }
}
