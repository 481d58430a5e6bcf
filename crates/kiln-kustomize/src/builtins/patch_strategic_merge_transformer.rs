//! `PatchStrategicMergeTransformer` (kustomize
//! `api/builtins/PatchStrategicMergeTransformer.go`): patch files (`paths:`) and inline
//! patches (`patches:`), each targeting the objects named by its own id.

use crate::types::kustomization::nullable;
use serde::Deserialize;

/// The config.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PatchStrategicMergeTransformer {
    #[serde(default, deserialize_with = "nullable")]
    pub paths: Vec<String>,
    #[serde(default, deserialize_with = "nullable")]
    pub patches: String,
}
