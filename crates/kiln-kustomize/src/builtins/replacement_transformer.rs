//! `ReplacementTransformer` (kustomize `api/builtins/ReplacementTransformer.go`): the
//! replacements inline (one or a list), or a `path:` file holding them.

use crate::types::kustomization::nullable_fields;
use serde::Deserialize;
use serde_json::Value;

nullable_fields! {
    /// The config. `replacements` stays a value: a file's content and an inline list decode the
    /// same way (`filters::replacement::replacements_from_value`).
    #[derive(Debug, Clone, Default, Deserialize)]
    #[serde(deny_unknown_fields, rename_all = "camelCase")]
    pub struct ReplacementTransformer {
        #[serde(default)]
        pub replacements: Option<Value>,
        #[nullable]
        pub path: String,
    }
}
