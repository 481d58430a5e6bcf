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

use crate::kustomize::types::kustomization::nullable;
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
    #[serde(default, deserialize_with = "nullable")]
    pub order_first: Vec<String>,
    #[serde(default, deserialize_with = "nullable")]
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

/// Runs the field-transformer cases of `tests/kustomize` through this module and its siblings
/// (labels, annotations, replicas, images, replacements, order), in kustomize's transformer
/// order, and compares with `expected.yaml` byte for byte. Cases that use fields handled
/// elsewhere (namePrefix, patches, generators, ...) are left to the engine's runner.
#[cfg(test)]
mod differential {
    use super::*;
    use crate::kustomize::filters::{
        imagetag as images, labels, replacement as replacements, replica_count as replicas,
    };
    use crate::kustomize::types::fieldspec::UserFieldSpec;
    use crate::yaml;
    use serde_json::Value;
    use std::path::Path;

    const HANDLED: &[&str] = &[
        "apiVersion",
        "kind",
        "resources",
        "commonLabels",
        "labels",
        "commonAnnotations",
        "replicas",
        "images",
        "replacements",
        "sortOptions",
        "configurations",
    ];

    /// The field-spec tables of `configurations:` files that this module family reads.
    #[derive(Default)]
    struct Configs {
        common_labels: Vec<UserFieldSpec>,
        template_labels: Vec<UserFieldSpec>,
        common_annotations: Vec<UserFieldSpec>,
        images: Vec<UserFieldSpec>,
    }

    fn field<T: serde::de::DeserializeOwned + Default>(k: &Value, key: &str) -> Result<T, String> {
        match k.get(key) {
            Some(v) => serde_json::from_value(v.clone()).map_err(|e| format!("{key}: {e}")),
            None => Ok(T::default()),
        }
    }

    /// `Ok(None)` when the case needs a transformer this kit does not run; `Err` when the build
    /// fails (kubectl fails too, for the scratch comparison below).
    fn build(dir: &Path) -> Result<Option<String>, String> {
        let read = |name: &str| {
            std::fs::read_to_string(dir.join(name)).map_err(|e| format!("{name}: {e}"))
        };
        let k = yaml::parse_one("kustomization.yaml", &read("kustomization.yaml")?)
            .map_err(|e| e.to_string())?;
        let Some(obj) = k.as_object() else {
            return Ok(None);
        };
        if obj.keys().any(|key| !HANDLED.contains(&key.as_str())) {
            return Ok(None);
        }
        let mut cfg = Configs::default();
        for file in field::<Vec<String>>(&k, "configurations")? {
            let c = yaml::parse_one(&file, &read(&file)?).map_err(|e| e.to_string())?;
            let Some(c_obj) = c.as_object() else {
                return Ok(None);
            };
            for (key, specs) in c_obj {
                let specs: Vec<UserFieldSpec> =
                    serde_json::from_value(specs.clone()).map_err(|e| format!("{file}: {e}"))?;
                match key.as_str() {
                    "commonLabels" => cfg.common_labels.extend(specs),
                    "templateLabels" => cfg.template_labels.extend(specs),
                    "commonAnnotations" => cfg.common_annotations.extend(specs),
                    "images" => cfg.images.extend(specs),
                    _ => return Ok(None),
                }
            }
        }
        let mut resources = Vec::new();
        for file in field::<Vec<String>>(&k, "resources")? {
            for v in yaml::parse_stream(&file, &read(&file)?).map_err(|e| e.to_string())? {
                resources.push(Resource::new(v, None));
            }
        }
        // kustomize's LabelTransformer configurator: `labels` entries first, then commonLabels.
        for entry in field::<Vec<labels::Label>>(&k, "labels")? {
            labels::apply_labels(
                &mut resources,
                &entry,
                &cfg.common_labels,
                &cfg.template_labels,
            )
            .map_err(|e| e.to_string())?;
        }
        labels::apply_common_labels(
            &mut resources,
            &field(&k, "commonLabels")?,
            &cfg.common_labels,
        )
        .map_err(|e| e.to_string())?;
        labels::apply_common_annotations(
            &mut resources,
            &field(&k, "commonAnnotations")?,
            &cfg.common_annotations,
        )
        .map_err(|e| e.to_string())?;
        replicas::apply_replicas(
            &mut resources,
            &field::<Vec<replicas::Replica>>(&k, "replicas")?,
        )
        .map_err(|e| e.to_string())?;
        images::apply_images(
            &mut resources,
            &field::<Vec<images::Image>>(&k, "images")?,
            &cfg.images,
        )
        .map_err(|e| e.to_string())?;
        let mut reps = Vec::new();
        for f in field::<Vec<replacements::ReplacementField>>(&k, "replacements")? {
            if f.path.is_empty() {
                reps.push(f.inline());
            } else {
                let v = yaml::parse_one(&f.path, &read(&f.path)?).map_err(|e| e.to_string())?;
                reps.extend(
                    replacements::replacements_from_value(&f.path, &v)
                        .map_err(|e| e.to_string())?,
                );
            }
        }
        replacements::apply_replacements(&mut resources, &reps).map_err(|e| e.to_string())?;
        let sort: Option<SortOptions> = match k.get("sortOptions") {
            Some(v) => Some(serde_json::from_value(v.clone()).map_err(|e| e.to_string())?),
            None => None,
        };
        sort_resources(&mut resources, sort.as_ref()).map_err(|e| e.to_string())?;
        let values: Vec<Value> = resources
            .into_iter()
            .map(|r| stringify_annotations(r.value))
            .collect();
        Ok(Some(yaml::to_yaml_stream(&values)))
    }

    /// Stand-in for the engine's last step: kustomize writes every annotation value as a
    /// string (it reads them back as `map[string]string`: a number or boolean keeps its text,
    /// `null` becomes `"null"`, a map or list `""`); labels are left as they are.
    fn stringify_annotations(mut v: Value) -> Value {
        if let Some(Value::Object(annos)) = v.pointer_mut("/metadata/annotations") {
            for val in annos.values_mut() {
                let text = match val {
                    Value::String(_) => continue,
                    Value::Number(n) => n.to_string(),
                    Value::Bool(b) => b.to_string(),
                    Value::Null => "null".to_string(),
                    Value::Array(_) | Value::Object(_) => String::new(),
                };
                *val = Value::String(text);
            }
        }
        v
    }

    fn check(case: &str) {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/kustomize")
            .join(case);
        let got = build(&dir.join("input"))
            .unwrap_or_else(|e| panic!("{case}: build failed: {e}"))
            .unwrap_or_else(|| panic!("{case} uses fields this kit does not run"));
        let want = std::fs::read_to_string(dir.join("expected.yaml")).unwrap();
        assert_eq!(got, want, "case {case}");
    }

    /// Development aid: `KILN_SCRATCH_CASES=/dir cargo test --lib scratch -- --ignored` runs
    /// every `<dir>/<case>/input` and compares with `<case>/expected.yaml`, or expects a
    /// failure where `<case>/expected.err` exists (kubectl failed). Used to fuzz against
    /// `kubectl kustomize`.
    #[test]
    #[ignore]
    fn scratch() {
        let Ok(root) = std::env::var("KILN_SCRATCH_CASES") else {
            return;
        };
        let mut failures = Vec::new();
        let mut entries: Vec<_> = std::fs::read_dir(&root)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        entries.sort();
        for case in entries {
            let got = build(&case.join("input"));
            let want_err = case.join("expected.err").exists();
            let name = case.display().to_string();
            match (got, want_err) {
                (Ok(None), _) => {}
                (Ok(Some(out)), false) => {
                    if out != std::fs::read_to_string(case.join("expected.yaml")).unwrap() {
                        // Left beside the case for `diff`.
                        std::fs::write(case.join("got.yaml"), &out).unwrap();
                        failures.push(format!("{name}: output differs"));
                    }
                }
                (Ok(Some(_)), true) => failures.push(format!("{name}: kubectl failed, we did not")),
                (Err(e), false) => failures.push(format!("{name}: we failed: {e}")),
                (Err(_), true) => {}
            }
        }
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }

    macro_rules! cases {
        ($($name:ident => $case:literal,)*) => {
            $(#[test] fn $name() { check($case); })*
        };
    }

    cases! {
        k02 => "k02-image-registry-port",
        k03 => "k03-image-tag-and-digest",
        k07 => "k07-labels-selectors-templates",
        k11 => "k11-legacy-resource-order",
        k12 => "k12-replacements-create-quoting",
        kf01 => "kf01-images-newname-newtag",
        kf02 => "kf02-images-digest",
        kf03 => "kf03-images-initcontainers-cronjob",
        kf04 => "kf04-images-custom-resources",
        kf05 => "kf05-images-ports-and-localhost",
        kf06 => "kf06-images-tag-suffix",
        kf07 => "kf07-common-labels-workloads",
        kf08 => "kf08-common-labels-affinity",
        kf09 => "kf09-labels-include-templates",
        kf10 => "kf10-labels-include-selectors-fields",
        kf11 => "kf11-common-annotations-templates",
        kf12 => "kf12-common-labels-service-netpol",
        kf13 => "kf13-replicas-kinds",
        kf15 => "kf15-replacements-delimiter-index",
        kf16 => "kf16-replacements-create",
        kf17 => "kf17-replacements-select-reject",
        kf18 => "kf18-replacements-maps-and-types",
        kf19 => "kf19-replacements-from-file",
        kf20 => "kf20-sort-fifo",
        kf21 => "kf21-sort-legacy-custom-lists",
        kf22 => "kf22-sort-legacy-ties",
        kf23 => "kf23-labels-annotations-combined",
        kf24 => "kf24-images-multiple-entries-chain",
        kf25 => "kf25-replacements-wildcard-index",
        kf26 => "kf26-labels-annotations-group-rules",
        kf27 => "kf27-common-labels-optional-selectors",
        kf28 => "kf28-labels-never-create-lists",
        kf29 => "kf29-configurations-field-specs",
    }
}
