//! One `secretGenerator` entry (kustomize `api/types/secretargs.go`): the ConfigMap fields
//! plus `type`. Generating is `builtins::generators`.

use super::generatoroptions::GeneratorOptions;
use super::kustomization::nullable;
use serde::{Deserialize, Serialize};

/// One `secretGenerator` entry: the ConfigMap fields plus `type` (default `Opaque`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct SecretArgs {
    /// Object name before prefix, suffix and hash (required).
    #[serde(
        skip_serializing_if = "String::is_empty",
        deserialize_with = "nullable"
    )]
    pub name: String,
    /// `metadata.namespace` of the generated object (also narrows merge/replace targets).
    #[serde(
        skip_serializing_if = "String::is_empty",
        deserialize_with = "nullable"
    )]
    pub namespace: String,
    /// As [`ConfigMapArgs::behavior`](super::configmapargs::ConfigMapArgs::behavior).
    #[serde(
        skip_serializing_if = "String::is_empty",
        deserialize_with = "nullable"
    )]
    pub behavior: String,
    /// As [`ConfigMapArgs::literals`](super::configmapargs::ConfigMapArgs::literals).
    #[serde(skip_serializing_if = "Vec::is_empty", deserialize_with = "nullable")]
    pub literals: Vec<String>,
    /// As [`ConfigMapArgs::files`](super::configmapargs::ConfigMapArgs::files).
    #[serde(skip_serializing_if = "Vec::is_empty", deserialize_with = "nullable")]
    pub files: Vec<String>,
    /// As [`ConfigMapArgs::envs`](super::configmapargs::ConfigMapArgs::envs).
    #[serde(skip_serializing_if = "Vec::is_empty", deserialize_with = "nullable")]
    pub envs: Vec<String>,
    /// As [`ConfigMapArgs::env`](super::configmapargs::ConfigMapArgs::env).
    #[serde(
        skip_serializing_if = "String::is_empty",
        deserialize_with = "nullable"
    )]
    pub env: String,
    /// Secret `type`; empty means `Opaque`.
    #[serde(rename = "type")]
    #[serde(
        skip_serializing_if = "String::is_empty",
        deserialize_with = "nullable"
    )]
    pub secret_type: String,
    /// Per-entry options; `generatorOptions` fills in what they leave out.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub options: Option<GeneratorOptions>,
}
