//! `helmCharts:` — kustomize's HelmChartInflationGenerator, with kiln's native Helm engine
//! (`kiln_helm`) in place of a `helm template` subprocess: no `--enable-helm`, no helm
//! binary, no network.
//!
//! Implemented from kustomize v5.5.0:
//! - `api/types/helmchartargs.go`: the fields of `HelmGlobals`, `HelmChart` and the deprecated
//!   `HelmChartArgs` (`helmChartInflationGenerator:`), `SplitHelmParameters` (which turns the
//!   latter into the former, dropping `releaseNamespace` and `extraArgs` as kustomize does)
//!   and `AsHelmArgs` (which flags reach Helm);
//! - `api/internal/builtins/HelmChartInflationGenerator.go`: `validateArgs` (chart home
//!   `charts`, values file `<chartHome>/<name>/values.yaml`, values files read through the
//!   loader so the load restrictor holds), `absChartHome` (`<name>-<version>` below the home
//!   when both `version` and `repo` are set), `createNewMergedValuesFile` (`valuesInline`
//!   merged into the values file by `valuesMerge`: `override`, `merge` or `replace`) and
//!   `Generate` (the output parsed into resources);
//! - `api/internal/target/kusttarget_configplugin.go`: the generator runs after
//!   `configMapGenerator` and `secretGenerator`, its resources absorbed like theirs
//!   (step 3 of `build::accumulate_target`), so they sit after the `resources` in
//!   accumulation order and go through every transformer of the kustomization.
//!
//! The Helm flags kustomize passes become [`kiln_helm::TemplateOptions`]: the merged values
//! file is the first `-f`, each `additionalValuesFiles` entry a further `-f` (so those win
//! over `valuesInline`), then `--namespace`, `--api-versions`, `--kube-version`,
//! `--include-crds`, `--skip-tests`, `--no-hooks`.
//!
//! Where kiln differs (tests/helm/DIVERGENCES.md, "helmCharts"): a chart that is not vendored is an
//! error naming `repo` (kiln never pulls); `version`, when given, must equal the vendored
//! Chart.yaml's; without `releaseName` the generated name uses kiln's fixed clock; a
//! `nameTemplate` is rendered with seeded random functions; the chart directory obeys the
//! load restrictor.

use crate::builtins::generators;
use crate::error::KustomizeError;
use crate::krusty::build::Accumulator;
use crate::krusty::load::{
    KustFile, LoadIssue, LoadRestrictor, Loader, is_remote, parse_resources,
};
use crate::types::kustomization::{Kustomization, nullable};
use indexmap::IndexMap;
use kiln_base::fs::normalize;
use kiln_base::resource::Resource;
use kiln_helm::template::value::{Map, Value as HelmValue};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// kustomize's `types.HelmDefaultHome`.
pub const DEFAULT_CHART_HOME: &str = "charts";

/// `now` of kiln's Helm engine (2000-01-01T00:00:00Z) as Unix seconds: the `<chart>-<time>`
/// name Helm's `--generate-name` makes, taken at kiln's fixed clock.
const GENERATE_NAME_TIME: i64 = 946_684_800;

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

/// The charts of a kustomization with the JSON pointer of their entry, and the globals:
/// `helmCharts`, then the converted `helmChartInflationGenerator` entries (kustomize's
/// `FixKustomization` + `SplitHelmParameters`: the last non-empty `chartHome`/`helmHome`
/// wins, and only when `helmGlobals` is absent).
pub fn charts_of(k: &Kustomization) -> (Vec<(String, HelmChart)>, HelmGlobals) {
    let mut charts: Vec<(String, HelmChart)> = k
        .helm_charts
        .iter()
        .enumerate()
        .map(|(i, c)| (format!("/helmCharts/{i}"), c.clone()))
        .collect();
    let mut legacy = HelmGlobals::default();
    for (i, old) in k.helm_chart_inflation_generator.iter().enumerate() {
        charts.push((
            format!("/helmChartInflationGenerator/{i}"),
            HelmChart {
                name: old.chart_name.clone(),
                version: old.chart_version.clone(),
                repo: old.chart_repo_url.clone(),
                values_file: old.values.clone(),
                values_inline: old.values_local.clone(),
                values_merge: old.values_merge.clone(),
                release_name: old.release_name.clone(),
                ..HelmChart::default()
            },
        ));
        if !old.helm_home.is_empty() {
            legacy.config_home = old.helm_home.clone();
        }
        if !old.chart_home.is_empty() {
            legacy.chart_home = old.chart_home.clone();
        }
    }
    let globals = k.helm_globals.clone().unwrap_or(legacy);
    (charts, globals)
}

/// Runs every chart of `kf` and absorbs its objects into `acc`, in order.
pub fn run_helm_charts(
    ldr: &Loader<'_>,
    kf: &KustFile,
    acc: &mut Accumulator,
) -> Result<(), KustomizeError> {
    let (charts, globals) = charts_of(&kf.kustomization);
    for (pointer, chart) in &charts {
        let resources = inflate(ldr, kf, pointer, chart, &globals)?;
        for mut r in resources {
            // `buildMetadata: [originAnnotations]`: the generator's origin
            // (`kusttarget_configplugin.go` `configureBuiltinGenerators`).
            r.meta.generated_in = Some((kf.display.clone(), "HelmChartInflationGenerator"));
            crate::krusty::build::annotate_origin(ldr.session(), &mut r);
            generators::absorb_one(&mut acc.resources, r)
                .map_err(|e| KustomizeError::transformer(kf.site(pointer), &e))?;
        }
    }
    Ok(())
}

fn issue_text(issue: &LoadIssue) -> String {
    match issue {
        LoadIssue::Missing => "no such file".into(),
        LoadIssue::OutsideRoot => "outside the kustomization root".into(),
        LoadIssue::SymlinkEscapes { target } => format!(
            "a symlink to `{}`, outside the kustomization root",
            target.display()
        ),
        LoadIssue::Cycle { .. } => "a directory cycle".into(),
        LoadIssue::Io(e) => e.to_string(),
    }
}

/// Renders one chart entry into resources (kustomize's `Config` + `Generate`).
fn inflate(
    ldr: &Loader<'_>,
    kf: &KustFile,
    pointer: &str,
    chart: &HelmChart,
    globals: &HelmGlobals,
) -> Result<Vec<Resource>, KustomizeError> {
    let field = |f: &str| format!("{pointer}/{f}");
    if chart.name.is_empty() {
        return Err(KustomizeError::invalid(
            kf.site(pointer),
            "chart name cannot be empty",
            "set `name` to the chart's directory name under `chartHome` (default `charts`)",
        ));
    }
    if !matches!(
        chart.values_merge.as_str(),
        "" | "merge" | "override" | "replace"
    ) {
        return Err(KustomizeError::invalid(
            kf.site(&field("valuesMerge")),
            "valuesMerge must be one of [merge override replace]",
            "`override` (the default): valuesInline wins; `merge`: the values file wins; `replace`: valuesInline alone",
        ));
    }
    if !chart.name_template.is_empty() && !chart.release_name.is_empty() {
        return Err(KustomizeError::invalid(
            kf.site(&field("nameTemplate")),
            "cannot set --name-template and also specify a name",
            "set `releaseName` or `nameTemplate`, not both (Helm refuses both)",
        ));
    }
    // absChartHome: relative homes are below the kustomization root.
    let home = if globals.chart_home.is_empty() {
        DEFAULT_CHART_HOME
    } else {
        globals.chart_home.as_str()
    };
    let mut abs_home = normalize(&ldr.root().join(home));
    if !chart.version.is_empty() && !chart.repo.is_empty() {
        abs_home = abs_home.join(format!("{}-{}", chart.name, chart.version));
    }
    let lexical = normalize(&abs_home.join(&chart.name));
    let fs = ldr.fs();
    let dir = match fs.canonicalize(&lexical) {
        Ok(real) if fs.is_dir(&real) => real,
        _ if !chart.repo.is_empty() => {
            return Err(KustomizeError::unsupported(
                kf.site(&field("repo")),
                format!("{}.repo", crate::error::pointer_to_field(pointer)),
                format!(
                    "kiln does not pull remote charts, and `{}` holds no vendored copy",
                    ldr.display(&lexical)
                ),
                format!(
                    "vendor the chart into the repository (`helm pull {} --repo {} --version {} --untar --untardir {}`), or point `name`/`chartHome` at a chart directory and remove `repo`",
                    chart.name,
                    chart.repo,
                    if chart.version.is_empty() {
                        "<version>"
                    } else {
                        chart.version.as_str()
                    },
                    ldr.display(&abs_home)
                ),
            ));
        }
        _ => {
            return Err(KustomizeError::invalid(
                kf.site(&field("name")),
                format!(
                    "no repo specified for pull, no chart found at '{}'",
                    ldr.display(&lexical)
                ),
                "vendor the chart under `<chartHome>/<name>/` (chartHome defaults to `charts`, beside kustomization.yaml)",
            ));
        }
    };
    if ldr.restrictor() == LoadRestrictor::RootOnly {
        if !lexical.starts_with(ldr.root()) {
            return Err(KustomizeError::outside_root(
                kf.site(&field("name")),
                ldr.display(&lexical),
                ldr.display(ldr.root()),
            ));
        }
        if !dir.starts_with(ldr.root()) {
            return Err(KustomizeError::symlink_escapes(
                kf.site(&field("name")),
                ldr.display(&lexical),
                dir.display().to_string(),
                ldr.display(ldr.root()),
            ));
        }
    }
    let helm_failed = |e: &kiln_helm::HelmError| KustomizeError::transformer(kf.site(pointer), e);
    let loaded = kiln_helm::load_chart(fs, &dir).map_err(|e| {
        helm_failed(&kiln_helm::HelmError::Load {
            file: ldr.display(&PathBuf::from(&e.file)),
            line: e.line,
            message: e.message,
        })
    })?;
    if !chart.version.is_empty() && chart.version != loaded.version {
        return Err(KustomizeError::invalid(
            kf.site(&field("version")),
            format!(
                "chart `{}` at `{}` is version {}, not {}",
                chart.name,
                ldr.display(&lexical),
                loaded.version,
                chart.version
            ),
            "vendor the version named here, or change `version` to the vendored chart's",
        ));
    }

    let user = user_values(ldr, kf, pointer, chart, &lexical)?;

    let release = if !chart.release_name.is_empty() {
        chart.release_name.clone()
    } else if !chart.name_template.is_empty() {
        kiln_helm::name_template(&chart.name_template).map_err(|e| {
            KustomizeError::transformer(kf.site(&format!("{pointer}/nameTemplate")), &e)
        })?
    } else {
        // `--generate-name`: the chart path's base name up to its first dot, then the time.
        let base = Path::new(&chart.name)
            .file_name()
            .map(|b| b.to_string_lossy().into_owned())
            .unwrap_or_else(|| "chart".into());
        let base = base.split('.').next().unwrap_or("chart").to_string();
        format!("{base}-{GENERATE_NAME_TIME}")
    };
    let mut opts = kiln_helm::TemplateOptions::new(&dir, &release);
    if !chart.namespace.is_empty() {
        opts.namespace = chart.namespace.clone();
    }
    opts.include_crds = chart.include_crds;
    opts.skip_hooks = chart.skip_hooks;
    opts.skip_tests = chart.skip_tests;
    opts.api_versions = chart.api_versions.clone();
    if !chart.kube_version.is_empty() {
        opts.kube_version = Some(chart.kube_version.clone());
    }
    let rendered = kiln_helm::render_chart(fs, loaded, &user, &opts).map_err(|e| match e {
        kiln_helm::HelmError::KubeVersion { .. } if !chart.kube_version.is_empty() => {
            KustomizeError::transformer(kf.site(&field("kubeVersion")), &e)
        }
        e => helm_failed(&e),
    })?;
    let display = format!("{} (helm template)", ldr.display(&lexical));
    parse_resources(&display, &rendered.stream)
}

/// The user values kustomize hands Helm: the values file (the chart's own values.yaml by
/// default) with `valuesInline` merged in by `valuesMerge`, then each additional file.
fn user_values(
    ldr: &Loader<'_>,
    kf: &KustFile,
    pointer: &str,
    chart: &HelmChart,
    chart_dir: &Path,
) -> Result<Map, KustomizeError> {
    let field = |f: &str| format!("{pointer}/{f}");
    let read = |path: &str, at: &str, what: &str| -> Result<(String, String), KustomizeError> {
        if is_remote(path) {
            return Err(KustomizeError::unsupported(
                kf.site(at),
                what.to_string(),
                format!("remote values file `{path}`"),
                "vendor the values file into the repository and name it by path",
            ));
        }
        let (file, text) = ldr.read_file(path).map_err(|issue| {
            KustomizeError::invalid(
                kf.site(at),
                format!("could not load {what} `{path}`: {}", issue_text(&issue)),
                "values files are read relative to the kustomization root, inside it",
            )
        })?;
        Ok((ldr.display(&file), text))
    };
    let (values_at, values_path) = if chart.values_file.is_empty() {
        let default = chart_dir.join("values.yaml");
        (pointer.to_string(), default.to_string_lossy().into_owned())
    } else {
        (field("valuesFile"), chart.values_file.clone())
    };
    let (shown, text) = read(&values_path, &values_at, "valuesFile")?;
    let bad_values = |message: String| {
        KustomizeError::transformer(
            kf.site(&values_at),
            &kiln_helm::HelmError::Values {
                file: shown.clone(),
                message,
            },
        )
    };
    let user = kiln_helm::chartutil::empty();
    if chart.values_inline.is_empty() {
        // Handed to Helm verbatim, so Helm's YAML reading applies.
        merge_helm_file(&user, &text).map_err(bad_values)?;
    } else {
        let inline = Value::Object(
            chart
                .values_inline
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        );
        let merged = if chart.values_merge == "replace" {
            inline
        } else {
            // kyaml reads the file, merge2 merges, and the result is written out again.
            let file =
                kiln_base::yaml::parse_one(&shown, &text).map_err(|e| bad_values(e.to_string()))?;
            let file = match file {
                Value::Null => Value::Object(Default::default()),
                v @ Value::Object(_) => v,
                _ => return Err(bad_values("not a YAML mapping".into())),
            };
            let (src, dest) = if chart.values_merge == "merge" {
                (&file, &inline)
            } else {
                (&inline, &file)
            };
            merge2(Some(src), Some(dest), "").map_err(|m| {
                KustomizeError::invalid(
                    kf.site(&field("valuesInline")),
                    format!("could not merge values: {m}"),
                    "a key of valuesInline must have the same type (map, list or scalar) as in the values file",
                )
            })?
            .unwrap_or(Value::Object(Default::default()))
        };
        kiln_helm::chart::loader::merge_user(&user, &kiln_helm::chartutil::from_json_map(&merged));
    }
    for (i, f) in chart.additional_values_files.iter().enumerate() {
        let at = field(&format!("additionalValuesFiles/{i}"));
        let (shown, text) = read(f, &at, "additionalValuesFile")?;
        merge_helm_file(&user, &text).map_err(|message| {
            KustomizeError::transformer(
                kf.site(&at),
                &kiln_helm::HelmError::Values {
                    file: shown.clone(),
                    message,
                },
            )
        })?;
    }
    Ok(user)
}

/// One `-f` file as Helm reads it, merged over `user` (Helm's `mergeMaps`).
fn merge_helm_file(user: &Map, text: &str) -> Result<(), String> {
    match kiln_helm::yaml::parse_one(text) {
        Ok(HelmValue::Map(m)) => {
            kiln_helm::chart::loader::merge_user(user, &m);
            Ok(())
        }
        Ok(HelmValue::Nil) => Ok(()),
        Ok(_) => Err("not a YAML mapping".into()),
        Err(e) => Err(e.to_string()),
    }
}

/// kyaml's `merge2.Merge(src, dest)` on values, which have no schema: maps merge key by key,
/// lists and scalars from `src` replace `dest`'s, a `null` (or a key null on both sides)
/// removes the key, and a map meeting a scalar or list is an error (`walk.Walker`).
/// `None` means "no value" (the key is dropped).
fn merge2(src: Option<&Value>, dest: Option<&Value>, path: &str) -> Result<Option<Value>, String> {
    let present = |v: Option<&Value>| v.filter(|v| !v.is_null()).cloned();
    let (s, d) = (present(src), present(dest));
    // The walker takes the kind of the first non-null source, dest first.
    let kind_of = |v: &Value| match v {
        Value::Object(_) => 0,
        Value::Array(_) => 1,
        _ => 2,
    };
    let Some(first) = d.as_ref().or(s.as_ref()) else {
        return Ok(None);
    };
    let kind = kind_of(first);
    for v in [&s, &d].into_iter().flatten() {
        if kind_of(v) != kind {
            let name = ["map", "list", "scalar"];
            return Err(format!(
                "`{}` is a {} on one side and a {} on the other",
                if path.is_empty() { "." } else { path },
                name[kind],
                name[kind_of(v)]
            ));
        }
    }
    if kind != 0 {
        // Lists (none is associative without a schema) and scalars: src wins, even a null.
        return Ok(match src {
            Some(v) if v.is_null() => None,
            Some(v) => Some(v.clone()),
            None => d,
        });
    }
    if src.is_some_and(Value::is_null) && d.is_some() {
        return Ok(None);
    }
    // The destination map is dest's, or src's when dest has none; its fields are walked
    // against src's (in sorted order, as kyaml's walker; the order does not reach Helm).
    let base = d.or_else(|| s.clone()).unwrap_or_default();
    let (Value::Object(bm), src_map) = (&base, s.as_ref().and_then(Value::as_object)) else {
        return Ok(None);
    };
    let mut keys: Vec<&String> = bm
        .keys()
        .chain(src_map.into_iter().flat_map(|m| m.keys()))
        .collect();
    keys.sort();
    keys.dedup();
    let mut out = serde_json::Map::new();
    for k in keys {
        let sub = format!("{path}.{k}");
        if let Some(v) = merge2(src_map.and_then(|m| m.get(k)), bm.get(k), &sub)? {
            out.insert(k.clone(), v);
        }
    }
    Ok(Some(Value::Object(out)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn m(src: Value, dest: Value) -> Value {
        merge2(Some(&src), Some(&dest), "").unwrap().unwrap()
    }

    #[test]
    fn merge2_merges_maps_replaces_lists_and_drops_nulls() {
        let dest = json!({"a": {"x": 1, "y": 2}, "l": [1, 2], "n": null, "keep": "k", "gone": 1});
        let src = json!({"a": {"y": 3, "z": {"deep": true}}, "l": [9], "gone": null});
        assert_eq!(
            m(src, dest),
            json!({"a": {"x": 1, "y": 3, "z": {"deep": true}}, "keep": "k", "l": [9]})
        );
        let err = merge2(Some(&json!({"a": 1})), Some(&json!({"a": {"b": 1}})), "").unwrap_err();
        assert!(err.contains("`.a` is a map"), "{err}");
    }

    #[test]
    fn legacy_generator_entries_become_charts() {
        let k: Kustomization = serde_json::from_value(json!({
            "helmChartInflationGenerator": [
                {"chartName": "a", "chartHome": "vendor", "releaseName": "r", "valuesLocal": {"x": 1}, "releaseNamespace": "ignored"},
                {"chartName": "b", "chartRepoUrl": "https://x", "chartVersion": "1.0.0"}
            ],
            "helmCharts": [{"name": "c", "includeCRDs": true}]
        }))
        .unwrap();
        let (charts, globals) = charts_of(&k);
        let names: Vec<(&str, &str)> = charts
            .iter()
            .map(|(p, c)| (p.as_str(), c.name.as_str()))
            .collect();
        assert_eq!(
            names,
            [
                ("/helmCharts/0", "c"),
                ("/helmChartInflationGenerator/0", "a"),
                ("/helmChartInflationGenerator/1", "b")
            ]
        );
        assert!(charts[0].1.include_crds);
        assert_eq!(charts[1].1.release_name, "r");
        assert_eq!(charts[1].1.values_inline["x"], json!(1));
        assert_eq!(charts[1].1.namespace, "");
        assert_eq!(charts[2].1.repo, "https://x");
        assert_eq!(globals.chart_home, "vendor");
    }
}
