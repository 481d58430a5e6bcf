//! The strategic-merge patch metadata of built-in Kubernetes kinds: which lists merge (and by
//! which key) instead of being replaced.
//!
//! Sits under `filters::patch_strategic_merge`, which asks [`PatchSchema::for_kind`] once per patched
//! resource and then [`PatchSchema::lookup`] for every list it meets. The table is taken from
//! the Kubernetes API types' `patchStrategy`/`patchMergeKey` tags (the OpenAPI
//! `x-kubernetes-patch-strategy`/`x-kubernetes-patch-merge-key` extensions) for the kinds
//! kustomize users patch: workloads (Pod spec in Pod, PodTemplate, ReplicationController,
//! Deployment, StatefulSet, DaemonSet, ReplicaSet, Job, CronJob), Service, ServiceAccount,
//! admission webhooks, and `ObjectMeta` of every built-in kind. Lists that carry no tag there
//! (tolerations, args, RBAC rules, Ingress rules, volumeClaimTemplates…) are replaced.
//!
//! Invariant: unknown kinds (custom resources) have no schema at all, so every list in them is
//! replaced, and that includes `metadata.finalizers` — this is what kustomize (kyaml, which has
//! no schema for CRDs) does; checked with `kubectl kustomize` v5.5.0.

#![warn(missing_docs)]
use super::openapi::CustomSchema;
use std::collections::BTreeMap;

/// How a list field merges.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ListMeta {
    /// `Some(key)`: a list of maps merged by `key`. `None` with `merge`: a list of scalars
    /// merged as a set (e.g. `metadata.finalizers`).
    pub merge_key: Option<&'static str>,
    /// The second of the list's `x-kubernetes-list-map-keys` (`protocol` of ports,
    /// `whenUnsatisfiable` of topology spread constraints), which kyaml merges by too. kyaml's
    /// builtin schema (kyaml v0.18.1 `openapi/kubernetesapi/v1_21_2/swagger.pb`) has exactly
    /// three merged lists with two keys: `ContainerPort` `[containerPort, protocol]`,
    /// `ServicePort` `[port, protocol]`, `TopologySpreadConstraint`
    /// `[topologyKey, whenUnsatisfiable]`; `volumeMounts`, `env`, … have one.
    pub second_key: Option<&'static str>,
}

/// Patch metadata for one kind: list paths (field names from the object root, list items
/// transparent, joined with `/`) that merge rather than replace.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PatchSchema {
    lists: BTreeMap<String, ListMeta>,
    /// A kind described by the build's `openapi:` schema: its definition there, which
    /// answers instead of `lists`.
    custom: Option<(std::rc::Rc<CustomSchema>, String)>,
}

/// API groups whose kinds kiln knows; a kind from another group is a custom resource.
const BUILTIN_GROUPS: &[&str] = &[
    "",
    "apps",
    "extensions",
    "batch",
    "policy",
    "autoscaling",
    "networking.k8s.io",
    "rbac.authorization.k8s.io",
    "admissionregistration.k8s.io",
    "apiextensions.k8s.io",
    "apiregistration.k8s.io",
    "scheduling.k8s.io",
    "storage.k8s.io",
    "coordination.k8s.io",
    "discovery.k8s.io",
    "certificates.k8s.io",
    "node.k8s.io",
];

/// Built-in kinds (any of the groups above) and where their pod spec sits, if they have one.
const KINDS: &[(&str, Option<&str>)] = &[
    ("Pod", Some("spec")),
    ("PodTemplate", Some("template/spec")),
    ("ReplicationController", Some("spec/template/spec")),
    ("Deployment", Some("spec/template/spec")),
    ("StatefulSet", Some("spec/template/spec")),
    ("DaemonSet", Some("spec/template/spec")),
    ("ReplicaSet", Some("spec/template/spec")),
    ("Job", Some("spec/template/spec")),
    ("CronJob", Some("spec/jobTemplate/spec/template/spec")),
    ("Service", None),
    ("ServiceAccount", None),
    ("ConfigMap", None),
    ("Secret", None),
    ("Namespace", None),
    ("PersistentVolume", None),
    ("PersistentVolumeClaim", None),
    ("Endpoints", None),
    ("LimitRange", None),
    ("ResourceQuota", None),
    ("Node", None),
    ("Ingress", None),
    ("IngressClass", None),
    ("NetworkPolicy", None),
    ("Role", None),
    ("ClusterRole", None),
    ("RoleBinding", None),
    ("ClusterRoleBinding", None),
    ("PodDisruptionBudget", None),
    ("HorizontalPodAutoscaler", None),
    ("MutatingWebhookConfiguration", None),
    ("ValidatingWebhookConfiguration", None),
    ("CustomResourceDefinition", None),
    ("APIService", None),
    ("PriorityClass", None),
    ("StorageClass", None),
    ("Lease", None),
    ("EndpointSlice", None),
    ("ControllerRevision", None),
    ("CertificateSigningRequest", None),
    ("RuntimeClass", None),
];

/// `ObjectMeta` lists (`metadata.finalizers` is `patchStrategy=merge` on scalars).
const OBJECT_META: &[(&str, Option<&str>)] =
    &[("finalizers", None), ("ownerReferences", Some("uid"))];

/// `PodSpec` lists, relative to the pod spec.
const POD_SPEC: &[(&str, Option<&str>)] = &[
    ("volumes", Some("name")),
    ("imagePullSecrets", Some("name")),
    ("hostAliases", Some("ip")),
    ("topologySpreadConstraints", Some("topologyKey")),
    ("schedulingGates", Some("name")),
    ("resourceClaims", Some("name")),
];

/// Container lists (`containers`, `initContainers`, `ephemeralContainers`, merged by `name`)
/// and, inside each container, these lists.
const CONTAINER_LISTS: &[&str] = &["containers", "initContainers", "ephemeralContainers"];
const CONTAINER: &[(&str, Option<&str>)] = &[
    ("env", Some("name")),
    ("ports", Some("containerPort")),
    ("volumeMounts", Some("mountPath")),
    ("volumeDevices", Some("devicePath")),
];

/// Whether `group` is one of the API groups of builtin Kubernetes kinds.
pub fn is_builtin_group(group: &str) -> bool {
    BUILTIN_GROUPS.contains(&group)
}

impl PatchSchema {
    /// The schema for a built-in kind, or `None` for a custom resource (every list replaced).
    pub fn for_kind(group: &str, kind: &str) -> Option<PatchSchema> {
        if !BUILTIN_GROUPS.contains(&group) {
            return None;
        }
        let (_, pod_spec) = KINDS.iter().find(|(k, _)| *k == kind)?;
        let mut s = PatchSchema::default();
        s.add_all("metadata", OBJECT_META);
        if let Some(pod) = pod_spec {
            // The pod template's own metadata sits beside its spec.
            if let Some(template) = pod.strip_suffix("/spec") {
                s.add_all(&format!("{template}/metadata"), OBJECT_META);
            }
            s.add_all(pod, POD_SPEC);
            for list in CONTAINER_LISTS {
                let path = format!("{pod}/{list}");
                s.add(&path, Some("name"));
                s.add_all(&path, CONTAINER);
                if *list == "ephemeralContainers" {
                    // `EphemeralContainer.ports` carries no patch strategy in kyaml's schema
                    // (an ephemeral container may have no ports), so a patch replaces it.
                    s.lists.remove(&format!("{path}/ports"));
                }
            }
        }
        match (group, kind) {
            ("", "Service") => s.add("spec/ports", Some("port")),
            // `imagePullSecrets` of a ServiceAccount is atomic (unlike the pod spec's), checked
            // with kubectl kustomize v5.5.0.
            ("", "ServiceAccount") => s.add("secrets", Some("name")),
            (
                "admissionregistration.k8s.io",
                "MutatingWebhookConfiguration" | "ValidatingWebhookConfiguration",
            ) => s.add("webhooks", Some("name")),
            _ => {}
        }
        Some(s)
    }

    fn add(&mut self, path: &str, merge_key: Option<&'static str>) {
        let second_key = match merge_key {
            Some("containerPort" | "port") => Some("protocol"),
            Some("topologyKey") => Some("whenUnsatisfiable"),
            _ => None,
        };
        self.lists.insert(
            path.to_string(),
            ListMeta {
                merge_key,
                second_key,
            },
        );
    }

    fn add_all(&mut self, prefix: &str, entries: &[(&str, Option<&'static str>)]) {
        for (field, key) in entries {
            self.add(&format!("{prefix}/{field}"), *key);
        }
    }

    /// The schema of `kind` under the build's `openapi:` schema, which replaces the builtin
    /// one (kyaml parses only the custom schema then): `None` for kinds it does not define.
    pub fn for_custom(
        schema: &std::rc::Rc<CustomSchema>,
        api_version: &str,
        kind: &str,
    ) -> Option<PatchSchema> {
        let definition = schema.definition_for(api_version, kind)?;
        Some(PatchSchema {
            custom: Some((schema.clone(), definition.to_string())),
            ..Default::default()
        })
    }

    /// The merge metadata of the list at `path` (field names from the root; list items do not
    /// add a segment), or `None` when the list is replaced.
    pub fn lookup(&self, path: &[String]) -> Option<ListMeta> {
        if let Some((schema, definition)) = &self.custom {
            return schema.list_meta(definition, path);
        }
        self.lists.get(&path.join("/")).copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Vec<String> {
        s.split('/').map(str::to_string).collect()
    }

    #[test]
    fn deployment_containers_env_ports_mounts() {
        let s = PatchSchema::for_kind("apps", "Deployment").unwrap();
        assert_eq!(
            s.lookup(&p("spec/template/spec/containers"))
                .unwrap()
                .merge_key,
            Some("name")
        );
        assert_eq!(
            s.lookup(&p("spec/template/spec/initContainers/env"))
                .unwrap()
                .merge_key,
            Some("name")
        );
        assert_eq!(
            s.lookup(&p("spec/template/spec/containers/ports"))
                .unwrap()
                .merge_key,
            Some("containerPort")
        );
        assert_eq!(
            s.lookup(&p("spec/template/spec/containers/volumeMounts"))
                .unwrap()
                .merge_key,
            Some("mountPath")
        );
        assert_eq!(
            s.lookup(&p("spec/template/spec/volumes"))
                .unwrap()
                .merge_key,
            Some("name")
        );
        assert_eq!(
            s.lookup(&p("spec/template/metadata/finalizers"))
                .unwrap()
                .merge_key,
            None
        );
        assert!(s.lookup(&p("spec/template/spec/tolerations")).is_none());
        assert!(s.lookup(&p("spec/template/spec/containers/args")).is_none());
    }

    #[test]
    fn cronjob_and_pod_prefixes() {
        let c = PatchSchema::for_kind("batch", "CronJob").unwrap();
        assert!(
            c.lookup(&p("spec/jobTemplate/spec/template/spec/containers"))
                .is_some()
        );
        assert!(c.lookup(&p("spec/template/spec/containers")).is_none());
        let pod = PatchSchema::for_kind("", "Pod").unwrap();
        assert!(pod.lookup(&p("spec/containers/env")).is_some());
        assert!(pod.lookup(&p("metadata/finalizers")).is_some());
    }

    #[test]
    fn service_ports_merge_by_port() {
        let s = PatchSchema::for_kind("", "Service").unwrap();
        assert_eq!(s.lookup(&p("spec/ports")).unwrap().merge_key, Some("port"));
    }

    #[test]
    fn service_account_secrets_merge_but_pull_secrets_do_not() {
        let s = PatchSchema::for_kind("", "ServiceAccount").unwrap();
        assert_eq!(s.lookup(&p("secrets")).unwrap().merge_key, Some("name"));
        assert!(s.lookup(&p("imagePullSecrets")).is_none());
        assert_eq!(
            s.lookup(&p("metadata/ownerReferences")).unwrap().merge_key,
            Some("uid")
        );
    }

    #[test]
    fn custom_resources_have_no_schema() {
        assert!(PatchSchema::for_kind("example.com", "Deployment").is_none());
        assert!(PatchSchema::for_kind("example.com", "Widget").is_none());
        let role = PatchSchema::for_kind("rbac.authorization.k8s.io", "Role").unwrap();
        assert!(role.lookup(&p("rules")).is_none());
    }
}
