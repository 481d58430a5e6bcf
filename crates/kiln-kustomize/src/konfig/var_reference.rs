//! kustomize's default `varReference` table (legacy `vars`), used by `filters::refvar`.

use crate::types::fieldspec::FieldSpec;
use std::sync::OnceLock;

/// kustomize's default `varReference` field specs
/// (`api/internal/konfig/builtinpluginconsts/varreference.go`), as `kind path` pairs; `-` is any kind.
const DEFAULT_VAR_REFERENCE: &str = "
CronJob spec/jobTemplate/spec/template/spec/containers/args
CronJob spec/jobTemplate/spec/template/spec/containers/command
CronJob spec/jobTemplate/spec/template/spec/containers/env/value
CronJob spec/jobTemplate/spec/template/spec/containers/volumeMounts/mountPath
CronJob spec/jobTemplate/spec/template/spec/initContainers/args
CronJob spec/jobTemplate/spec/template/spec/initContainers/command
CronJob spec/jobTemplate/spec/template/spec/initContainers/env/value
CronJob spec/jobTemplate/spec/template/spec/initContainers/volumeMounts/mountPath
CronJob spec/jobTemplate/spec/template/spec/volumes/nfs/server
DaemonSet spec/template/spec/containers/args
DaemonSet spec/template/spec/containers/command
DaemonSet spec/template/spec/containers/env/value
DaemonSet spec/template/spec/containers/volumeMounts/mountPath
DaemonSet spec/template/spec/initContainers/args
DaemonSet spec/template/spec/initContainers/command
DaemonSet spec/template/spec/initContainers/env/value
DaemonSet spec/template/spec/initContainers/volumeMounts/mountPath
DaemonSet spec/template/spec/volumes/nfs/server
Deployment spec/template/spec/containers/args
Deployment spec/template/spec/containers/command
Deployment spec/template/spec/containers/env/value
Deployment spec/template/spec/containers/volumeMounts/mountPath
Deployment spec/template/spec/initContainers/args
Deployment spec/template/spec/initContainers/command
Deployment spec/template/spec/initContainers/env/value
Deployment spec/template/spec/initContainers/volumeMounts/mountPath
Deployment spec/template/spec/volumes/nfs/server
Ingress spec/rules/host
Ingress spec/tls/hosts
Ingress spec/tls/secretName
Job spec/template/spec/containers/args
Job spec/template/spec/containers/command
Job spec/template/spec/containers/env/value
Job spec/template/spec/containers/volumeMounts/mountPath
Job spec/template/spec/initContainers/args
Job spec/template/spec/initContainers/command
Job spec/template/spec/initContainers/env/value
Job spec/template/spec/initContainers/volumeMounts/mountPath
Job spec/template/spec/volumes/nfs/server
Pod spec/containers/args
Pod spec/containers/command
Pod spec/containers/env/value
Pod spec/containers/volumeMounts/mountPath
Pod spec/initContainers/args
Pod spec/initContainers/command
Pod spec/initContainers/env/value
Pod spec/initContainers/volumeMounts/mountPath
Pod spec/volumes/nfs/server
ReplicaSet spec/template/spec/containers/args
ReplicaSet spec/template/spec/containers/command
ReplicaSet spec/template/spec/containers/env/value
ReplicaSet spec/template/spec/containers/volumeMounts/mountPath
ReplicaSet spec/template/spec/initContainers/args
ReplicaSet spec/template/spec/initContainers/command
ReplicaSet spec/template/spec/initContainers/env/value
ReplicaSet spec/template/spec/initContainers/volumeMounts/mountPath
ReplicaSet spec/template/spec/volumes/nfs/server
Service spec/ports/port
Service spec/ports/targetPort
StatefulSet spec/template/spec/containers/args
StatefulSet spec/template/spec/containers/command
StatefulSet spec/template/spec/containers/env/value
StatefulSet spec/template/spec/containers/volumeMounts/mountPath
StatefulSet spec/template/spec/initContainers/args
StatefulSet spec/template/spec/initContainers/command
StatefulSet spec/template/spec/initContainers/env/value
StatefulSet spec/template/spec/initContainers/volumeMounts/mountPath
StatefulSet spec/volumeClaimTemplates/spec/nfs/server
PersistentVolume spec/nfs/server
- metadata/labels
- metadata/annotations
";

/// The default `varReference` table.
pub fn default_var_reference() -> &'static [FieldSpec] {
    static TABLE: OnceLock<Vec<FieldSpec>> = OnceLock::new();
    TABLE.get_or_init(|| {
        DEFAULT_VAR_REFERENCE
            .lines()
            .filter_map(|l| l.split_once(' '))
            .map(|(kind, path)| FieldSpec {
                kind: if kind == "-" { "".into() } else { kind.into() },
                path: path.into(),
                ..FieldSpec::default()
            })
            .collect()
    })
}
