//! The `replicas:` transformer: sets `spec.replicas` of workloads by name.
//!
//! Sits in the transformer phase of a kustomization build. Mirrors kustomize v5.5's
//! `ReplicaCountTransformer` with the `replicas` field specs
//! (api/internal/konfig/builtinpluginconsts/replicas.go): `spec/replicas` of Deployment,
//! StatefulSet, ReplicaSet and ReplicationController (any group), created when absent. A
//! resource matches when its current name *or any earlier name* (before prefix/suffix) equals
//! the entry's name, as kustomize's `GetMatchingResourcesByAnyId`.
//!
//! Invariant: an entry that matches nothing is an error, as in kustomize.

pub use crate::konfig::field_specs::REPLICAS_FIELD_SPECS;
pub use crate::types::replica::Replica;
use kiln_base::resource::Resource;
use serde_json::Value;

/// Errors of the replicas transformer.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum ReplicasError {
    /// No Deployment, StatefulSet, ReplicaSet or ReplicationController has this name.
    #[error(
        "replicas entry `{name}` matches no Deployment, StatefulSet, ReplicaSet or ReplicationController"
    )]
    #[diagnostic(
        code(kiln::kustomize::replicas_target_missing),
        help(
            "check the name against the resources of this kustomization (names before namePrefix/nameSuffix also match)"
        )
    )]
    TargetMissing { name: String },
}

/// Applies each entry in order.
///
/// Errors: [`ReplicasError::TargetMissing`] for an entry that matches no workload.
pub fn apply_replicas(
    resources: &mut [Resource],
    replicas: &[Replica],
) -> Result<(), ReplicasError> {
    for replica in replicas {
        let mut found = false;
        for res in resources.iter_mut() {
            let name_matches = res.name() == replica.name
                || res
                    .meta
                    .previous_names
                    .iter()
                    .any(|(_, n)| *n == replica.name);
            if !name_matches {
                continue;
            }
            for spec in REPLICAS_FIELD_SPECS {
                if !spec.applies_to(res) {
                    continue;
                }
                found = true;
                crate::filters::fieldspec::visit_path_mut(
                    &mut res.value,
                    &spec.path,
                    spec.create,
                    &mut |v| *v = Value::from(replica.count),
                );
            }
        }
        if !found {
            return Err(ReplicasError::TargetMissing {
                name: replica.name.clone(),
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn res(kind: &str, name: &str) -> Resource {
        Resource::new(
            json!({"apiVersion": "apps/v1", "kind": kind, "metadata": {"name": name}, "spec": {"replicas": 1}}),
            None,
        )
    }

    #[test]
    fn sets_count_by_current_or_previous_name() {
        let mut renamed = res("StatefulSet", "pre-db");
        renamed.meta.previous_names.push((None, "db".into()));
        let mut rs = vec![res("Deployment", "web"), renamed, res("Service", "web")];
        rs[0].value["spec"]
            .as_object_mut()
            .unwrap()
            .remove("replicas");
        apply_replicas(
            &mut rs,
            &[
                Replica {
                    name: "web".into(),
                    count: 3,
                },
                Replica {
                    name: "db".into(),
                    count: 0,
                },
            ],
        )
        .unwrap();
        assert_eq!(rs[0].value["spec"]["replicas"], 3);
        assert_eq!(rs[1].value["spec"]["replicas"], 0);
        // A Service of the same name is not a replicas target.
        assert_eq!(rs[2].value["spec"]["replicas"], 1);
    }

    #[test]
    fn missing_target_is_an_error() {
        let mut rs = vec![res("Service", "web")];
        let err = apply_replicas(
            &mut rs,
            &[Replica {
                name: "web".into(),
                count: 2,
            }],
        )
        .unwrap_err();
        assert!(matches!(err, ReplicasError::TargetMissing { ref name } if name == "web"));
    }
}
