//! One `labels:` entry of a kustomization (kustomize `api/types/labels.go`): the pairs, whether
//! they also go into selectors and templates, and extra field specs. Applying it is
//! `filters::labels`.

use super::fieldspec::{self, FieldSpec};
use super::kustomization::{StringMap, nullable_fields};
use indexmap::IndexMap;
use serde::{Deserialize, Serialize};

nullable_fields! {
    /// One `labels:` entry (kustomize `types.Label`).
    #[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
    #[serde(deny_unknown_fields, rename_all = "camelCase")]
    pub struct Label {
        /// The labels to set.
        #[nullable]
        #[serde(skip_serializing_if = "IndexMap::is_empty")]
        pub pairs: StringMap,
        /// Also set them in selectors (and templates): the whole `commonLabels` table.
        #[serde(default)]
        pub include_selectors: bool,
        /// Also set them in pod templates (ignored when `include_selectors` is set, which already
        /// covers templates).
        #[serde(default)]
        pub include_templates: bool,
        /// Extra field specs for these labels. Read as kustomize writes them, `path` optional
        /// ([`fieldspec::lenient`]); an entry whose spec has no path is refused where it is
        /// applied (`krusty::transform`), at the entry.
        #[serde(
            skip_serializing_if = "Vec::is_empty",
            default,
            deserialize_with = "fieldspec::lenient"
        )]
        pub fields: Vec<FieldSpec>,
    }
}
