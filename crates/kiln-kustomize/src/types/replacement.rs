//! The `replacements:` model (kustomize `api/types/replacement.go`,
//! `api/types/replacementfield.go`): one type per concept, used both for a kustomization's
//! inline entries and for `path:` files and `ReplacementTransformer` configs. Selection goes
//! through the engine's one [`Selector`]; the filter is `filters::replacement`.

use super::kustomization::nullable_fields;
use super::selector::Selector;
use serde::{Deserialize, Serialize};

nullable_fields! {
    /// One `replacements:` entry (kustomize's `ReplacementField`): inline (`source` + `targets`)
    /// or a file (`path`) holding one replacement or a list of them.
    #[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
    #[serde(deny_unknown_fields, rename_all = "camelCase")]
    pub struct ReplacementField {
        /// Inline: where the value comes from.
        #[serde(skip_serializing_if = "Option::is_none", default)]
        pub source: Option<SourceSelector>,
        /// Inline: where it goes.
        #[nullable]
        #[serde(skip_serializing_if = "Vec::is_empty")]
        pub targets: Vec<TargetSelector>,
        /// A file with the replacements, relative to the kustomization directory.
        #[nullable]
        #[serde(skip_serializing_if = "String::is_empty")]
        pub path: String,
    }
}

impl ReplacementField {
    /// The inline replacement of this entry.
    pub fn inline(&self) -> Replacement {
        Replacement {
            source: self.source.clone(),
            targets: self.targets.clone(),
        }
    }
}

nullable_fields! {
    /// One replacement (kustomize `types.Replacement`).
    #[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
    #[serde(deny_unknown_fields)]
    pub struct Replacement {
        /// Where the value comes from.
        #[serde(default)]
        pub source: Option<SourceSelector>,
        /// Where it goes.
        #[nullable]
        pub targets: Vec<TargetSelector>,
    }
}

nullable_fields! {
    /// `source:` (kustomize `types.SourceSelector`: a `ResId` inline, a field path, options).
    #[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
    #[serde(rename_all = "camelCase", deny_unknown_fields)]
    pub struct SourceSelector {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub group: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub version: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub kind: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub name: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub namespace: Option<String>,
        /// Defaults to `metadata.name`.
        #[nullable]
        #[serde(skip_serializing_if = "String::is_empty")]
        pub field_path: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub options: Option<FieldOptions>,
    }
}

impl SourceSelector {
    /// The id part as a [`Selector`] (no label or annotation selector).
    pub fn id(&self) -> Selector {
        Selector {
            group: self.group.clone(),
            version: self.version.clone(),
            kind: self.kind.clone(),
            name: self.name.clone(),
            namespace: self.namespace.clone(),
            ..Selector::default()
        }
    }
}

nullable_fields! {
    /// One entry of `targets:` (kustomize `types.TargetSelector`).
    #[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
    #[serde(rename_all = "camelCase", deny_unknown_fields)]
    pub struct TargetSelector {
        /// Required.
        #[serde(default)]
        pub select: Option<Selector>,
        #[nullable]
        #[serde(skip_serializing_if = "Vec::is_empty")]
        pub reject: Vec<Selector>,
        /// Defaults to `[metadata.name]`.
        #[nullable]
        #[serde(skip_serializing_if = "Vec::is_empty")]
        pub field_paths: Vec<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub options: Option<FieldOptions>,
    }
}

nullable_fields! {
    /// `options:` (kustomize `types.FieldOptions`).
    #[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
    #[serde(rename_all = "camelCase", deny_unknown_fields)]
    pub struct FieldOptions {
        /// Split the value on this string and use/replace the part at `index`.
        #[nullable]
        #[serde(skip_serializing_if = "String::is_empty")]
        pub delimiter: String,
        #[serde(default)]
        pub index: i64,
        /// Accepted and ignored, as in kustomize.
        #[nullable]
        #[serde(skip_serializing_if = "String::is_empty")]
        pub encoding: String,
        /// Create missing target fields.
        #[serde(default)]
        pub create: bool,
    }
}
