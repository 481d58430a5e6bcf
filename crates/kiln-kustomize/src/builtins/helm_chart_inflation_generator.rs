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
//! This module holds what needs no loader: [`charts_of`] and the values merging; the
//! loader-bound half (`validateArgs`, `absChartHome`, reading the values files, rendering and
//! absorbing the output) is `krusty::generate`, which owns the loader and the accumulator.
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

pub use crate::types::helmchartargs::{DEFAULT_CHART_HOME, HelmChart, HelmChartArgs, HelmGlobals};
use crate::types::kustomization::Kustomization;
use kiln_helm::template::value::{Map, Value as HelmValue};
use serde_json::Value;

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

/// One `-f` file as Helm reads it, merged over `user` (Helm's `mergeMaps`).
pub fn merge_helm_file(user: &Map, text: &str) -> Result<(), String> {
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
pub fn merge2(
    src: Option<&Value>,
    dest: Option<&Value>,
    path: &str,
) -> Result<Option<Value>, String> {
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
