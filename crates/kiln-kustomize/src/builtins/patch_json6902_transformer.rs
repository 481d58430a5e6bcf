//! `PatchJson6902Transformer` (kustomize `api/builtins/PatchJson6902Transformer.go`): a JSON
//! patch (`path:` or inline `jsonOp:`) with a target. Applied as a `patches:` entry.

use crate::types::kustomization::nullable_fields;
use crate::types::patch::Patch;
use crate::types::selector::Selector;
use serde::Deserialize;

nullable_fields! {
    /// The config.
    #[derive(Debug, Clone, Default, Deserialize)]
    #[serde(deny_unknown_fields, rename_all = "camelCase")]
    pub struct PatchJson6902Transformer {
        #[serde(default)]
        pub target: Option<Selector>,
        #[nullable]
        pub path: String,
        #[nullable]
        pub json_op: String,
    }
}

impl PatchJson6902Transformer {
    /// The equivalent `patches:` entry.
    pub fn patch(&self) -> Patch {
        Patch {
            path: self.path.clone(),
            patch: self.json_op.clone(),
            target: self.target.clone(),
            ..Patch::default()
        }
    }
}
