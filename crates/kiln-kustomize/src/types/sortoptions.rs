//! `sortOptions` (kustomize `api/types/sortoptions.go`): the output order a root
//! kustomization asks for. Sorting is `builtins::sort_order_transformer`.

use super::kustomization::nullable_fields;
use serde::{Deserialize, Serialize};

nullable_fields! {
    /// `sortOptions` (kustomize `types.SortOptions`). `order` stays a string because kustomize
    /// only checks it on the root kustomization ([`SortOptions::sort_order`], called by the
    /// build); a typed order would reject a bad value in a base too.
    #[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
    #[serde(deny_unknown_fields, rename_all = "camelCase")]
    pub struct SortOptions {
        /// `legacy` (default) or `fifo`.
        #[nullable]
        #[serde(skip_serializing_if = "String::is_empty")]
        pub order: String,
        #[serde(skip_serializing_if = "Option::is_none", default)]
        pub legacy_sort_options: Option<LegacySortOptions>,
    }
}

nullable_fields! {
    /// `sortOptions.legacySortOptions`.
    #[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
    #[serde(rename_all = "camelCase", deny_unknown_fields)]
    pub struct LegacySortOptions {
        #[nullable]
        pub order_first: Vec<String>,
        #[nullable]
        pub order_last: Vec<String>,
    }
}

/// `sortOptions.order` (kustomize `types.SortOrder`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SortOrder {
    /// Keep the order resources were read and generated in.
    Fifo,
    /// Rank by kind (see `builtins::sort_order_transformer`).
    Legacy,
}

impl SortOptions {
    /// The order, checked: `Err` holds serde's message for a missing (`missing field
    /// `order``) or unknown value (`unknown variant …, expected `fifo` or `legacy``).
    pub fn sort_order(&self) -> Result<SortOrder, String> {
        if self.order.is_empty() {
            return Err("missing field `order`".into());
        }
        serde_json::from_value(serde_json::Value::String(self.order.clone()))
            .map_err(|e| e.to_string())
    }
}
