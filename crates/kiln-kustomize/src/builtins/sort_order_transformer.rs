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

pub use crate::types::sortoptions::{LegacySortOptions, SortOptions, SortOrder};
use kiln_base::resource::Resource;
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
    /// `sortOptions.order` is neither `fifo` nor `legacy` (the build reports it at the
    /// kustomization before sorting).
    #[error("{0}")]
    #[diagnostic(
        code(kiln::kustomize::sort_order_invalid),
        help("use `order: legacy` or `order: fifo`")
    )]
    InvalidOrder(String),
}

/// Sorts `resources` as the root kustomization's `sortOptions` say (`None`: legacy order with
/// the default lists).
///
/// Errors: [`OrderError::LegacyOptionsWithFifo`], [`OrderError::InvalidOrder`].
pub fn sort_resources(
    resources: &mut [Resource],
    options: Option<&SortOptions>,
) -> Result<(), OrderError> {
    let Some(options) = options else {
        sort_legacy(resources, DEFAULT_ORDER_FIRST, DEFAULT_ORDER_LAST);
        return Ok(());
    };
    let order = options.sort_order().map_err(OrderError::InvalidOrder)?;
    match (order, &options.legacy_sort_options) {
        (SortOrder::Fifo, Some(_)) => return Err(OrderError::LegacyOptionsWithFifo),
        (SortOrder::Fifo, None) => {}
        (SortOrder::Legacy, None) => {
            sort_legacy(resources, DEFAULT_ORDER_FIRST, DEFAULT_ORDER_LAST)
        }
        (SortOrder::Legacy, Some(l)) => {
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
    // The keys are computed once per object, not once per comparison: the comparison used to
    // re-read `apiVersion`, look up the rank and format two strings on every call, which was
    // a tenth of a large build. Sorting the keys (stable) and then moving the objects gives
    // the same order as sorting the objects with the same comparison.
    let keys: Vec<LegacyKey> = resources.iter().map(|r| LegacyKey::of(r, &ranks)).collect();
    let mut order: Vec<usize> = (0..resources.len()).collect();
    order.sort_by(|&a, &b| legacy_cmp(&keys[a], &keys[b]));
    apply_permutation(resources, order);
}

/// Puts `items[order[i]]` at position `i`, in place (follows each cycle of the permutation
/// with swaps; a resource has no cheap placeholder to move out with).
fn apply_permutation<T>(items: &mut [T], mut order: Vec<usize>) {
    const DONE: usize = usize::MAX;
    for start in 0..order.len() {
        if order[start] == DONE {
            continue;
        }
        let mut at = start;
        loop {
            let from = order[at];
            order[at] = DONE;
            if from == start {
                break;
            }
            // `items[from]` is still the original there (each position is visited once per
            // cycle); the element carried along the cycle moves to `from`.
            items.swap(at, from);
            at = from;
        }
    }
}

/// What [`legacy_cmp`] looks at, taken from one object.
struct LegacyKey {
    group: String,
    version: String,
    kind: String,
    rank: i64,
    /// `group_version_kind` with kustomize's `~G`/`~V`/`~K` placeholders for empty parts.
    gvk: String,
    /// The rest of `legacyResIDSortString`: `namespace|name` with `~X`/`~N` placeholders.
    ns_name: String,
}

impl LegacyKey {
    fn of(r: &Resource, ranks: &BTreeMap<&str, i64>) -> Self {
        let or = |s: &str, d: &'static str| if s.is_empty() { d } else { s }.to_string();
        LegacyKey {
            group: r.group().to_string(),
            version: r.version().to_string(),
            kind: r.kind().to_string(),
            rank: ranks.get(r.kind()).copied().unwrap_or(0),
            gvk: format!(
                "{}_{}_{}",
                or(r.group(), "~G"),
                or(r.version(), "~V"),
                or(r.kind(), "~K")
            ),
            ns_name: format!(
                "{}|{}",
                r.namespace().unwrap_or("~X"),
                if r.name().is_empty() { "~N" } else { r.name() }
            ),
        }
    }
}

fn legacy_cmp(a: &LegacyKey, b: &LegacyKey) -> Ordering {
    let same_gvk = a.group == b.group && a.version == b.version && a.kind == b.kind;
    if !same_gvk {
        if a.rank != b.rank {
            return a.rank.cmp(&b.rank);
        }
        // kustomize quirk (gvkLessThan): between two `Namespace` kinds where one is in the
        // core group, the comparison is reversed so the core Namespace (`~G_...`) comes first.
        if a.kind == "Namespace"
            && b.kind == "Namespace"
            && (a.group.is_empty() || b.group.is_empty())
        {
            return b.gvk.cmp(&a.gvk);
        }
        return a.gvk.cmp(&b.gvk);
    }
    // legacyResIDSortString: `gvk|namespace|name`; the gvk part is equal here, but the `|`
    // separator still decides between names that are prefixes of each other, so compare the
    // joined strings as kustomize does.
    a.ns_name.cmp(&b.ns_name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn permutation_is_applied_in_place_across_cycles() {
        // Cycles (0 2 4) and (1 3), plus a fixed point (5).
        let mut items = vec!['a', 'b', 'c', 'd', 'e', 'f'];
        apply_permutation(&mut items, vec![2, 3, 4, 1, 0, 5]);
        assert_eq!(items, ['c', 'd', 'e', 'b', 'a', 'f']);
        let mut empty: Vec<char> = vec![];
        apply_permutation(&mut empty, vec![]);
        assert!(empty.is_empty());
    }

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
            order: "legacy".into(),
            legacy_sort_options: Some(LegacySortOptions {
                order_first: vec!["Service".into()],
                order_last: vec![],
            }),
        };
        sort_resources(&mut rs, Some(&opts)).unwrap();
        assert_eq!(ids(&rs), ["Service/s", "Deployment/d", "ConfigMap/c"]);

        let mut rs = base.clone();
        let opts = SortOptions {
            order: "legacy".into(),
            legacy_sort_options: Some(LegacySortOptions::default()),
        };
        sort_resources(&mut rs, Some(&opts)).unwrap();
        assert_eq!(ids(&rs), ["Deployment/d", "ConfigMap/c", "Service/s"]);

        let mut rs = base.clone();
        sort_resources(
            &mut rs,
            Some(&SortOptions {
                order: "fifo".into(),
                legacy_sort_options: None,
            }),
        )
        .unwrap();
        assert_eq!(ids(&rs), ids(&base));
    }

    #[test]
    fn fifo_with_legacy_options_is_an_error() {
        let opts = SortOptions {
            order: "fifo".into(),
            legacy_sort_options: Some(LegacySortOptions::default()),
        };
        assert!(matches!(
            sort_resources(&mut [], Some(&opts)),
            Err(OrderError::LegacyOptionsWithFifo)
        ));
        let order = |o: &str| {
            SortOptions {
                order: o.into(),
                legacy_sort_options: None,
            }
            .sort_order()
        };
        assert_eq!(
            order("bogus").unwrap_err(),
            "unknown variant `bogus`, expected `fifo` or `legacy`"
        );
        assert_eq!(order("").unwrap_err(), "missing field `order`");
    }
}
