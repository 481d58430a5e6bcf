//! kustomize v5.5's built-in name-reference table (kustomize
//! `api/internal/konfig/builtinpluginconsts/namereference.go`): for each kind that can be referred to
//! by name, the fields of other kinds that hold such a name. `configurations:` files extend
//! it per build (owned entries, hence the `Cow`s); the filter is `filters::nameref`.

use std::borrow::Cow;

/// One referral target of the table: objects of this group/version/kind (empty = any) may be
/// referred to from the `referrers` fields.
#[derive(Debug, Clone)]
pub struct NameReference {
    /// API group of the referred-to objects (`""`: any, which includes the core group).
    pub group: Cow<'static, str>,
    /// API version (`""`: any).
    pub version: Cow<'static, str>,
    /// Kind of the referred-to objects.
    pub kind: Cow<'static, str>,
    /// The fields that may hold such an object's name.
    pub referrers: Cow<'static, [Referrer]>,
}

/// A field that holds a name: `path` (slash-separated, `\/` escapes a slash inside a key,
/// lists walked implicitly) in objects of `kind` (and `group`/`version` when non-empty).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Referrer {
    /// API group of the referring objects (`""`: any).
    pub group: Cow<'static, str>,
    /// API version of the referring objects (`""`: any).
    pub version: Cow<'static, str>,
    /// Kind of the referring objects.
    pub kind: Cow<'static, str>,
    /// Field path inside the referring object.
    pub path: Cow<'static, str>,
}

const fn r(kind: &'static str, path: &'static str) -> Referrer {
    Referrer {
        group: Cow::Borrowed(""),
        version: Cow::Borrowed(""),
        kind: Cow::Borrowed(kind),
        path: Cow::Borrowed(path),
    }
}
const fn rv(kind: &'static str, version: &'static str, path: &'static str) -> Referrer {
    Referrer {
        group: Cow::Borrowed(""),
        version: Cow::Borrowed(version),
        kind: Cow::Borrowed(kind),
        path: Cow::Borrowed(path),
    }
}
const fn rg(group: &'static str, kind: &'static str, path: &'static str) -> Referrer {
    Referrer {
        group: Cow::Borrowed(group),
        version: Cow::Borrowed(""),
        kind: Cow::Borrowed(kind),
        path: Cow::Borrowed(path),
    }
}
const fn rgv(
    group: &'static str,
    version: &'static str,
    kind: &'static str,
    path: &'static str,
) -> Referrer {
    Referrer {
        group: Cow::Borrowed(group),
        version: Cow::Borrowed(version),
        kind: Cow::Borrowed(kind),
        path: Cow::Borrowed(path),
    }
}

/// Pod-template paths shared by the workload kinds, in kustomize's order.
macro_rules! workload_refs {
    ($tail:literal ; $($kind:literal => $prefix:literal),*) => {
        &[$( r($kind, concat!($prefix, $tail)) ),*]
    };
}

const SCALE_TARGET: &[Referrer] = &[r("HorizontalPodAutoscaler", "spec/scaleTargetRef/name")];

const CONFIG_MAP_REFS: &[Referrer] = &[
    rv("Pod", "v1", "spec/volumes/configMap/name"),
    rv(
        "Pod",
        "v1",
        "spec/containers/env/valueFrom/configMapKeyRef/name",
    ),
    rv(
        "Pod",
        "v1",
        "spec/initContainers/env/valueFrom/configMapKeyRef/name",
    ),
    rv("Pod", "v1", "spec/containers/envFrom/configMapRef/name"),
    rv("Pod", "v1", "spec/initContainers/envFrom/configMapRef/name"),
    rv("Pod", "v1", "spec/volumes/projected/sources/configMap/name"),
    r("PodTemplate", "template/spec/volumes/configMap/name"),
    r(
        "PodTemplate",
        "template/spec/containers/env/valueFrom/configMapKeyRef/name",
    ),
    r(
        "PodTemplate",
        "template/spec/initContainers/env/valueFrom/configMapKeyRef/name",
    ),
    r(
        "PodTemplate",
        "template/spec/containers/envFrom/configMapRef/name",
    ),
    r(
        "PodTemplate",
        "template/spec/initContainers/envFrom/configMapRef/name",
    ),
    r(
        "PodTemplate",
        "template/spec/volumes/projected/sources/configMap/name",
    ),
    r("Deployment", "spec/template/spec/volumes/configMap/name"),
    r(
        "Deployment",
        "spec/template/spec/containers/env/valueFrom/configMapKeyRef/name",
    ),
    r(
        "Deployment",
        "spec/template/spec/initContainers/env/valueFrom/configMapKeyRef/name",
    ),
    r(
        "Deployment",
        "spec/template/spec/containers/envFrom/configMapRef/name",
    ),
    r(
        "Deployment",
        "spec/template/spec/initContainers/envFrom/configMapRef/name",
    ),
    r(
        "Deployment",
        "spec/template/spec/volumes/projected/sources/configMap/name",
    ),
    r("ReplicaSet", "spec/template/spec/volumes/configMap/name"),
    r(
        "ReplicaSet",
        "spec/template/spec/containers/env/valueFrom/configMapKeyRef/name",
    ),
    r(
        "ReplicaSet",
        "spec/template/spec/initContainers/env/valueFrom/configMapKeyRef/name",
    ),
    r(
        "ReplicaSet",
        "spec/template/spec/containers/envFrom/configMapRef/name",
    ),
    r(
        "ReplicaSet",
        "spec/template/spec/initContainers/envFrom/configMapRef/name",
    ),
    r(
        "ReplicaSet",
        "spec/template/spec/volumes/projected/sources/configMap/name",
    ),
    r("DaemonSet", "spec/template/spec/volumes/configMap/name"),
    r(
        "DaemonSet",
        "spec/template/spec/containers/env/valueFrom/configMapKeyRef/name",
    ),
    r(
        "DaemonSet",
        "spec/template/spec/initContainers/env/valueFrom/configMapKeyRef/name",
    ),
    r(
        "DaemonSet",
        "spec/template/spec/containers/envFrom/configMapRef/name",
    ),
    r(
        "DaemonSet",
        "spec/template/spec/initContainers/envFrom/configMapRef/name",
    ),
    r(
        "DaemonSet",
        "spec/template/spec/volumes/projected/sources/configMap/name",
    ),
    r("StatefulSet", "spec/template/spec/volumes/configMap/name"),
    r(
        "StatefulSet",
        "spec/template/spec/containers/env/valueFrom/configMapKeyRef/name",
    ),
    r(
        "StatefulSet",
        "spec/template/spec/initContainers/env/valueFrom/configMapKeyRef/name",
    ),
    r(
        "StatefulSet",
        "spec/template/spec/containers/envFrom/configMapRef/name",
    ),
    r(
        "StatefulSet",
        "spec/template/spec/initContainers/envFrom/configMapRef/name",
    ),
    r(
        "StatefulSet",
        "spec/template/spec/volumes/projected/sources/configMap/name",
    ),
    r("Job", "spec/template/spec/volumes/configMap/name"),
    r(
        "Job",
        "spec/template/spec/containers/env/valueFrom/configMapKeyRef/name",
    ),
    r(
        "Job",
        "spec/template/spec/initContainers/env/valueFrom/configMapKeyRef/name",
    ),
    r(
        "Job",
        "spec/template/spec/containers/envFrom/configMapRef/name",
    ),
    r(
        "Job",
        "spec/template/spec/initContainers/envFrom/configMapRef/name",
    ),
    r(
        "Job",
        "spec/template/spec/volumes/projected/sources/configMap/name",
    ),
    r(
        "CronJob",
        "spec/jobTemplate/spec/template/spec/volumes/configMap/name",
    ),
    r(
        "CronJob",
        "spec/jobTemplate/spec/template/spec/volumes/projected/sources/configMap/name",
    ),
    r(
        "CronJob",
        "spec/jobTemplate/spec/template/spec/containers/env/valueFrom/configMapKeyRef/name",
    ),
    r(
        "CronJob",
        "spec/jobTemplate/spec/template/spec/initContainers/env/valueFrom/configMapKeyRef/name",
    ),
    r(
        "CronJob",
        "spec/jobTemplate/spec/template/spec/containers/envFrom/configMapRef/name",
    ),
    r(
        "CronJob",
        "spec/jobTemplate/spec/template/spec/initContainers/envFrom/configMapRef/name",
    ),
    r("Node", "spec/configSource/configMap"),
    r("Role", "rules/resourceNames"),
    r("ClusterRole", "rules/resourceNames"),
    r(
        "Ingress",
        "metadata/annotations/nginx.ingress.kubernetes.io\\/fastcgi-params-configmap",
    ),
];

const SECRET_REFS: &[Referrer] = &[
    rv("Pod", "v1", "spec/volumes/secret/secretName"),
    rv(
        "Pod",
        "v1",
        "spec/containers/env/valueFrom/secretKeyRef/name",
    ),
    rv(
        "Pod",
        "v1",
        "spec/initContainers/env/valueFrom/secretKeyRef/name",
    ),
    rv("Pod", "v1", "spec/containers/envFrom/secretRef/name"),
    rv("Pod", "v1", "spec/initContainers/envFrom/secretRef/name"),
    rv("Pod", "v1", "spec/imagePullSecrets/name"),
    rv("Pod", "v1", "spec/volumes/projected/sources/secret/name"),
    r("PodTemplate", "template/spec/volumes/secret/secretName"),
    r(
        "PodTemplate",
        "template/spec/containers/env/valueFrom/secretKeyRef/name",
    ),
    r(
        "PodTemplate",
        "template/spec/initContainers/env/valueFrom/secretKeyRef/name",
    ),
    r(
        "PodTemplate",
        "template/spec/containers/envFrom/secretRef/name",
    ),
    r(
        "PodTemplate",
        "template/spec/initContainers/envFrom/secretRef/name",
    ),
    r("PodTemplate", "template/spec/imagePullSecrets/name"),
    r(
        "PodTemplate",
        "template/spec/volumes/projected/sources/secret/name",
    ),
    r("Deployment", "spec/template/spec/volumes/secret/secretName"),
    r(
        "Deployment",
        "spec/template/spec/containers/env/valueFrom/secretKeyRef/name",
    ),
    r(
        "Deployment",
        "spec/template/spec/initContainers/env/valueFrom/secretKeyRef/name",
    ),
    r(
        "Deployment",
        "spec/template/spec/containers/envFrom/secretRef/name",
    ),
    r(
        "Deployment",
        "spec/template/spec/initContainers/envFrom/secretRef/name",
    ),
    r("Deployment", "spec/template/spec/imagePullSecrets/name"),
    r(
        "Deployment",
        "spec/template/spec/volumes/projected/sources/secret/name",
    ),
    r("ReplicaSet", "spec/template/spec/volumes/secret/secretName"),
    r(
        "ReplicaSet",
        "spec/template/spec/containers/env/valueFrom/secretKeyRef/name",
    ),
    r(
        "ReplicaSet",
        "spec/template/spec/initContainers/env/valueFrom/secretKeyRef/name",
    ),
    r(
        "ReplicaSet",
        "spec/template/spec/containers/envFrom/secretRef/name",
    ),
    r(
        "ReplicaSet",
        "spec/template/spec/initContainers/envFrom/secretRef/name",
    ),
    r("ReplicaSet", "spec/template/spec/imagePullSecrets/name"),
    r(
        "ReplicaSet",
        "spec/template/spec/volumes/projected/sources/secret/name",
    ),
    r("DaemonSet", "spec/template/spec/volumes/secret/secretName"),
    r(
        "DaemonSet",
        "spec/template/spec/containers/env/valueFrom/secretKeyRef/name",
    ),
    r(
        "DaemonSet",
        "spec/template/spec/initContainers/env/valueFrom/secretKeyRef/name",
    ),
    r(
        "DaemonSet",
        "spec/template/spec/containers/envFrom/secretRef/name",
    ),
    r(
        "DaemonSet",
        "spec/template/spec/initContainers/envFrom/secretRef/name",
    ),
    r("DaemonSet", "spec/template/spec/imagePullSecrets/name"),
    r(
        "DaemonSet",
        "spec/template/spec/volumes/projected/sources/secret/name",
    ),
    r(
        "StatefulSet",
        "spec/template/spec/volumes/secret/secretName",
    ),
    r(
        "StatefulSet",
        "spec/template/spec/containers/env/valueFrom/secretKeyRef/name",
    ),
    r(
        "StatefulSet",
        "spec/template/spec/initContainers/env/valueFrom/secretKeyRef/name",
    ),
    r(
        "StatefulSet",
        "spec/template/spec/containers/envFrom/secretRef/name",
    ),
    r(
        "StatefulSet",
        "spec/template/spec/initContainers/envFrom/secretRef/name",
    ),
    r("StatefulSet", "spec/template/spec/imagePullSecrets/name"),
    r(
        "StatefulSet",
        "spec/template/spec/volumes/projected/sources/secret/name",
    ),
    r("Job", "spec/template/spec/volumes/secret/secretName"),
    r(
        "Job",
        "spec/template/spec/containers/env/valueFrom/secretKeyRef/name",
    ),
    r(
        "Job",
        "spec/template/spec/initContainers/env/valueFrom/secretKeyRef/name",
    ),
    r(
        "Job",
        "spec/template/spec/containers/envFrom/secretRef/name",
    ),
    r(
        "Job",
        "spec/template/spec/initContainers/envFrom/secretRef/name",
    ),
    r("Job", "spec/template/spec/imagePullSecrets/name"),
    r(
        "Job",
        "spec/template/spec/volumes/projected/sources/secret/name",
    ),
    r(
        "CronJob",
        "spec/jobTemplate/spec/template/spec/volumes/secret/secretName",
    ),
    r(
        "CronJob",
        "spec/jobTemplate/spec/template/spec/volumes/projected/sources/secret/name",
    ),
    r(
        "CronJob",
        "spec/jobTemplate/spec/template/spec/containers/env/valueFrom/secretKeyRef/name",
    ),
    r(
        "CronJob",
        "spec/jobTemplate/spec/template/spec/initContainers/env/valueFrom/secretKeyRef/name",
    ),
    r(
        "CronJob",
        "spec/jobTemplate/spec/template/spec/containers/envFrom/secretRef/name",
    ),
    r(
        "CronJob",
        "spec/jobTemplate/spec/template/spec/initContainers/envFrom/secretRef/name",
    ),
    r(
        "CronJob",
        "spec/jobTemplate/spec/template/spec/imagePullSecrets/name",
    ),
    // kustomize lists `spec/tls/secretName` twice; once is the same.
    r("Ingress", "spec/tls/secretName"),
    r(
        "Ingress",
        "metadata/annotations/ingress.kubernetes.io\\/auth-secret",
    ),
    r(
        "Ingress",
        "metadata/annotations/nginx.ingress.kubernetes.io\\/auth-secret",
    ),
    r(
        "Ingress",
        "metadata/annotations/nginx.ingress.kubernetes.io\\/auth-tls-secret",
    ),
    r("ServiceAccount", "imagePullSecrets/name"),
    r("StorageClass", "parameters/secretName"),
    r("StorageClass", "parameters/adminSecretName"),
    r("StorageClass", "parameters/userSecretName"),
    r("StorageClass", "parameters/secretRef"),
    r("Role", "rules/resourceNames"),
    r("ClusterRole", "rules/resourceNames"),
    rgv(
        "serving.knative.dev",
        "v1",
        "Service",
        "spec/template/spec/containers/env/valueFrom/secretKeyRef/name",
    ),
    r("PersistentVolume", "spec/azureFile/secretName"),
    // Not in kustomize's table (divergence, tests/kustomize/n32, DIVERGENCES.md): the Secret
    // of an `azureFile` or CSI pod volume. kustomize leaves the old name there, so after a
    // hash suffix or prefix the pod cannot mount the volume.
    rv("Pod", "v1", "spec/volumes/azureFile/secretName"),
    rv("Pod", "v1", "spec/volumes/csi/nodePublishSecretRef/name"),
    r("PodTemplate", "template/spec/volumes/azureFile/secretName"),
    r(
        "PodTemplate",
        "template/spec/volumes/csi/nodePublishSecretRef/name",
    ),
    r(
        "Deployment",
        "spec/template/spec/volumes/azureFile/secretName",
    ),
    r(
        "Deployment",
        "spec/template/spec/volumes/csi/nodePublishSecretRef/name",
    ),
    r(
        "ReplicaSet",
        "spec/template/spec/volumes/azureFile/secretName",
    ),
    r(
        "ReplicaSet",
        "spec/template/spec/volumes/csi/nodePublishSecretRef/name",
    ),
    r(
        "DaemonSet",
        "spec/template/spec/volumes/azureFile/secretName",
    ),
    r(
        "DaemonSet",
        "spec/template/spec/volumes/csi/nodePublishSecretRef/name",
    ),
    r(
        "StatefulSet",
        "spec/template/spec/volumes/azureFile/secretName",
    ),
    r(
        "StatefulSet",
        "spec/template/spec/volumes/csi/nodePublishSecretRef/name",
    ),
    r("Job", "spec/template/spec/volumes/azureFile/secretName"),
    r(
        "Job",
        "spec/template/spec/volumes/csi/nodePublishSecretRef/name",
    ),
    r(
        "CronJob",
        "spec/jobTemplate/spec/template/spec/volumes/azureFile/secretName",
    ),
    r(
        "CronJob",
        "spec/jobTemplate/spec/template/spec/volumes/csi/nodePublishSecretRef/name",
    ),
];

const SERVICE_REFS: &[Referrer] = &[
    rg("apps", "StatefulSet", "spec/serviceName"),
    r("Ingress", "spec/rules/http/paths/backend/serviceName"),
    r("Ingress", "spec/backend/serviceName"),
    r("Ingress", "spec/rules/http/paths/backend/service/name"),
    r("Ingress", "spec/defaultBackend/service/name"),
    rg("apiregistration.k8s.io", "APIService", "spec/service/name"),
    rg(
        "admissionregistration.k8s.io",
        "ValidatingWebhookConfiguration",
        "webhooks/clientConfig/service",
    ),
    rg(
        "admissionregistration.k8s.io",
        "MutatingWebhookConfiguration",
        "webhooks/clientConfig/service",
    ),
];

const ROLE_REFS: &[Referrer] = &[rg(
    "rbac.authorization.k8s.io",
    "RoleBinding",
    "roleRef/name",
)];

const CLUSTER_ROLE_REFS: &[Referrer] = &[
    rg("rbac.authorization.k8s.io", "RoleBinding", "roleRef/name"),
    rg(
        "rbac.authorization.k8s.io",
        "ClusterRoleBinding",
        "roleRef/name",
    ),
];

const SERVICE_ACCOUNT_REFS: &[Referrer] = &[
    rg("rbac.authorization.k8s.io", "RoleBinding", "subjects"),
    rg(
        "rbac.authorization.k8s.io",
        "ClusterRoleBinding",
        "subjects",
    ),
    r("Pod", "spec/serviceAccountName"),
    r("StatefulSet", "spec/template/spec/serviceAccountName"),
    r("Deployment", "spec/template/spec/serviceAccountName"),
    r(
        "ReplicationController",
        "spec/template/spec/serviceAccountName",
    ),
    r(
        "CronJob",
        "spec/jobTemplate/spec/template/spec/serviceAccountName",
    ),
    r("Job", "spec/template/spec/serviceAccountName"),
    r("DaemonSet", "spec/template/spec/serviceAccountName"),
];

const PVC_REFS: &[Referrer] = workload_refs!("volumes/persistentVolumeClaim/claimName";
    "Pod" => "spec/", "StatefulSet" => "spec/template/spec/", "Deployment" => "spec/template/spec/",
    "ReplicationController" => "spec/template/spec/", "CronJob" => "spec/jobTemplate/spec/template/spec/",
    "Job" => "spec/template/spec/", "DaemonSet" => "spec/template/spec/");

const PV_REFS: &[Referrer] = &[
    r("PersistentVolumeClaim", "spec/volumeName"),
    r("ClusterRole", "rules/resourceNames"),
];

const STORAGE_CLASS_REFS: &[Referrer] = &[
    r("PersistentVolume", "spec/storageClassName"),
    r("PersistentVolumeClaim", "spec/storageClassName"),
    r(
        "StatefulSet",
        "spec/volumeClaimTemplates/spec/storageClassName",
    ),
];

const PRIORITY_CLASS_REFS: &[Referrer] = workload_refs!("priorityClassName";
    "Pod" => "spec/", "StatefulSet" => "spec/template/spec/", "Deployment" => "spec/template/spec/",
    "ReplicationController" => "spec/template/spec/", "CronJob" => "spec/jobTemplate/spec/template/spec/",
    "Job" => "spec/template/spec/", "DaemonSet" => "spec/template/spec/");

const INGRESS_CLASS_REFS: &[Referrer] = &[r("Ingress", "spec/ingressClassName")];

/// kustomize v5.5's built-in name-reference table, in its order.
pub const NAME_REFERENCES: &[NameReference] = &[
    NameReference {
        group: Cow::Borrowed(""),
        version: Cow::Borrowed(""),
        kind: Cow::Borrowed("Deployment"),
        referrers: Cow::Borrowed(SCALE_TARGET),
    },
    NameReference {
        group: Cow::Borrowed(""),
        version: Cow::Borrowed(""),
        kind: Cow::Borrowed("ReplicationController"),
        referrers: Cow::Borrowed(SCALE_TARGET),
    },
    NameReference {
        group: Cow::Borrowed(""),
        version: Cow::Borrowed(""),
        kind: Cow::Borrowed("ReplicaSet"),
        referrers: Cow::Borrowed(SCALE_TARGET),
    },
    NameReference {
        group: Cow::Borrowed(""),
        version: Cow::Borrowed(""),
        kind: Cow::Borrowed("StatefulSet"),
        referrers: Cow::Borrowed(SCALE_TARGET),
    },
    NameReference {
        group: Cow::Borrowed(""),
        version: Cow::Borrowed("v1"),
        kind: Cow::Borrowed("ConfigMap"),
        referrers: Cow::Borrowed(CONFIG_MAP_REFS),
    },
    NameReference {
        group: Cow::Borrowed(""),
        version: Cow::Borrowed("v1"),
        kind: Cow::Borrowed("Secret"),
        referrers: Cow::Borrowed(SECRET_REFS),
    },
    NameReference {
        group: Cow::Borrowed(""),
        version: Cow::Borrowed("v1"),
        kind: Cow::Borrowed("Service"),
        referrers: Cow::Borrowed(SERVICE_REFS),
    },
    NameReference {
        group: Cow::Borrowed("rbac.authorization.k8s.io"),
        version: Cow::Borrowed(""),
        kind: Cow::Borrowed("Role"),
        referrers: Cow::Borrowed(ROLE_REFS),
    },
    NameReference {
        group: Cow::Borrowed("rbac.authorization.k8s.io"),
        version: Cow::Borrowed(""),
        kind: Cow::Borrowed("ClusterRole"),
        referrers: Cow::Borrowed(CLUSTER_ROLE_REFS),
    },
    NameReference {
        group: Cow::Borrowed(""),
        version: Cow::Borrowed("v1"),
        kind: Cow::Borrowed("ServiceAccount"),
        referrers: Cow::Borrowed(SERVICE_ACCOUNT_REFS),
    },
    NameReference {
        group: Cow::Borrowed(""),
        version: Cow::Borrowed("v1"),
        kind: Cow::Borrowed("PersistentVolumeClaim"),
        referrers: Cow::Borrowed(PVC_REFS),
    },
    NameReference {
        group: Cow::Borrowed(""),
        version: Cow::Borrowed("v1"),
        kind: Cow::Borrowed("PersistentVolume"),
        referrers: Cow::Borrowed(PV_REFS),
    },
    NameReference {
        group: Cow::Borrowed("storage.k8s.io"),
        version: Cow::Borrowed("v1"),
        kind: Cow::Borrowed("StorageClass"),
        referrers: Cow::Borrowed(STORAGE_CLASS_REFS),
    },
    NameReference {
        group: Cow::Borrowed("scheduling.k8s.io"),
        version: Cow::Borrowed("v1"),
        kind: Cow::Borrowed("PriorityClass"),
        referrers: Cow::Borrowed(PRIORITY_CLASS_REFS),
    },
    // Quirk kept on purpose: kustomize spells the group with a version, so this never matches.
    NameReference {
        group: Cow::Borrowed("networking.k8s.io/v1"),
        version: Cow::Borrowed("v1"),
        kind: Cow::Borrowed("IngressClass"),
        referrers: Cow::Borrowed(INGRESS_CLASS_REFS),
    },
];
