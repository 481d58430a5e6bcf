//! The kustomization's Helm fields (kustomize `api/types/helmchartargs.go`): `helmGlobals`
//! ([`HelmGlobals`]), `helmCharts` ([`HelmChart`]) and the deprecated
//! `helmChartInflationGenerator` ([`HelmChartArgs`]). Inflating a chart is
//! `builtins::helm_chart_inflation_generator` and `krusty::generate`.

use super::kustomization::nullable;
use indexmap::IndexMap;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// kustomize's `types.HelmDefaultHome`.
pub const DEFAULT_CHART_HOME: &str = "charts";

/// `helmGlobals:` (kustomize's `types.HelmGlobals`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct HelmGlobals {
    /// Directory holding one subdirectory per chart, relative to the kustomization root.
    #[serde(
        skip_serializing_if = "String::is_empty",
        deserialize_with = "nullable"
    )]
    pub chart_home: String,
    /// `HELM_CONFIG_HOME` of the helm subprocess; kiln runs none, so it is not read.
    #[serde(
        skip_serializing_if = "String::is_empty",
        deserialize_with = "nullable"
    )]
    pub config_home: String,
}

/// One `helmCharts:` entry (kustomize's `types.HelmChart`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct HelmChart {
    #[serde(
        skip_serializing_if = "String::is_empty",
        deserialize_with = "nullable"
    )]
    pub name: String,
    #[serde(
        skip_serializing_if = "String::is_empty",
        deserialize_with = "nullable"
    )]
    pub version: String,
    #[serde(
        skip_serializing_if = "String::is_empty",
        deserialize_with = "nullable"
    )]
    pub repo: String,
    #[serde(
        skip_serializing_if = "String::is_empty",
        deserialize_with = "nullable"
    )]
    pub release_name: String,
    #[serde(
        skip_serializing_if = "String::is_empty",
        deserialize_with = "nullable"
    )]
    pub namespace: String,
    #[serde(skip_serializing_if = "Vec::is_empty", deserialize_with = "nullable")]
    pub additional_values_files: Vec<String>,
    #[serde(
        skip_serializing_if = "String::is_empty",
        deserialize_with = "nullable"
    )]
    pub values_file: String,
    #[serde(
        skip_serializing_if = "IndexMap::is_empty",
        deserialize_with = "nullable"
    )]
    pub values_inline: IndexMap<String, Value>,
    #[serde(
        skip_serializing_if = "String::is_empty",
        deserialize_with = "nullable"
    )]
    pub values_merge: String,
    #[serde(
        rename = "includeCRDs",
        skip_serializing_if = "is_false",
        deserialize_with = "nullable"
    )]
    pub include_crds: bool,
    #[serde(skip_serializing_if = "is_false", deserialize_with = "nullable")]
    pub skip_hooks: bool,
    #[serde(skip_serializing_if = "Vec::is_empty", deserialize_with = "nullable")]
    pub api_versions: Vec<String>,
    #[serde(
        skip_serializing_if = "String::is_empty",
        deserialize_with = "nullable"
    )]
    pub kube_version: String,
    #[serde(
        skip_serializing_if = "String::is_empty",
        deserialize_with = "nullable"
    )]
    pub name_template: String,
    #[serde(skip_serializing_if = "is_false", deserialize_with = "nullable")]
    pub skip_tests: bool,
    /// `--debug`: Helm's stack traces; kiln's errors carry the template's file and line.
    #[serde(skip_serializing_if = "is_false", deserialize_with = "nullable")]
    pub debug: bool,
}

/// One deprecated `helmChartInflationGenerator:` entry (kustomize's `types.HelmChartArgs`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct HelmChartArgs {
    #[serde(
        skip_serializing_if = "String::is_empty",
        deserialize_with = "nullable"
    )]
    pub chart_name: String,
    #[serde(
        skip_serializing_if = "String::is_empty",
        deserialize_with = "nullable"
    )]
    pub chart_version: String,
    #[serde(
        skip_serializing_if = "String::is_empty",
        deserialize_with = "nullable"
    )]
    pub chart_repo_url: String,
    #[serde(
        skip_serializing_if = "String::is_empty",
        deserialize_with = "nullable"
    )]
    pub chart_home: String,
    #[serde(
        skip_serializing_if = "String::is_empty",
        deserialize_with = "nullable"
    )]
    pub chart_repo_name: String,
    #[serde(
        skip_serializing_if = "String::is_empty",
        deserialize_with = "nullable"
    )]
    pub helm_bin: String,
    #[serde(
        skip_serializing_if = "String::is_empty",
        deserialize_with = "nullable"
    )]
    pub helm_home: String,
    #[serde(
        skip_serializing_if = "String::is_empty",
        deserialize_with = "nullable"
    )]
    pub values: String,
    #[serde(
        skip_serializing_if = "IndexMap::is_empty",
        deserialize_with = "nullable"
    )]
    pub values_local: IndexMap<String, Value>,
    #[serde(
        skip_serializing_if = "String::is_empty",
        deserialize_with = "nullable"
    )]
    pub values_merge: String,
    #[serde(
        skip_serializing_if = "String::is_empty",
        deserialize_with = "nullable"
    )]
    pub release_name: String,
    #[serde(
        skip_serializing_if = "String::is_empty",
        deserialize_with = "nullable"
    )]
    pub release_namespace: String,
    #[serde(skip_serializing_if = "Vec::is_empty", deserialize_with = "nullable")]
    pub extra_args: Vec<String>,
}

fn is_false(b: &bool) -> bool {
    !*b
}
