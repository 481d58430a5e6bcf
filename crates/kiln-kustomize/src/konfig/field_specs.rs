//! kustomize v5.5's default field specs (kustomize `api/internal/konfig/builtinpluginconsts`:
//! `commonlabels.go`, `templatelabels.go`, `commonannotations.go`, `images.go`,
//! `replicas.go`): where each builtin transformer writes unless `configurations:` add more.
//! Checked field by field against `kubectl kustomize`.

use crate::types::fieldspec::FieldSpec;

const fn fs(
    group: &'static str,
    version: &'static str,
    kind: &'static str,
    path: &'static str,
    create: bool,
) -> FieldSpec {
    FieldSpec::new(group, version, kind, path, create)
}

/// Pod (anti-)affinity and topology-spread label selectors; kustomize lists them for `apps`
/// Deployments and StatefulSets, never creating them.
macro_rules! affinity_specs {
    ($kind:literal) => {
        [
            fs("apps", "", $kind, "spec/template/spec/affinity/podAffinity/preferredDuringSchedulingIgnoredDuringExecution/podAffinityTerm/labelSelector/matchLabels", false),
            fs("apps", "", $kind, "spec/template/spec/affinity/podAffinity/requiredDuringSchedulingIgnoredDuringExecution/labelSelector/matchLabels", false),
            fs("apps", "", $kind, "spec/template/spec/affinity/podAntiAffinity/preferredDuringSchedulingIgnoredDuringExecution/podAffinityTerm/labelSelector/matchLabels", false),
            fs("apps", "", $kind, "spec/template/spec/affinity/podAntiAffinity/requiredDuringSchedulingIgnoredDuringExecution/labelSelector/matchLabels", false),
            fs("apps", "", $kind, "spec/template/spec/topologySpreadConstraints/labelSelector/matchLabels", false),
        ]
    };
}

const DEPLOYMENT_AFFINITY: [FieldSpec; 5] = affinity_specs!("Deployment");
const STATEFULSET_AFFINITY: [FieldSpec; 5] = affinity_specs!("StatefulSet");

/// kustomize's `commonLabels` field specs (commonlabels.go), without the affinity entries
/// (see [`common_label_field_specs`]).
#[rustfmt::skip]
const COMMON_LABELS_BASE: &[FieldSpec] = &[
    fs("", "", "", "metadata/labels", true),
    fs("", "v1", "Service", "spec/selector", true),
    fs("", "v1", "ReplicationController", "spec/selector", true),
    fs("", "v1", "ReplicationController", "spec/template/metadata/labels", true),
    fs("", "", "Deployment", "spec/selector/matchLabels", true),
    fs("", "", "Deployment", "spec/template/metadata/labels", true),
    fs("", "", "ReplicaSet", "spec/selector/matchLabels", true),
    fs("", "", "ReplicaSet", "spec/template/metadata/labels", true),
    fs("", "", "DaemonSet", "spec/selector/matchLabels", true),
    fs("", "", "DaemonSet", "spec/template/metadata/labels", true),
    fs("apps", "", "StatefulSet", "spec/selector/matchLabels", true),
    fs("apps", "", "StatefulSet", "spec/template/metadata/labels", true),
    fs("apps", "", "StatefulSet", "spec/volumeClaimTemplates[]/metadata/labels", true),
    fs("batch", "", "Job", "spec/selector/matchLabels", false),
    fs("batch", "", "Job", "spec/template/metadata/labels", true),
    fs("batch", "", "CronJob", "spec/jobTemplate/spec/selector/matchLabels", false),
    fs("batch", "", "CronJob", "spec/jobTemplate/metadata/labels", true),
    fs("batch", "", "CronJob", "spec/jobTemplate/spec/template/metadata/labels", true),
    fs("policy", "", "PodDisruptionBudget", "spec/selector/matchLabels", false),
    fs("networking.k8s.io", "", "NetworkPolicy", "spec/podSelector/matchLabels", false),
    fs("networking.k8s.io", "", "NetworkPolicy", "spec/ingress/from/podSelector/matchLabels", false),
    fs("networking.k8s.io", "", "NetworkPolicy", "spec/egress/to/podSelector/matchLabels", false),
];

/// kustomize's `templateLabels` field specs (templatelabels.go): pod templates, the CronJob
/// job template and StatefulSet volume claim templates; never selectors.
#[rustfmt::skip]
pub const TEMPLATE_LABELS_FIELD_SPECS: &[FieldSpec] = &[
    fs("", "v1", "ReplicationController", "spec/template/metadata/labels", true),
    fs("", "", "Deployment", "spec/template/metadata/labels", true),
    fs("", "", "ReplicaSet", "spec/template/metadata/labels", true),
    fs("", "", "DaemonSet", "spec/template/metadata/labels", true),
    fs("apps", "", "StatefulSet", "spec/template/metadata/labels", true),
    fs("apps", "", "StatefulSet", "spec/volumeClaimTemplates[]/metadata/labels", true),
    fs("batch", "", "Job", "spec/template/metadata/labels", true),
    fs("batch", "", "CronJob", "spec/jobTemplate/metadata/labels", true),
    fs("batch", "", "CronJob", "spec/jobTemplate/spec/template/metadata/labels", true),
];

/// kustomize's `commonAnnotations` field specs (commonannotations.go).
#[rustfmt::skip]
pub const COMMON_ANNOTATIONS_FIELD_SPECS: &[FieldSpec] = &[
    fs("", "", "", "metadata/annotations", true),
    fs("", "v1", "ReplicationController", "spec/template/metadata/annotations", true),
    fs("", "", "Deployment", "spec/template/metadata/annotations", true),
    fs("", "", "ReplicaSet", "spec/template/metadata/annotations", true),
    fs("", "", "DaemonSet", "spec/template/metadata/annotations", true),
    // Unlike the label tables, kustomize lists StatefulSet here without a group.
    fs("", "", "StatefulSet", "spec/template/metadata/annotations", true),
    fs("batch", "", "Job", "spec/template/metadata/annotations", true),
    fs("batch", "", "CronJob", "spec/jobTemplate/metadata/annotations", true),
    fs("batch", "", "CronJob", "spec/jobTemplate/spec/template/metadata/annotations", true),
];

/// The full `commonLabels` table: metadata, selectors, templates and affinity selectors.
pub fn common_label_field_specs() -> Vec<FieldSpec> {
    COMMON_LABELS_BASE
        .iter()
        .chain(DEPLOYMENT_AFFINITY.iter())
        .chain(STATEFULSET_AFFINITY.iter())
        .cloned()
        .collect()
}

/// kustomize's default `images` field specs (api/internal/konfig/builtinpluginconsts/images.go).
/// kustomize marks them `create: true`, but nothing is ever created through the `[]` lists
/// (verified against v5.5: a Pod without `initContainers` stays without), so they are
/// `create: false` here.
pub const IMAGES_FIELD_SPECS: &[FieldSpec] = &[
    FieldSpec::any("spec/containers[]/image", false),
    FieldSpec::any("spec/initContainers[]/image", false),
    FieldSpec::any("spec/template/spec/containers[]/image", false),
    FieldSpec::any("spec/template/spec/initContainers[]/image", false),
];

/// kustomize's `replicas` field specs, in kustomize's order.
pub const REPLICAS_FIELD_SPECS: &[FieldSpec] = &[
    FieldSpec::kind("Deployment", "spec/replicas", true),
    FieldSpec::kind("StatefulSet", "spec/replicas", true),
    FieldSpec::kind("ReplicaSet", "spec/replicas", true),
    FieldSpec::kind("ReplicationController", "spec/replicas", true),
];
