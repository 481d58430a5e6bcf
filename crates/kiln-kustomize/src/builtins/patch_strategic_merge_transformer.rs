//! `PatchStrategicMergeTransformer` (kustomize
//! `api/builtins/PatchStrategicMergeTransformer.go`): patch files (`paths:`) and inline
//! patches (`patches:`), each targeting the objects named by its own id.

use crate::types::kustomization::nullable_fields;
use serde::Deserialize;

nullable_fields! {
    /// The config.
    #[derive(Debug, Clone, Default, Deserialize)]
    #[serde(deny_unknown_fields, rename_all = "camelCase")]
    pub struct PatchStrategicMergeTransformer {
        #[nullable]
        pub paths: Vec<String>,
        #[nullable]
        pub patches: String,
    }
}
