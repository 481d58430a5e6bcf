//! The kustomization's Helm fields (kustomize `api/types/helmchartargs.go`): `helmGlobals`
//! ([`HelmGlobals`]), `helmCharts` ([`HelmChart`]) and the deprecated
//! `helmChartInflationGenerator` ([`HelmChartArgs`]). Inflating a chart is
//! `builtins::helm_chart_inflation_generator` and `krusty::generate`.

use super::kustomization::nullable_fields;
use indexmap::IndexMap;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// kustomize's `types.HelmDefaultHome`.
pub const DEFAULT_CHART_HOME: &str = "charts";

/// A chart to pull from a repository, in kustomize's terms (`helmCharts[].repo`, `name`,
/// `version`): what `helm pull` is given by kustomize's `pullCommand`
/// (`api/internal/builtins/HelmChartInflationGenerator.go`): `--repo <repo> <name>` for a
/// Helm HTTP repository, `<repo>/<name>` for an `oci://` one, `--version <version>`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ChartSource {
    pub repo: String,
    pub name: String,
    pub version: String,
}

impl ChartSource {
    /// Whether `repo` is an OCI registry (`oci://`).
    pub fn is_oci(&self) -> bool {
        self.repo.starts_with("oci://")
    }

    /// The OCI reference `helm pull` is given: `<repo>/<name>`.
    pub fn oci_reference(&self) -> String {
        format!("{}/{}", self.repo.trim_end_matches('/'), self.name)
    }
}

/// Charts already pulled: the engine never pulls (it does no network I/O); its caller
/// fetches what a build names and hands the chart directories in
/// ([`crate::BuildOptions::pulled_charts`]), as `helm pull --untar` would have left them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PulledCharts {
    /// Each chart's directory, by source.
    pub charts: std::collections::BTreeMap<ChartSource, std::path::PathBuf>,
    /// For a chart directory (canonical), the directories of the dependencies its
    /// `Chart.yaml` lists and `charts/` lacks, pulled as `helm dependency build` would.
    pub dependencies: std::collections::BTreeMap<std::path::PathBuf, Vec<std::path::PathBuf>>,
}

impl PulledCharts {
    /// The pulled dependencies of the chart in `dir` (none when it has none).
    pub fn dependencies_of(&self, dir: &std::path::Path) -> &[std::path::PathBuf] {
        self.dependencies.get(dir).map_or(&[], Vec::as_slice)
    }
}

nullable_fields! {
    /// `helmGlobals:` (kustomize's `types.HelmGlobals`).
    #[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
    #[serde(rename_all = "camelCase", deny_unknown_fields, default)]
    pub struct HelmGlobals {
        /// Directory holding one subdirectory per chart, relative to the kustomization root.
        #[nullable]
        #[serde(skip_serializing_if = "String::is_empty")]
        pub chart_home: String,
        /// `HELM_CONFIG_HOME` of the helm subprocess; kiln runs none, so it is not read.
        #[nullable]
        #[serde(skip_serializing_if = "String::is_empty")]
        pub config_home: String,
    }
}

nullable_fields! {
    /// One `helmCharts:` entry (kustomize's `types.HelmChart`).
    #[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
    #[serde(rename_all = "camelCase", deny_unknown_fields, default)]
    pub struct HelmChart {
        #[nullable]
        #[serde(skip_serializing_if = "String::is_empty")]
        pub name: String,
        #[nullable]
        #[serde(skip_serializing_if = "String::is_empty")]
        pub version: String,
        #[nullable]
        #[serde(skip_serializing_if = "String::is_empty")]
        pub repo: String,
        #[nullable]
        #[serde(skip_serializing_if = "String::is_empty")]
        pub release_name: String,
        #[nullable]
        #[serde(skip_serializing_if = "String::is_empty")]
        pub namespace: String,
        #[nullable]
        #[serde(skip_serializing_if = "Vec::is_empty")]
        pub additional_values_files: Vec<String>,
        #[nullable]
        #[serde(skip_serializing_if = "String::is_empty")]
        pub values_file: String,
        #[nullable]
        #[serde(skip_serializing_if = "IndexMap::is_empty")]
        pub values_inline: IndexMap<String, Value>,
        #[nullable]
        #[serde(skip_serializing_if = "String::is_empty")]
        pub values_merge: String,
        #[nullable]
        #[serde(rename = "includeCRDs", skip_serializing_if = "is_false")]
        pub include_crds: bool,
        #[nullable]
        #[serde(skip_serializing_if = "is_false")]
        pub skip_hooks: bool,
        #[nullable]
        #[serde(skip_serializing_if = "Vec::is_empty")]
        pub api_versions: Vec<String>,
        #[nullable]
        #[serde(skip_serializing_if = "String::is_empty")]
        pub kube_version: String,
        #[nullable]
        #[serde(skip_serializing_if = "String::is_empty")]
        pub name_template: String,
        #[nullable]
        #[serde(skip_serializing_if = "is_false")]
        pub skip_tests: bool,
        /// `--debug`: Helm's stack traces; kiln's errors carry the template's file and line.
        #[nullable]
        #[serde(skip_serializing_if = "is_false")]
        pub debug: bool,
    }
}

nullable_fields! {
    /// One deprecated `helmChartInflationGenerator:` entry (kustomize's `types.HelmChartArgs`).
    #[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
    #[serde(rename_all = "camelCase", deny_unknown_fields, default)]
    pub struct HelmChartArgs {
        #[nullable]
        #[serde(skip_serializing_if = "String::is_empty")]
        pub chart_name: String,
        #[nullable]
        #[serde(skip_serializing_if = "String::is_empty")]
        pub chart_version: String,
        #[nullable]
        #[serde(skip_serializing_if = "String::is_empty")]
        pub chart_repo_url: String,
        #[nullable]
        #[serde(skip_serializing_if = "String::is_empty")]
        pub chart_home: String,
        #[nullable]
        #[serde(skip_serializing_if = "String::is_empty")]
        pub chart_repo_name: String,
        #[nullable]
        #[serde(skip_serializing_if = "String::is_empty")]
        pub helm_bin: String,
        #[nullable]
        #[serde(skip_serializing_if = "String::is_empty")]
        pub helm_home: String,
        #[nullable]
        #[serde(skip_serializing_if = "String::is_empty")]
        pub values: String,
        #[nullable]
        #[serde(skip_serializing_if = "IndexMap::is_empty")]
        pub values_local: IndexMap<String, Value>,
        #[nullable]
        #[serde(skip_serializing_if = "String::is_empty")]
        pub values_merge: String,
        #[nullable]
        #[serde(skip_serializing_if = "String::is_empty")]
        pub release_name: String,
        #[nullable]
        #[serde(skip_serializing_if = "String::is_empty")]
        pub release_namespace: String,
        #[nullable]
        #[serde(skip_serializing_if = "Vec::is_empty")]
        pub extra_args: Vec<String>,
    }
}

fn is_false(b: &bool) -> bool {
    !*b
}
