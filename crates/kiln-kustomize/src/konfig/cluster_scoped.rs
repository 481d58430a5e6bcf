//! Which kinds are cluster-scoped: the three tables of the engine, side by side because they
//! deliberately differ.
//! - [`kustomize_cluster_scoped`]: kustomize v5.5's own (`kyaml/openapi`), by exact
//!   apiVersion, which decides where the `namespace:` transformer writes by default;
//! - [`is_cluster_scoped`]: kiln's, by group and kind, with newer kinds and well-known
//!   cluster-scoped custom resources (`--fixes cluster-scope`, and what `emit` checks);
//! - [`SELECTION_CLUSTER_SCOPED`]: the kinds whose objects compare as namespace-less when a
//!   patch target selects by namespace (kustomize's `resid` scope), read by
//!   [`effective_namespace`] (kustomize `kyaml/resid/resid.go` `EffectiveNamespace`).

use kiln_base::resource::Resource;

/// kustomize v5.5's scope table (`precomputedIsNamespaceScoped` in `kyaml/openapi/openapi.go`,
/// the entries marked not namespaced): kustomize's `IsCertainlyClusterScoped` finds a kind
/// only by its exact apiVersion, so `flowcontrol.apiserver.k8s.io/v1` FlowSchema is namespaced
/// for it (case n27).
const KUSTOMIZE_CLUSTER_SCOPED: &[(&str, &str)] = &[
    (
        "admissionregistration.k8s.io/v1",
        "MutatingWebhookConfiguration",
    ),
    (
        "admissionregistration.k8s.io/v1",
        "ValidatingWebhookConfiguration",
    ),
    (
        "admissionregistration.k8s.io/v1beta1",
        "MutatingWebhookConfiguration",
    ),
    (
        "admissionregistration.k8s.io/v1beta1",
        "ValidatingWebhookConfiguration",
    ),
    ("apiextensions.k8s.io/v1", "CustomResourceDefinition"),
    ("apiextensions.k8s.io/v1beta1", "CustomResourceDefinition"),
    ("apiregistration.k8s.io/v1", "APIService"),
    ("apiregistration.k8s.io/v1beta1", "APIService"),
    ("certificates.k8s.io/v1", "CertificateSigningRequest"),
    ("certificates.k8s.io/v1beta1", "CertificateSigningRequest"),
    ("flowcontrol.apiserver.k8s.io/v1beta1", "FlowSchema"),
    (
        "flowcontrol.apiserver.k8s.io/v1beta1",
        "PriorityLevelConfiguration",
    ),
    ("networking.k8s.io/v1", "IngressClass"),
    ("networking.k8s.io/v1beta1", "IngressClass"),
    ("node.k8s.io/v1", "RuntimeClass"),
    ("node.k8s.io/v1beta1", "RuntimeClass"),
    ("policy/v1beta1", "PodSecurityPolicy"),
    ("rbac.authorization.k8s.io/v1", "ClusterRole"),
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"),
    ("rbac.authorization.k8s.io/v1beta1", "ClusterRole"),
    ("rbac.authorization.k8s.io/v1beta1", "ClusterRoleBinding"),
    ("scheduling.k8s.io/v1", "PriorityClass"),
    ("scheduling.k8s.io/v1beta1", "PriorityClass"),
    ("storage.k8s.io/v1", "CSIDriver"),
    ("storage.k8s.io/v1", "CSINode"),
    ("storage.k8s.io/v1", "StorageClass"),
    ("storage.k8s.io/v1", "VolumeAttachment"),
    ("storage.k8s.io/v1beta1", "CSIDriver"),
    ("storage.k8s.io/v1beta1", "CSINode"),
    ("storage.k8s.io/v1beta1", "StorageClass"),
    ("storage.k8s.io/v1beta1", "VolumeAttachment"),
    ("v1", "ComponentStatus"),
    ("v1", "Namespace"),
    ("v1", "Node"),
    ("v1", "NodeProxyOptions"),
    ("v1", "PersistentVolume"),
];

/// Whether kustomize v5.5 takes objects of `api_version` and `kind` for cluster-scoped.
pub fn kustomize_cluster_scoped(api_version: &str, kind: &str) -> bool {
    KUSTOMIZE_CLUSTER_SCOPED
        .iter()
        .any(|(v, k)| *v == api_version && *k == kind)
}

/// Built-in cluster-scoped kinds, by API group and kind: those of kustomize's built-in
/// OpenAPI data (`kyaml/openapi` precomputed scope table), plus the review kinds and the
/// cluster-scoped kinds Kubernetes added after that data was generated.
const BUILTIN_CLUSTER_SCOPED: &[(&str, &str)] = &[
    ("", "ComponentStatus"),
    ("", "Namespace"),
    ("", "Node"),
    ("", "PersistentVolume"),
    (
        "admissionregistration.k8s.io",
        "MutatingWebhookConfiguration",
    ),
    (
        "admissionregistration.k8s.io",
        "ValidatingWebhookConfiguration",
    ),
    ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy"),
    (
        "admissionregistration.k8s.io",
        "ValidatingAdmissionPolicyBinding",
    ),
    ("admissionregistration.k8s.io", "MutatingAdmissionPolicy"),
    (
        "admissionregistration.k8s.io",
        "MutatingAdmissionPolicyBinding",
    ),
    ("apiextensions.k8s.io", "CustomResourceDefinition"),
    ("apiregistration.k8s.io", "APIService"),
    ("authentication.k8s.io", "TokenReview"),
    ("authentication.k8s.io", "SelfSubjectReview"),
    ("authorization.k8s.io", "SelfSubjectAccessReview"),
    ("authorization.k8s.io", "SelfSubjectRulesReview"),
    ("authorization.k8s.io", "SubjectAccessReview"),
    ("certificates.k8s.io", "CertificateSigningRequest"),
    ("certificates.k8s.io", "ClusterTrustBundle"),
    ("flowcontrol.apiserver.k8s.io", "FlowSchema"),
    ("flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration"),
    ("networking.k8s.io", "IngressClass"),
    ("networking.k8s.io", "IPAddress"),
    ("networking.k8s.io", "ServiceCIDR"),
    ("node.k8s.io", "RuntimeClass"),
    ("policy", "PodSecurityPolicy"),
    ("rbac.authorization.k8s.io", "ClusterRole"),
    ("rbac.authorization.k8s.io", "ClusterRoleBinding"),
    ("resource.k8s.io", "DeviceClass"),
    ("resource.k8s.io", "ResourceSlice"),
    ("scheduling.k8s.io", "PriorityClass"),
    ("storage.k8s.io", "CSIDriver"),
    ("storage.k8s.io", "CSINode"),
    ("storage.k8s.io", "StorageClass"),
    ("storage.k8s.io", "VolumeAttachment"),
    ("storage.k8s.io", "VolumeAttributesClass"),
];

/// Well-known cluster-scoped custom resources. kustomize does not know them (its scope table
/// is built-in Kubernetes only), so `kubectl kustomize` gives them a `metadata.namespace`
/// that the API server then rejects or ignores; kiln leaves them cluster-scoped. This is a
/// deliberate divergence (listed in `tests/kustomize/DIVERGENCES.md`). Keep it to CRDs that
/// are cluster-scoped in every released version.
pub const WELL_KNOWN_CLUSTER_SCOPED_CUSTOM: &[(&str, &str)] = &[
    // cert-manager, trust-manager
    ("cert-manager.io", "ClusterIssuer"),
    ("trust.cert-manager.io", "Bundle"),
    // Kyverno, policy reports
    ("kyverno.io", "ClusterPolicy"),
    ("kyverno.io", "ClusterCleanupPolicy"),
    ("wgpolicyk8s.io", "ClusterPolicyReport"),
    // External Secrets Operator
    ("external-secrets.io", "ClusterSecretStore"),
    ("external-secrets.io", "ClusterExternalSecret"),
    ("generators.external-secrets.io", "ClusterGenerator"),
    // Gatekeeper
    ("templates.gatekeeper.sh", "ConstraintTemplate"),
    ("config.gatekeeper.sh", "Config"),
    // Gateway API
    ("gateway.networking.k8s.io", "GatewayClass"),
    // Kargo (v1.11: Project, ClusterConfig, ClusterPromotionTask are cluster-scoped)
    ("kargo.akuity.io", "Project"),
    ("kargo.akuity.io", "ClusterConfig"),
    ("kargo.akuity.io", "ClusterPromotionTask"),
    // Argo Workflows
    ("argoproj.io", "ClusterWorkflowTemplate"),
    // Cluster API
    ("clusterctl.cluster.x-k8s.io", "Provider"),
    // Crossplane
    ("pkg.crossplane.io", "Provider"),
    ("pkg.crossplane.io", "Configuration"),
    ("pkg.crossplane.io", "Function"),
    ("apiextensions.crossplane.io", "CompositeResourceDefinition"),
    ("apiextensions.crossplane.io", "Composition"),
    // Karpenter
    ("karpenter.sh", "NodePool"),
    ("karpenter.k8s.aws", "EC2NodeClass"),
    // CNI policies
    ("cilium.io", "CiliumClusterwideNetworkPolicy"),
    ("crd.projectcalico.org", "GlobalNetworkPolicy"),
    ("projectcalico.org", "GlobalNetworkPolicy"),
    // Tekton, Velero-free, Knative
    ("tekton.dev", "ClusterTask"),
    ("networking.internal.knative.dev", "ClusterDomainClaim"),
    // Snapshots
    ("snapshot.storage.k8s.io", "VolumeSnapshotClass"),
    ("snapshot.storage.k8s.io", "VolumeSnapshotContent"),
];

/// Whether objects of `group` (`""` for core) and `kind` are cluster-scoped, as the API server
/// sees it: the built-in Kubernetes kinds, plus [`WELL_KNOWN_CLUSTER_SCOPED_CUSTOM`]. Unknown
/// kinds are namespaced.
///
/// kustomize looks scope up in its built-in OpenAPI data by exact apiVersion
/// ([`kustomize_cluster_scoped`]), so kinds newer than that data (ValidatingAdmissionPolicy,
/// FlowSchema `v1`, VolumeAttributesClass, …), unusual versions and cluster-scoped CRDs get a
/// namespace there (cases n25, n27); the API server ignores it. The `namespace:` transformer
/// follows kustomize unless `Scope::Kiln` is asked for.
pub fn is_cluster_scoped(group: &str, kind: &str) -> bool {
    BUILTIN_CLUSTER_SCOPED
        .iter()
        .chain(WELL_KNOWN_CLUSTER_SCOPED_CUSTOM)
        .any(|(g, k)| *g == group && *k == kind)
}

/// [`is_cluster_scoped`] for a resource.
pub fn resource_is_cluster_scoped(res: &Resource) -> bool {
    is_cluster_scoped(res.group(), res.kind())
}

/// Built-in cluster-scoped kinds (group, kind), from the Kubernetes API. Custom resources are
/// taken as namespaced, as kustomize does for kinds its OpenAPI data does not know.
///
/// Deliberately not `namespace::is_cluster_scoped`: that table adds well-known cluster-scoped
/// custom resources (a kiln divergence for *writing* namespaces), while target selection
/// mirrors kustomize, where such a CR without namespace compares as `default` (case p24).
/// The built-in kinds here are also a subset of `BUILTIN_CLUSTER_SCOPED`'s (no review kinds,
/// ClusterTrustBundle, IPAddress, ServiceCIDR, DeviceClass, ResourceSlice,
/// VolumeAttributesClass, Mutating admission policies); aligning them would change which
/// objects a `namespace:` target selects, so it needs its own differential case first.
pub const SELECTION_CLUSTER_SCOPED: &[(&str, &str)] = &[
    ("", "Namespace"),
    ("", "Node"),
    ("", "PersistentVolume"),
    ("", "ComponentStatus"),
    ("rbac.authorization.k8s.io", "ClusterRole"),
    ("rbac.authorization.k8s.io", "ClusterRoleBinding"),
    ("apiextensions.k8s.io", "CustomResourceDefinition"),
    ("apiregistration.k8s.io", "APIService"),
    (
        "admissionregistration.k8s.io",
        "MutatingWebhookConfiguration",
    ),
    (
        "admissionregistration.k8s.io",
        "ValidatingWebhookConfiguration",
    ),
    ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy"),
    (
        "admissionregistration.k8s.io",
        "ValidatingAdmissionPolicyBinding",
    ),
    ("storage.k8s.io", "StorageClass"),
    ("storage.k8s.io", "CSIDriver"),
    ("storage.k8s.io", "CSINode"),
    ("storage.k8s.io", "VolumeAttachment"),
    ("scheduling.k8s.io", "PriorityClass"),
    ("node.k8s.io", "RuntimeClass"),
    ("networking.k8s.io", "IngressClass"),
    ("policy", "PodSecurityPolicy"),
    ("certificates.k8s.io", "CertificateSigningRequest"),
    ("flowcontrol.apiserver.k8s.io", "FlowSchema"),
    ("flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration"),
];

/// kustomize's `resid.TotallyNotANamespace`: the namespace cluster-scoped objects compare as.
pub const NOT_A_NAMESPACE: &str = "_non_namespaceable_";

/// The namespace an object compares as (kustomize `ResId.EffectiveNamespace`):
/// [`NOT_A_NAMESPACE`] for built-in cluster-scoped kinds, `default` when absent or empty,
/// otherwise the namespace itself.
pub fn effective_namespace<'a>(group: &str, kind: &str, namespace: Option<&'a str>) -> &'a str {
    if SELECTION_CLUSTER_SCOPED.contains(&(group, kind)) {
        return NOT_A_NAMESPACE;
    }
    namespace.filter(|s| !s.is_empty()).unwrap_or("default")
}
