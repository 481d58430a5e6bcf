//! `generatorOptions` and the per-entry `options` of a generator (kustomize
//! `api/types/generatoroptions.go`): labels, annotations, the hash suffix and `immutable`,
//! with `MergeGlobalOptionsIntoLocal`.

use super::kustomization::nullable_fields;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

nullable_fields! {
    /// `generatorOptions` (kustomization-wide) and the per-entry `options` block.
    #[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
    #[serde(rename_all = "camelCase", deny_unknown_fields, default)]
    pub struct GeneratorOptions {
        /// Labels added to generated objects.
        #[nullable]
        #[serde(skip_serializing_if = "BTreeMap::is_empty")]
        pub labels: BTreeMap<String, String>,
        /// Annotations added to generated objects.
        #[nullable]
        #[serde(skip_serializing_if = "BTreeMap::is_empty")]
        pub annotations: BTreeMap<String, String>,
        /// Do not append the content hash to the name.
        #[nullable]
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        pub disable_name_suffix_hash: bool,
        /// Set `immutable: true`.
        #[nullable]
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        pub immutable: bool,
    }
}

impl GeneratorOptions {
    /// kustomize's `MergeGlobalOptionsIntoLocal`: local labels/annotations win over global
    /// ones with the same key; `disableNameSuffixHash` and `immutable` are or-ed.
    pub fn merged_with_global(
        local: Option<&GeneratorOptions>,
        global: Option<&GeneratorOptions>,
    ) -> GeneratorOptions {
        let mut out = local.cloned().unwrap_or_default();
        if let Some(g) = global {
            for (k, v) in &g.labels {
                out.labels.entry(k.clone()).or_insert_with(|| v.clone());
            }
            for (k, v) in &g.annotations {
                out.annotations
                    .entry(k.clone())
                    .or_insert_with(|| v.clone());
            }
            out.disable_name_suffix_hash |= g.disable_name_suffix_hash;
            out.immutable |= g.immutable;
        }
        out
    }
}
