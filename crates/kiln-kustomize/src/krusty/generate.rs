//! The generator phase of one kustomization (kustomize
//! `api/internal/target/kusttarget_configplugin.go`): `configMapGenerator`,
//! `secretGenerator`, then `helmCharts` (kustomize's builtin generator order), each entry
//! merged with `generatorOptions` and its output absorbed into the accumulator with its
//! `behavior` (`create`, `merge`, `replace`), as kustomize's `ResMap.AbsorbAll` does.
//!
//! The loader-bound half of the HelmChartInflationGenerator lives here, beside the loader
//! and the accumulator it needs (kustomize `api/internal/builtins/HelmChartInflationGenerator.go`
//! `validateArgs`, `absChartHome`, `Generate`); the chart fields are `types::helmchartargs`
//! and the values merging `builtins::helm_chart_inflation_generator`.
//!
//! Where it sits: step 3 of `build::accumulate_target`, after resources, before components.
//! Files and env files named by an entry are read through the loader, so the load
//! restrictions hold for them too; errors name the entry's line.

use crate::builtins::generators;
use crate::builtins::helm_chart_inflation_generator::{self as helm, HelmChart, HelmGlobals};
use crate::error::KustomizeError;
use crate::krusty::build::{Accumulator, annotate_origin};
use crate::krusty::load::{
    KustFile, LoadIssue, LoadRestrictor, Loader, is_remote, parse_resources,
};
use crate::types::helmchartargs::ChartSource;
use kiln_base::fs::normalize;
use kiln_base::resource::Resource;
use kiln_helm::template::value::Map;
use serde_json::Value;
use std::path::{Path, PathBuf};

fn issue_text(ldr: &Loader<'_>, issue: &LoadIssue) -> String {
    match issue {
        LoadIssue::Missing => "no such file".into(),
        LoadIssue::OutsideRoot => "outside the kustomization root".into(),
        LoadIssue::SymlinkEscapes { target } => format!(
            "a symlink to `{}`, outside the kustomization root",
            target.display()
        ),
        LoadIssue::Cycle { .. } | LoadIssue::RepoCycle { .. } => "a directory cycle".into(),
        LoadIssue::Dangling { link, target } => format!(
            "`{}` is a symbolic link to `{}`, which does not exist",
            ldr.display(link),
            target.display()
        ),
        LoadIssue::TooDeep => "nested too deep".into(),
        LoadIssue::Io(e) => e.to_string(),
        LoadIssue::OutsideRepo { repo } => format!("outside the fetched repository `{repo}`"),
        LoadIssue::NotFetched => "a remote target that was not fetched".into(),
        LoadIssue::RemoteNotDir { reason } => reason.clone(),
    }
}

/// Runs the generators of `kf`, absorbing their output into `acc`.
pub fn run_generators(
    ldr: &Loader<'_>,
    kf: &KustFile,
    acc: &mut Accumulator,
) -> Result<(), KustomizeError> {
    let k = &kf.kustomization;
    // kustomize configures every builtin generator before running one
    // (`kusttarget_configplugin.go` `configureBuiltinGenerators`), and the
    // HelmChartInflationGenerator's `Config` refuses first of all a build without
    // `--enable-helm`: that error comes before any generator's own.
    let (charts, _) = helm::charts_of(k);
    if let Some((pointer, _)) = charts.first()
        && !ldr.session().options.enable_helm
    {
        return Err(KustomizeError::invalid(
            kf.site(pointer),
            "trouble configuring builtin HelmChartInflationGenerator: must specify --enable-helm",
            "pass `--enable-helm` to render `helmCharts` (kiln renders them itself; no helm binary is needed), as `kubectl kustomize` requires",
        ));
    }
    let global = k.generator_options.as_ref();
    let read = |path: &str| -> Result<Vec<u8>, String> {
        let file = ldr.resolve_file(path).map_err(|i| issue_text(ldr, &i))?;
        ldr.fs().read(&file).map_err(|e| e.to_string())
    };
    for (i, g) in k.config_map_generator.iter().enumerate() {
        // Located only on error (see `build::Accumulator::append_indexed`).
        let site = || kf.site(&format!("/configMapGenerator/{i}"));
        let mut res = generators::generate_config_map(g, global, &read)
            .map_err(|e| KustomizeError::transformer(site(), &e))?;
        res.meta.generated_in = Some((kf.display.clone(), "ConfigMapGenerator"));
        annotate_origin(ldr.session(), &mut res);
        generators::absorb_one(&mut acc.resources, res)
            .map_err(|e| KustomizeError::transformer(site(), &e))?;
    }
    for (i, g) in k.secret_generator.iter().enumerate() {
        // Located only on error (see `build::Accumulator::append_indexed`).
        let site = || kf.site(&format!("/secretGenerator/{i}"));
        let mut res = generators::generate_secret(g, global, &read)
            .map_err(|e| KustomizeError::transformer(site(), &e))?;
        res.meta.generated_in = Some((kf.display.clone(), "SecretGenerator"));
        annotate_origin(ldr.session(), &mut res);
        generators::absorb_one(&mut acc.resources, res)
            .map_err(|e| KustomizeError::transformer(site(), &e))?;
    }
    run_helm_charts(ldr, kf, acc)
}

/// `now` of kiln's Helm engine (2000-01-01T00:00:00Z) as Unix seconds: the `<chart>-<time>`
/// name Helm's `--generate-name` makes, taken at kiln's fixed clock.
const GENERATE_NAME_TIME: i64 = 946_684_800;

/// Runs every chart of `kf` and absorbs its objects into `acc`, in order.
pub fn run_helm_charts(
    ldr: &Loader<'_>,
    kf: &KustFile,
    acc: &mut Accumulator,
) -> Result<(), KustomizeError> {
    let (charts, globals) = helm::charts_of(&kf.kustomization);
    for (pointer, chart) in &charts {
        let resources = inflate(ldr, kf, pointer, chart, &globals)?;
        for mut r in resources {
            // `buildMetadata: [originAnnotations]`: the generator's origin
            // (`kusttarget_configplugin.go` `configureBuiltinGenerators`).
            r.meta.generated_in = Some((kf.display.clone(), "HelmChartInflationGenerator"));
            annotate_origin(ldr.session(), &mut r);
            generators::absorb_one(&mut acc.resources, r)
                .map_err(|e| KustomizeError::transformer(kf.site(pointer), &e))?;
        }
    }
    Ok(())
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
        helm::DEFAULT_CHART_HOME
    } else {
        globals.chart_home.as_str()
    };
    let mut abs_home = normalize(&ldr.root().join(home));
    if !chart.version.is_empty() && !chart.repo.is_empty() {
        abs_home = abs_home.join(format!("{}-{}", chart.name, chart.version));
    }
    let lexical = normalize(&abs_home.join(&chart.name));
    let fs = ldr.fs();
    // kustomize pulls only when `<chartHome>[/<name>-<version>]/<name>` is missing
    // (`Generate`: `if _, err := os.Stat(p.absChartHome()...)`); kiln's caller has pulled
    // it already (`BuildOptions::pulled_charts`), the engine does no network I/O.
    let source = ChartSource {
        repo: chart.repo.clone(),
        name: chart.name.clone(),
        version: chart.version.clone(),
    };
    let pulled_charts = &ldr.session().options.pulled_charts;
    let (dir, pulled) = match fs.canonicalize(&lexical) {
        Ok(real) if fs.is_dir(&real) => (real, false),
        _ if !chart.repo.is_empty() && pulled_charts.charts.contains_key(&source) => {
            (pulled_charts.charts[&source].clone(), true)
        }
        _ if !chart.repo.is_empty() => {
            return Err(KustomizeError::unsupported(
                kf.site(&field("repo")),
                format!("{}.repo", kiln_base::pointer::field_path(pointer)),
                format!(
                    "no chart was pulled for it, and `{}` holds no vendored copy",
                    ldr.display(&lexical)
                ),
                format!(
                    "`kiln render` pulls it through kiln.lock; `kiln kustomize`, like `kubectl kustomize` without `--enable-helm`, pulls nothing: vendor the chart into the repository (`helm pull {} --repo {} --version {} --untar --untardir {}`), or point `name`/`chartHome` at a chart directory and remove `repo`",
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
    if ldr.restrictor() == LoadRestrictor::RootOnly && !pulled {
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
    // The chart is read inside its own directory only, as the `helm` generator's charts are
    // (issue 39, item 1): a link in a vendored chart to `../../.git/config`, or anywhere else
    // outside the chart, is refused, and nothing under a `.git` directory is read (Helm's
    // loader refuses links that leave the chart, `internal/sympath/walk.go`).
    // Pulled dependencies are read the same way, each inside its own directory.
    let deps = pulled_charts.dependencies_of(&dir);
    let confined = kiln_base::fs::RootedFs::named(fs, dir.clone(), "the chart directory")
        .with_trees(deps.iter().cloned());
    let fs: &dyn kiln_base::fs::FileSystem = &confined;
    let mut loaded = kiln_helm::load_chart(fs, &dir).map_err(|e| {
        helm_failed(&kiln_helm::HelmError::Load {
            file: ldr.display(&PathBuf::from(&e.file)),
            line: e.line,
            message: e.message,
        })
    })?;
    kiln_helm::add_dependencies(fs, &mut loaded, deps).map_err(|e| helm_failed(&e))?;
    // A pulled chart's `version` may be a constraint (`helm pull --version` takes one).
    if !pulled && !chart.version.is_empty() && chart.version != loaded.version {
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

    let user = if pulled {
        user_values(ldr, kf, pointer, chart, &dir, Some(fs))?
    } else {
        user_values(ldr, kf, pointer, chart, &lexical, None)?
    };

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
    pulled: Option<&dyn kiln_base::fs::FileSystem>,
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
                format!(
                    "could not load {what} `{path}`: {}",
                    issue_text(ldr, &issue)
                ),
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
    let (shown, text) = match pulled {
        // A pulled chart lies outside the kustomization root: its own values.yaml is read
        // inside the chart (through the chart's confined file system), not by the loader;
        // a chart without one has no defaults.
        Some(fs) if chart.values_file.is_empty() => (
            format!("{}/values.yaml", chart.name),
            fs.read(&chart_dir.join("values.yaml"))
                .map(|b| String::from_utf8_lossy(&b).into_owned())
                .unwrap_or_default(),
        ),
        _ => read(&values_path, &values_at, "valuesFile")?,
    };
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
        helm::merge_helm_file(&user, &text).map_err(bad_values)?;
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
            helm::merge2(Some(src), Some(dest), "").map_err(|m| {
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
        helm::merge_helm_file(&user, &text).map_err(|message| {
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
