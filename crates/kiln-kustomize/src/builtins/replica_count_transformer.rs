//! `ReplicaCountTransformer` (kustomize `api/builtins/ReplicaCountTransformer.go`).

use crate::filters::replica_count::{self, Replica, ReplicasError};
use crate::types::fieldspec::FieldSpec;
use crate::types::kustomization::nullable_fields;
use kiln_base::resource::Resource;
use serde::Deserialize;

nullable_fields! {
    /// The config: the workload and count. `replica` is required (checked by the caller, so the
    /// error points at the entry); `fieldSpecs` is accepted, the filter's own table decides.
    #[derive(Debug, Clone, Default, Deserialize)]
    #[serde(deny_unknown_fields, rename_all = "camelCase")]
    pub struct ReplicaCountTransformer {
        #[serde(default)]
        pub replica: Option<Replica>,
        #[nullable]
        pub field_specs: Vec<FieldSpec>,
    }
}

impl ReplicaCountTransformer {
    /// Sets the count; `None` when the config has no `replica`.
    pub fn apply(&self, res: &mut [Resource]) -> Option<Result<(), ReplicasError>> {
        let r = self.replica.as_ref()?;
        Some(replica_count::apply_replicas(res, std::slice::from_ref(r)))
    }
}
