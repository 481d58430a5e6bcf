//! `sortOptions` (kustomize `api/types/sortoptions.go`): the output order a root
//! kustomization asks for. Sorting is `builtins::sort_order_transformer`.

use super::kustomization::nullable;
use serde::{Deserialize, Serialize};

/// `sortOptions`. Not `order::SortOptions`: `order` stays a string here because kustomize
/// only checks it on the root kustomization (`build` converts it there); a typed order would
/// reject a bad value in a base too.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SortOptions {
    /// `legacy` (default) or `fifo`.
    #[serde(
        skip_serializing_if = "String::is_empty",
        default,
        deserialize_with = "nullable"
    )]
    pub order: String,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub legacy_sort_options: Option<LegacySortOptions>,
}

/// `sortOptions.legacySortOptions`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LegacySortOptions {
    #[serde(default, deserialize_with = "nullable")]
    pub order_first: Vec<String>,
    #[serde(default, deserialize_with = "nullable")]
    pub order_last: Vec<String>,
}
