//! The `namespace:` transformer: moves every namespaced object into one namespace, and
//! [`is_cluster_scoped`], the scope table every transformer shares.
//!
//! Where it sits: first of the name-changing transformers of a kustomization (kustomize runs
//! patches, then namespace, then prefix, then suffix); the name-reference transformer later
//! makes references follow the moved objects (that is how a webhook's
//! `clientConfig.service.namespace` and an RBAC subject naming an in-build ServiceAccount get
//! the new namespace — kustomize does it there too, see `filters::nameref`).
//!
//! What it writes (kustomize v5.5 `api/filters/namespace` with the default field specs of
//! `api/internal/konfig/builtinpluginconsts/namespace.go`):
//! - `metadata.namespace` of every object that is not cluster-scoped (created when absent);
//!   cluster-scoped objects keep whatever they have, even a bogus namespace;
//! - `metadata.name` of a `v1` Namespace object becomes the namespace (kustomize quirk: the
//!   `metadata/name` field spec for `kind: Namespace`);
//! - RoleBinding/ClusterRoleBinding subjects, per [`RoleBindingSubjects`] (default: only the
//!   subjects *named* `default` get the namespace, whatever their kind or namespace —
//!   kustomize#4301);
//! - APIService `spec.service.namespace`, created even when the APIService has no service
//!   (kustomize quirk: the field spec has `create: true`);
//! - CustomResourceDefinition `spec.conversion.webhook.clientConfig.service.namespace`, only
//!   when present.
//!
//! Every object also gets its pre-transform `(namespace, name)` appended to
//! `meta.previous_names` (kustomize's `StorePreviousId`, done unconditionally), which the
//! name-reference transformer uses to match references by original namespace.
//!
//! Invariant: no two objects end with the same id ([`NamespaceError::IdConflict`]).

pub use crate::konfig::cluster_scoped::{
    WELL_KNOWN_CLUSTER_SCOPED_CUSTOM, is_cluster_scoped, kustomize_cluster_scoped,
    resource_is_cluster_scoped,
};
use crate::types::fieldspec::FieldSpec;
use kiln_base::resource::Resource;
use serde_json::{Map, Value};

/// Errors of the namespace transformer.
#[derive(Debug, thiserror::Error, miette::Diagnostic, PartialEq, Eq)]
pub enum NamespaceError {
    /// Two objects have the same kind, name and namespace after the transformer ran.
    #[error("setting namespace `{namespace}` makes two objects `{id}` identical")]
    #[diagnostic(
        code(kiln::kustomize::namespace_id_conflict),
        help(
            "the objects differed only by namespace, or are Namespace objects (each is renamed to the target); remove or rename one"
        )
    )]
    IdConflict { namespace: String, id: String },
    /// A subject of a (Cluster)RoleBinding or a namespace field is not of the expected shape.
    #[error("`{field}` of {kind} `{name}` must be {expected}")]
    #[diagnostic(
        code(kiln::kustomize::namespace_field_invalid),
        help("fix the object; kustomize rejects it as well")
    )]
    FieldInvalid {
        kind: String,
        name: String,
        field: String,
        expected: String,
    },
}

/// kustomize's `setRoleBindingSubjects` option of the NamespaceTransformer.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum RoleBindingSubjects {
    /// Only subjects named `default` (the default mode, `defaultOnly`).
    #[default]
    DefaultOnly,
    /// Every subject of `kind: ServiceAccount` (`allServiceAccounts`).
    AllServiceAccounts,
    /// No subject (`none`).
    None,
}

/// Options of the namespace transformer (the `namespace:` field uses the defaults; the
/// `NamespaceTransformer` plugin form can set the others).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NamespaceOptions {
    /// The target namespace; empty means "do nothing".
    pub namespace: String,
    /// Only fill namespaces that are absent or empty (`unsetOnly`).
    pub unset_only: bool,
    pub role_binding_subjects: RoleBindingSubjects,
    /// Which objects count as cluster-scoped (and so keep their namespace as it is).
    pub scope: Scope,
    /// More fields that get the namespace: `namespace:` field specs of `configurations:`
    /// files, or a `NamespaceTransformer`'s `fieldSpecs` (kustomize's `fsslice` step of the
    /// namespace filter). They apply to cluster-scoped objects too, as in kustomize, where a
    /// webhook configuration's `clientConfig.service.namespace` is the common case.
    pub field_specs: Vec<FieldSpec>,
}

/// Which table decides that an object is cluster-scoped.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Scope {
    /// kustomize's: the exact (apiVersion, kind) pairs of its built-in OpenAPI data
    /// ([`kustomize_cluster_scoped`]); everything else gets the namespace, as kubectl does.
    #[default]
    Kustomize,
    /// kiln's ([`is_cluster_scoped`]): by group and kind, with newer built-in kinds and
    /// well-known cluster-scoped custom resources (the opt-in `--fixes cluster-scope`).
    Kiln,
}

impl Scope {
    /// Whether `res` is cluster-scoped under this table.
    pub fn cluster_scoped(self, res: &Resource) -> bool {
        match self {
            Scope::Kustomize => kustomize_cluster_scoped(res.api_version(), res.kind()),
            Scope::Kiln => resource_is_cluster_scoped(res),
        }
    }
}

/// Applies `namespace: <ns>` with default options. A no-op for an empty namespace.
pub fn apply_namespace(resources: &mut [Resource], namespace: &str) -> Result<(), NamespaceError> {
    apply_namespace_with(
        resources,
        &NamespaceOptions {
            namespace: namespace.to_string(),
            ..Default::default()
        },
    )
}

/// Applies the namespace transformer with explicit options (see the module docs for the
/// fields written). A no-op for an empty namespace, like kustomize.
///
/// Errors: [`NamespaceError::IdConflict`] when two objects collide afterwards;
/// [`NamespaceError::FieldInvalid`] for a subject list that is not a list of maps.
pub fn apply_namespace_with(
    resources: &mut [Resource],
    opts: &NamespaceOptions,
) -> Result<(), NamespaceError> {
    let ns = opts.namespace.as_str();
    if ns.is_empty() {
        return Ok(());
    }
    for res in resources.iter_mut() {
        res.meta
            .previous_names
            .push((res.namespace().map(str::to_string), res.name().to_string()));
        let cluster = opts.scope.cluster_scoped(res);
        let (kind, group, api_version) = (
            res.kind().to_string(),
            res.group().to_string(),
            res.api_version().to_string(),
        );
        let name = res.name().to_string();
        if !cluster {
            set_entry(res.metadata_mut(), "namespace", ns, opts.unset_only);
        }
        if kind == "Namespace" && api_version == "v1" {
            set_entry(res.metadata_mut(), "name", ns, opts.unset_only);
        }
        let Some(obj) = res.value.as_object_mut() else {
            continue;
        };
        match (group.as_str(), kind.as_str()) {
            ("rbac.authorization.k8s.io", "RoleBinding" | "ClusterRoleBinding") => {
                set_subject_namespaces(obj, opts, &kind, &name)?;
            }
            ("apiregistration.k8s.io", "APIService") => {
                // `create: true` in kustomize's field spec: made even without a service.
                if let Some(service) = map_path(obj, &["spec", "service"], true) {
                    set_entry(service, "namespace", ns, opts.unset_only);
                }
            }
            ("apiextensions.k8s.io", "CustomResourceDefinition") => {
                let path = ["spec", "conversion", "webhook", "clientConfig", "service"];
                if let Some(service) = map_path(obj, &path, false)
                    && service.contains_key("namespace")
                {
                    set_entry(service, "namespace", ns, opts.unset_only);
                }
            }
            _ => {}
        }
        set_field_specs(res, opts);
    }
    let mut ids: Vec<String> = resources
        .iter()
        .map(|r| {
            let id = r.id();
            format!("{}|{}", id.api_version(), id)
        })
        .collect();
    ids.sort();
    if let Some(w) = ids.windows(2).find(|w| w[0] == w[1]) {
        let id = w[0].split_once('|').map_or(w[0].as_str(), |(_, id)| id);
        return Err(NamespaceError::IdConflict {
            namespace: ns.to_string(),
            id: id.to_string(),
        });
    }
    Ok(())
}

/// kustomize's `SetEntry` / `SetEntryIfEmpty` on a scalar field.
/// The custom field specs of [`NamespaceOptions::field_specs`]. As kustomize's namespace filter,
/// `metadata/namespace` and role-binding `subjects` are left to the dedicated handling above;
/// every other reached scalar (or created field) becomes the namespace, or with `unsetOnly`
/// only an absent or empty one.
fn set_field_specs(res: &mut Resource, opts: &NamespaceOptions) {
    let is_binding = res.group() == "rbac.authorization.k8s.io"
        && matches!(res.kind(), "RoleBinding" | "ClusterRoleBinding");
    let specs: Vec<&FieldSpec> = opts
        .field_specs
        .iter()
        .filter(|fs| fs.applies_to(res))
        .filter(|fs| fs.path.trim_matches('/') != "metadata/namespace")
        .filter(|fs| !(is_binding && fs.path.trim_matches('/') == "subjects"))
        .collect();
    for fs in specs {
        crate::filters::fieldspec::visit_path_mut(&mut res.value, &fs.path, fs.create, &mut |v| {
            let unset = match v {
                Value::Null => true,
                Value::String(s) => s.is_empty(),
                Value::Bool(_) | Value::Number(_) => false,
                Value::Array(_) | Value::Object(_) => return,
            };
            if unset || !opts.unset_only {
                *v = Value::String(opts.namespace.clone());
            }
        });
    }
}

fn set_entry(map: &mut Map<String, Value>, key: &str, value: &str, unset_only: bool) {
    if unset_only {
        match map.get(key) {
            Some(Value::String(s)) if !s.is_empty() => return,
            Some(v) if !v.is_null() && !v.is_string() => return,
            _ => {}
        }
    }
    map.insert(key.to_string(), Value::String(value.to_string()));
}

/// The map at `path` under `obj`; with `create`, missing (or null) maps are made.
fn map_path<'a>(
    obj: &'a mut Map<String, Value>,
    path: &[&str],
    create: bool,
) -> Option<&'a mut Map<String, Value>> {
    let mut cur = obj;
    for seg in path {
        let present = matches!(cur.get(*seg), Some(Value::Object(_)));
        if !present {
            if !create || cur.get(*seg).is_some_and(|v| !v.is_null()) {
                return None;
            }
            cur.insert(seg.to_string(), Value::Object(Map::new()));
        }
        cur = cur.get_mut(*seg)?.as_object_mut()?;
    }
    Some(cur)
}

fn set_subject_namespaces(
    obj: &mut Map<String, Value>,
    opts: &NamespaceOptions,
    kind: &str,
    name: &str,
) -> Result<(), NamespaceError> {
    if opts.role_binding_subjects == RoleBindingSubjects::None {
        return Ok(());
    }
    let subjects = match obj.get_mut("subjects") {
        None | Some(Value::Null) => return Ok(()),
        Some(Value::Array(items)) => items,
        Some(_) => {
            return Err(NamespaceError::FieldInvalid {
                kind: kind.into(),
                name: name.into(),
                field: "subjects".into(),
                expected: "a list of subjects".into(),
            });
        }
    };
    for subject in subjects {
        let Some(s) = subject.as_object_mut() else {
            return Err(NamespaceError::FieldInvalid {
                kind: kind.into(),
                name: name.into(),
                field: "subjects[]".into(),
                expected: "a map with `kind` and `name`".into(),
            });
        };
        let selected = match opts.role_binding_subjects {
            // kustomize#4301: the *name* decides, not the kind or current namespace.
            RoleBindingSubjects::DefaultOnly => {
                s.get("name").and_then(Value::as_str) == Some("default")
            }
            RoleBindingSubjects::AllServiceAccounts => {
                s.get("kind").and_then(Value::as_str) == Some("ServiceAccount")
            }
            RoleBindingSubjects::None => false,
        };
        if selected {
            set_entry(s, "namespace", &opts.namespace, opts.unset_only);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn res(v: Value) -> Resource {
        Resource::new(v, None)
    }

    #[test]
    fn scope_table() {
        assert!(is_cluster_scoped("", "Namespace"));
        assert!(is_cluster_scoped(
            "rbac.authorization.k8s.io",
            "ClusterRole"
        ));
        assert!(is_cluster_scoped("storage.k8s.io", "StorageClass"));
        assert!(is_cluster_scoped("cert-manager.io", "ClusterIssuer"));
        assert!(!is_cluster_scoped("cert-manager.io", "Issuer"));
        assert!(!is_cluster_scoped("", "ConfigMap"));
        assert!(!is_cluster_scoped("example.com", "ClusterRole"));
    }

    /// k01-rbac-subject-namespace: the namespace transformer's part (subjects named
    /// `default`); the subjects naming the in-build SA `worker` are the name-reference
    /// transformer's job and stay untouched here.
    #[test]
    fn k01_subjects_named_default_only() {
        let mut rs = vec![
            res(
                json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "worker"}}),
            ),
            res(
                json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": "probe"},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "reader"},
                "subjects": [
                    {"kind": "ServiceAccount", "name": "default", "namespace": "somewhere"},
                    {"kind": "ServiceAccount", "name": "default"},
                    {"kind": "ServiceAccount", "name": "unknown-sa2", "namespace": "default"},
                    {"kind": "ServiceAccount", "name": "worker"}]}),
            ),
            res(
                json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "worker-edit"},
                "subjects": [{"kind": "User", "name": "alice", "apiGroup": "rbac.authorization.k8s.io"}]}),
            ),
        ];
        apply_namespace(&mut rs, "team-blue").unwrap();
        assert_eq!(rs[0].namespace(), Some("team-blue"));
        assert_eq!(
            rs[0].meta.previous_names,
            vec![(None, "worker".to_string())]
        );
        assert_eq!(rs[1].namespace(), None);
        assert_eq!(
            rs[1].value["subjects"],
            json!([
                {"kind": "ServiceAccount", "name": "default", "namespace": "team-blue"},
                {"kind": "ServiceAccount", "name": "default", "namespace": "team-blue"},
                {"kind": "ServiceAccount", "name": "unknown-sa2", "namespace": "default"},
                {"kind": "ServiceAccount", "name": "worker"}])
        );
        assert_eq!(rs[2].namespace(), Some("team-blue"));
        assert_eq!(rs[2].value["subjects"][0].get("namespace"), None);
    }

    #[test]
    fn subject_modes() {
        let rb = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "rb"},
            "subjects": [{"kind": "ServiceAccount", "name": "a", "namespace": "x"}, {"kind": "User", "name": "default"}]});
        let run = |mode| {
            let mut rs = vec![res(rb.clone())];
            let opts = NamespaceOptions {
                namespace: "n".into(),
                unset_only: false,
                role_binding_subjects: mode,
                ..Default::default()
            };
            apply_namespace_with(&mut rs, &opts).unwrap();
            rs[0].value["subjects"].clone()
        };
        assert_eq!(
            run(RoleBindingSubjects::AllServiceAccounts)[0]["namespace"],
            "n"
        );
        assert!(
            run(RoleBindingSubjects::AllServiceAccounts)[1]
                .get("namespace")
                .is_none()
        );
        assert_eq!(run(RoleBindingSubjects::DefaultOnly)[1]["namespace"], "n");
        assert_eq!(run(RoleBindingSubjects::DefaultOnly)[0]["namespace"], "x");
        assert_eq!(run(RoleBindingSubjects::None), rb["subjects"]);
    }

    #[test]
    fn cluster_scoped_and_special_fields() {
        let mut rs = vec![
            res(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "old"}})),
            res(
                json!({"apiVersion": "v1beta9", "kind": "Namespace", "metadata": {"name": "weird"}}),
            ),
            res(
                json!({"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService", "metadata": {"name": "v1.local"}, "spec": {"group": "local"}}),
            ),
            res(
                json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": {"name": "foos.example.com"},
                "spec": {"conversion": {"webhook": {"clientConfig": {"service": {"name": "conv", "namespace": "system"}}}}}}),
            ),
            res(
                json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": {"name": "bars.example.com"},
                "spec": {"conversion": {"webhook": {"clientConfig": {"service": {"name": "conv"}}}}}}),
            ),
            res(
                json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "cr", "namespace": "bogus"}}),
            ),
            res(
                json!({"apiVersion": "cert-manager.io/v1", "kind": "ClusterIssuer", "metadata": {"name": "ci"}}),
            ),
            res(
                json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration", "metadata": {"name": "m"},
                "webhooks": [{"name": "a", "clientConfig": {"service": {"name": "svc", "namespace": "somewhere"}}}]}),
            ),
        ];
        let before_webhook = rs[7].value.clone();
        let mut kiln_scope = rs.clone();
        apply_namespace(&mut rs, "team").unwrap();
        // Checked against kubectl kustomize v5.5.0.
        assert_eq!(rs[0].name(), "team");
        assert_eq!(rs[0].namespace(), None);
        // kustomize keys scope by exact apiVersion and namespaces `v1beta9 Namespace`.
        assert_eq!(rs[1].namespace(), Some("team"));
        assert_eq!(rs[1].name(), "weird");
        assert_eq!(rs[2].value["spec"]["service"], json!({"namespace": "team"}));
        assert_eq!(
            rs[3].value["spec"]["conversion"]["webhook"]["clientConfig"]["service"]["namespace"],
            "team"
        );
        assert!(
            rs[4].value["spec"]["conversion"]["webhook"]["clientConfig"]["service"]
                .get("namespace")
                .is_none()
        );
        assert_eq!(rs[5].namespace(), Some("bogus"));
        assert_eq!(
            rs[6].namespace(),
            Some("team"),
            "kustomize does not know it"
        );
        assert_eq!(
            rs[7].value, before_webhook,
            "webhook services move only through name references"
        );
        // `--fixes cluster-scope`: kiln's table, by group and kind, with well-known CRs.
        let opts = NamespaceOptions {
            namespace: "team".into(),
            scope: Scope::Kiln,
            ..Default::default()
        };
        apply_namespace_with(&mut kiln_scope, &opts).unwrap();
        assert_eq!(kiln_scope[1].namespace(), None);
        assert_eq!(kiln_scope[6].namespace(), None);
    }

    #[test]
    fn unset_only_and_empty_namespace() {
        let mut rs = vec![
            res(
                json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "a", "namespace": "keep"}}),
            ),
            res(json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "b"}})),
        ];
        apply_namespace(&mut rs, "").unwrap();
        assert_eq!(rs[1].namespace(), None);
        assert!(rs[1].meta.previous_names.is_empty());
        let opts = NamespaceOptions {
            namespace: "n".into(),
            unset_only: true,
            ..Default::default()
        };
        apply_namespace_with(&mut rs, &opts).unwrap();
        assert_eq!(rs[0].namespace(), Some("keep"));
        assert_eq!(rs[1].namespace(), Some("n"));
    }

    #[test]
    fn two_namespace_objects_collide() {
        // kubectl kustomize: "namespace transformation produces ID conflict".
        let mut rs = vec![
            res(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "a"}})),
            res(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "b"}})),
        ];
        let e = apply_namespace(&mut rs, "x").unwrap_err();
        assert_eq!(
            e,
            NamespaceError::IdConflict {
                namespace: "x".into(),
                id: "Namespace/x".into()
            }
        );
    }

    #[test]
    fn id_conflict_is_an_error() {
        let mut rs = vec![
            res(
                json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "a", "namespace": "x"}}),
            ),
            res(
                json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "a", "namespace": "y"}}),
            ),
        ];
        let e = apply_namespace(&mut rs, "n").unwrap_err();
        assert_eq!(
            e,
            NamespaceError::IdConflict {
                namespace: "n".into(),
                id: "Service/n/a".into()
            }
        );
    }
}
