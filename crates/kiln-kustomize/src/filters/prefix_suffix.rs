//! `namePrefix` and `nameSuffix`: rename objects, remembering their old names so references
//! can follow (the name-reference transformer runs later and rewrites them).
//!
//! Where it sits: in a kustomization's transformer list after the namespace transformer, prefix
//! first, then suffix (kustomize v5 runs `PrefixTransformer` and `SuffixTransformer` as two
//! builtins in that order). The content-hash suffix of generated objects comes last, once, at
//! the top of the build — [`apply_hash_suffixes`] is re-exported here so the engine finds all
//! renames in one place.
//!
//! Invariants (kustomize `api/builtins/{Prefix,Suffix}Transformer.go`, default field spec
//! `metadata/name`):
//! - CustomResourceDefinitions (any group), APIServices (`apiregistration.k8s.io`) and
//!   Namespaces (any group) are never renamed — their names are meaningful to the API server;
//!   every other kind is, cluster-scoped or not;
//! - a non-empty prefix/suffix appends the pre-rename `(namespace, name)` to
//!   `meta.previous_names` and the prefix/suffix itself to `meta.name_prefixes` /
//!   `meta.name_suffixes`; an empty one changes nothing.

use kiln_base::resource::Resource;

pub use crate::hash::apply_hash_suffixes;

/// Whether kustomize's prefix/suffix transformers skip this object
/// (`prefixSuffixFieldSpecsToSkip`).
pub fn is_rename_exempt(res: &Resource) -> bool {
    matches!(
        (res.group(), res.kind()),
        (_, "CustomResourceDefinition")
            | ("apiregistration.k8s.io", "APIService")
            | (_, "Namespace")
    )
}

/// Prepends `prefix` to every non-exempt object's `metadata.name`.
pub fn apply_name_prefix(resources: &mut [Resource], prefix: &str) {
    rename_all(resources, prefix, true);
}

/// Appends `suffix` to every non-exempt object's `metadata.name`.
pub fn apply_name_suffix(resources: &mut [Resource], suffix: &str) {
    rename_all(resources, suffix, false);
}

/// `namePrefix` then `nameSuffix`, in kustomize's order (two separate renames, each recorded
/// in `meta.previous_names`).
pub fn apply_name_prefix_suffix(resources: &mut [Resource], prefix: &str, suffix: &str) {
    apply_name_prefix(resources, prefix);
    apply_name_suffix(resources, suffix);
}

fn rename_all(resources: &mut [Resource], affix: &str, is_prefix: bool) {
    if affix.is_empty() {
        return;
    }
    for res in resources.iter_mut().filter(|r| !is_rename_exempt(r)) {
        let old_name = res.name().to_string();
        res.meta
            .previous_names
            .push((res.namespace().map(str::to_string), old_name.clone()));
        let new_name = if is_prefix {
            res.meta.name_prefixes.push(affix.to_string());
            format!("{affix}{old_name}")
        } else {
            res.meta.name_suffixes.push(affix.to_string());
            format!("{old_name}{affix}")
        };
        res.set_name(&new_name);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn res(api_version: &str, kind: &str, name: &str) -> Resource {
        Resource::new(
            json!({"apiVersion": api_version, "kind": kind, "metadata": {"name": name}}),
            None,
        )
    }

    #[test]
    fn renames_everything_but_exempt_kinds() {
        let mut rs = vec![
            res("apps/v1", "Deployment", "app"),
            res("rbac.authorization.k8s.io/v1", "ClusterRole", "reader"),
            res(
                "apiextensions.k8s.io/v1",
                "CustomResourceDefinition",
                "foos.example.com",
            ),
            res(
                "apiregistration.k8s.io/v1",
                "APIService",
                "v1.metrics.k8s.io",
            ),
            res("v1", "Namespace", "shop"),
            res("example.com/v1", "APIService", "custom"),
        ];
        apply_name_prefix_suffix(&mut rs, "prod-", "-v2");
        let names: Vec<&str> = rs.iter().map(Resource::name).collect();
        assert_eq!(
            names,
            [
                "prod-app-v2",
                "prod-reader-v2",
                "foos.example.com",
                "v1.metrics.k8s.io",
                "shop",
                "prod-custom-v2"
            ]
        );
        assert_eq!(
            rs[0].meta.previous_names,
            vec![(None, "app".to_string()), (None, "prod-app".to_string())]
        );
        assert_eq!(rs[0].meta.name_prefixes, ["prod-"]);
        assert_eq!(rs[0].meta.name_suffixes, ["-v2"]);
        assert!(rs[2].meta.previous_names.is_empty());
    }

    #[test]
    fn empty_affixes_change_nothing() {
        let mut rs = vec![res("v1", "Service", "svc")];
        let before = rs[0].clone();
        apply_name_prefix_suffix(&mut rs, "", "");
        assert_eq!(rs[0], before);
        apply_name_suffix(&mut rs, "-x");
        assert_eq!(rs[0].name(), "svc-x");
        assert!(rs[0].meta.name_prefixes.is_empty());
    }

    /// k05: generate, merge, namespace, prefix, suffix, then the hash — the hash ignores the
    /// new name, so it is the same as without renames.
    #[test]
    fn k05_hash_after_prefix_suffix() {
        let mut cm = Resource::new(
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "app-settings", "namespace": "shop-prod"},
                "data": {"LOG_LEVEL": "warn", "FEATURE_X": "off"}}),
            None,
        );
        cm.meta.needs_hash_suffix = true;
        let mut rs = vec![cm];
        apply_name_prefix_suffix(&mut rs, "prod-", "-v2");
        apply_hash_suffixes(&mut rs).unwrap();
        assert_eq!(rs[0].name(), "prod-app-settings-v2-7mh5hth542");
        let prev: Vec<&str> = rs[0]
            .meta
            .previous_names
            .iter()
            .map(|(_, n)| n.as_str())
            .collect();
        assert_eq!(
            prev,
            ["app-settings", "prod-app-settings", "prod-app-settings-v2"]
        );
        assert_eq!(
            rs[0].value["metadata"]["namespace"],
            Value::String("shop-prod".into())
        );
    }
}
