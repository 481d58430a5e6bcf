//! One `secretGenerator` entry (kustomize `api/types/secretargs.go`): the ConfigMap fields
//! plus `type`. Generating is `builtins::generators`.

use super::generatoroptions::GeneratorOptions;
use super::kustomization::nullable_fields;
use serde::{Deserialize, Serialize};

nullable_fields! {
    /// One `secretGenerator` entry: the ConfigMap fields plus `type` (default `Opaque`).
    #[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
    #[serde(rename_all = "camelCase", deny_unknown_fields, default)]
    pub struct SecretArgs {
        /// Object name before prefix, suffix and hash (required).
        #[nullable]
        #[serde(skip_serializing_if = "String::is_empty")]
        pub name: String,
        /// `metadata.namespace` of the generated object (also narrows merge/replace targets).
        #[nullable]
        #[serde(skip_serializing_if = "String::is_empty")]
        pub namespace: String,
        /// As [`ConfigMapArgs::behavior`](super::configmapargs::ConfigMapArgs::behavior).
        #[nullable]
        #[serde(skip_serializing_if = "String::is_empty")]
        pub behavior: String,
        /// As [`ConfigMapArgs::literals`](super::configmapargs::ConfigMapArgs::literals).
        #[nullable]
        #[serde(skip_serializing_if = "Vec::is_empty")]
        pub literals: Vec<String>,
        /// As [`ConfigMapArgs::files`](super::configmapargs::ConfigMapArgs::files).
        #[nullable]
        #[serde(skip_serializing_if = "Vec::is_empty")]
        pub files: Vec<String>,
        /// As [`ConfigMapArgs::envs`](super::configmapargs::ConfigMapArgs::envs).
        #[nullable]
        #[serde(skip_serializing_if = "Vec::is_empty")]
        pub envs: Vec<String>,
        /// As [`ConfigMapArgs::env`](super::configmapargs::ConfigMapArgs::env).
        #[nullable]
        #[serde(skip_serializing_if = "String::is_empty")]
        pub env: String,
        /// Secret `type`; empty means `Opaque`.
        #[serde(rename = "type")]
        #[nullable]
        #[serde(skip_serializing_if = "String::is_empty")]
        pub secret_type: String,
        /// Per-entry options; `generatorOptions` fills in what they leave out.
        #[serde(skip_serializing_if = "Option::is_none")]
        pub options: Option<GeneratorOptions>,
    }
}
