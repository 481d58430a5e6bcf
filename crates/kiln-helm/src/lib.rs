//! A native Helm engine: renders charts as Helm v4.2.3's `helm template` does, without a
//! helm binary (see docs/helm.md and tests/helm/DIVERGENCES.md).
//!
//! Stages: [`load_chart`] ([`chart`]) → dependency processing and values ([`chartutil`]) →
//! schema validation → rendering ([`engine`]) → sorting and printing ([`releaseutil`]). The steps and
//! their order follow Helm's `pkg/action/install.go` (`RunWithContext`: `CheckDependencies`,
//! `ProcessDependenciesWithMerge`, `ToRenderValuesWithSchemaValidation`, `renderResources`).
//!
//! Determinism: `now` is 2000-01-01T00:00:00Z, and every random function draws from one
//! generator whose seed is the SHA-256 of the chart name and version, the release name and
//! namespace, and the user values as JSON. The same input gives the same bytes; a change
//! of any of these gives other random values, as a reinstall would.
//!
//! I/O: none of its own. Charts and values files are read through the
//! [`kiln_base::fs::FileSystem`] the caller passes ([`template_with`]): the CLI's real file
//! system for `kiln helm template`, the render's rooted view for `kiln render`, so a chart
//! (or a symbolic link in it) that leads out of the repository root is refused there.

// Unit tests build their trees on disk; the boundary (clippy.toml) holds for library code.
#![cfg_attr(test, allow(clippy::disallowed_methods))]

pub mod ahead;
pub mod chart;
pub mod chartutil;
pub mod engine;
pub mod releaseutil;
pub mod sprig;
pub mod template;
#[cfg(test)]
mod testutil;
pub mod yaml;

use miette::Diagnostic;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use template::value::{Map, Value};
use thiserror::Error;

/// Why a chart did not render.
#[derive(Debug, Error, Diagnostic)]
pub enum HelmError {
    #[error("cannot load chart `{file}`{}: {message}", line.map(|l| format!(" (line {l})")).unwrap_or_default())]
    #[diagnostic(
        code(kiln::helm::load),
        help("check the chart directory: Chart.yaml, values.yaml and charts/ must be valid")
    )]
    Load {
        file: String,
        line: Option<usize>,
        message: String,
    },
    #[error("cannot read values `{file}`: {message}")]
    #[diagnostic(
        code(kiln::helm::values),
        help(
            "values files must hold one YAML mapping; --set, --set-string, --set-json, --set-file and --set-literal take key=value[,key=value] as Helm's strvals reads them"
        )
    )]
    Values { file: String, message: String },
    #[error("{message}")]
    #[diagnostic(
        code(kiln::helm::release_name),
        help(
            "a release name is lower-case letters, digits, `-` and `.`, starts and ends with a letter or digit, and has at most 53 characters"
        )
    )]
    ReleaseName { message: String },
    #[error("{message}")]
    #[diagnostic(
        code(kiln::helm::dependency),
        help("vendor every dependency named in Chart.yaml under the chart's charts/ directory")
    )]
    Dependency { message: String },
    #[error("{message}")]
    #[diagnostic(
        code(kiln::helm::schema),
        help("the values do not satisfy the chart's values.schema.json")
    )]
    Schema { message: String },
    #[error("{message}")]
    #[diagnostic(
        code(kiln::helm::kube_version),
        help("set kubeVersion to a version the chart supports")
    )]
    KubeVersion { message: String },
    #[error("{message}")]
    #[diagnostic(
        code(kiln::helm::template_syntax),
        help("fix the template syntax at the named file and line")
    )]
    Syntax { file: String, message: String },
    #[error("{message}")]
    #[diagnostic(
        code(kiln::helm::unknown_function),
        help(
            "kiln implements Sprig and Helm's functions (docs/helm.md); this one is not among them"
        )
    )]
    UnknownFunction { file: String, message: String },
    #[error("{message}")]
    #[diagnostic(
        code(kiln::helm::fail),
        help("the chart refused these values (`fail` or `required`); set the value it names")
    )]
    Fail { file: String, message: String },
    #[error("{message}")]
    #[diagnostic(
        code(kiln::helm::exec),
        help("the template failed while running; the message names the file, line and column")
    )]
    Exec { file: String, message: String },
    #[error("{message}")]
    #[diagnostic(
        code(kiln::helm::manifest),
        help("the template rendered text that is not YAML")
    )]
    Manifest { file: String, message: String },
}

/// What to render and how (`helm template` flags).
#[derive(Debug, Clone)]
pub struct TemplateOptions {
    pub chart: PathBuf,
    pub release_name: String,
    pub namespace: String,
    pub value_files: Vec<PathBuf>,
    /// `--set`, `--set-string`, `--set-json`, `--set-file`, `--set-literal`.
    pub set: chartutil::strvals::SetFlags,
    /// Values given inline (the kiln spec's `values:`), applied after files, before `set`.
    pub values: Option<serde_json::Value>,
    pub include_crds: bool,
    pub kube_version: Option<String>,
    pub api_versions: Vec<String>,
    /// `--no-hooks`: hooks are not printed.
    pub skip_hooks: bool,
    /// `--skip-tests`: hooks for the `test` event are not printed.
    pub skip_tests: bool,
    /// The instant `now` returns, in seconds since the epoch (`--now`,
    /// `SOURCE_DATE_EPOCH`); `None` is kiln's fixed 2000-01-01T00:00:00Z.
    pub now: Option<i64>,
    /// The render's budget of template steps and output bytes (`--max-steps`,
    /// `--max-output-bytes`; docs/helm.md, "Budgets").
    pub budget: template::exec::Budget,
    /// Chart directories added as subcharts ([`add_dependencies`]): the dependencies the
    /// caller pulled for a chart whose `charts/` lacks them.
    pub dependencies: Vec<PathBuf>,
    /// Record which values the templates read and report the user's values none read
    /// ([`Rendered::unused_values`]); off for `helm template`, where nothing reads them.
    pub record_reads: bool,
}

impl TemplateOptions {
    pub fn new(chart: impl Into<PathBuf>, release_name: &str) -> TemplateOptions {
        TemplateOptions {
            chart: chart.into(),
            release_name: release_name.to_string(),
            namespace: "default".into(),
            value_files: Vec::new(),
            set: chartutil::strvals::SetFlags::default(),
            values: None,
            include_crds: false,
            kube_version: None,
            api_versions: Vec::new(),
            skip_hooks: false,
            skip_tests: false,
            now: None,
            budget: template::exec::Budget::DEFAULT,
            dependencies: Vec::new(),
            record_reads: false,
        }
    }
}

/// The rendered release: the stream `helm template` prints, and its documents.
pub struct Rendered {
    pub stream: String,
    /// CRDs, manifests and hooks, each `(source, text)`, in printed order.
    pub documents: Vec<(String, String)>,
    /// With [`TemplateOptions::record_reads`]: the user's values no template read.
    pub unused_values: Vec<UnusedValue>,
}

/// A value given to a chart (values files, inline values, `--set`) that no template read,
/// nor a dependency's `condition` or `tags`: the shallowest such path. A value read only
/// inside a branch the values disable is not read, so it is one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnusedValue {
    pub chart: String,
    /// The dotted path (`replicaCont`, `image.tg`).
    pub path: String,
    /// Its keys.
    pub keys: Vec<String>,
    /// The key read beside it closest to its own (`replicaCount`).
    pub suggestion: Option<String>,
}

impl std::fmt::Display for UnusedValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "value {} is not used by chart {}", self.path, self.chart)?;
        match &self.suggestion {
            Some(s) => write!(f, "; did you mean {s}?"),
            None => Ok(()),
        }
    }
}

/// The values paths Helm itself reads for `c`'s dependencies: each `condition` and `tags`
/// (`pkg/chart/v2/util/dependencies.go`), below `prefix`.
fn dependency_paths(c: &chart::Chart, prefix: &[String], out: &mut Vec<Vec<String>>) {
    for r in &c.deps {
        for cond in r
            .condition
            .split(',')
            .map(str::trim)
            .filter(|c| !c.is_empty())
        {
            let mut p = prefix.to_vec();
            p.extend(cond.split('.').map(str::to_string));
            out.push(p);
        }
        for tag in &r.tags {
            out.push(vec!["tags".to_string(), tag.clone()]);
        }
    }
    for sub in &c.subcharts {
        let mut p = prefix.to_vec();
        p.push(sub.name.clone());
        dependency_paths(sub, &p, out);
    }
}

fn load_error(e: chart::LoadError) -> HelmError {
    HelmError::Load {
        file: e.file,
        line: e.line,
        message: e.message,
    }
}

/// Reads user values: files (deep-merged), then inline values, then the `--set…` flags.
fn user_values(
    fs: &dyn kiln_base::fs::FileSystem,
    opts: &TemplateOptions,
) -> Result<Map, HelmError> {
    let user = template::value::new_map();
    for f in &opts.value_files {
        let shown = f.display().to_string();
        let text = fs.read_to_string(f).map_err(|e| HelmError::Values {
            file: shown.clone(),
            message: e.to_string(),
        })?;
        // Every document of the file, merged (`loader.LoadValues`, as `-f` reads them).
        let m = chart::loader::load_values(&text).map_err(|e| HelmError::Values {
            file: shown,
            message: e.to_string(),
        })?;
        chart::loader::merge_user(&user, &m);
    }
    if let Some(v) = &opts.values {
        chart::loader::merge_user(&user, &chartutil::from_json_map(v));
    }
    // `--set-file` paths are read as `-f` files are: through `fs`, inside its root rules.
    let read = |p: &str| fs.read_to_string(Path::new(p)).map_err(|e| e.to_string());
    chartutil::strvals::apply_set_flags(&user, &opts.set, &read).map_err(|(kind, message)| {
        HelmError::Values {
            file: kind.flag().into(),
            message,
        }
    })?;
    Ok(user)
}

/// Loads the chart at `path` (a directory or a `.tgz`) through `fs` for [`render_chart`] or
/// [`template_loaded`]: [`chart::loader::load_with`] with the engine's function names
/// ([`engine::resolve`]), which the templates parsed during the load are resolved against.
pub fn load_chart(
    fs: &dyn kiln_base::fs::FileSystem,
    path: &Path,
) -> Result<chart::Chart, chart::LoadError> {
    chart::loader::load_with(fs, path, engine::resolve)
}

/// Adds the charts in `dirs` to `chart` as subcharts, as if they lay under its `charts/`:
/// the dependencies its `Chart.yaml` lists and `charts/` lacks, which kiln's source stage
/// pulled (what `helm dependency build` does, `pkg/downloader/manager.go` `Build`, before
/// `helm template` loads the chart). A dependency `charts/` already holds is kept.
pub fn add_dependencies(
    fs: &dyn kiln_base::fs::FileSystem,
    chart: &mut chart::Chart,
    dirs: &[PathBuf],
) -> Result<(), HelmError> {
    for dir in dirs {
        let sub = load_chart(fs, dir).map_err(load_error)?;
        if !chart.subcharts.iter().any(|s| s.name == sub.name) {
            chart.subcharts.push(sub);
        }
    }
    Ok(())
}

/// `helm template`: loads, processes and renders a chart, reading the chart and values
/// files through `fs`.
///
/// On one of rayon's threads (a caller already on one, inside `kiln render`, stays there):
/// the loader's jobs (reading files, parsing ahead, the schema check) then share the
/// machine's cores with the render instead of adding a thread to them. From the CLI's
/// thread, the pool's threads and the render were one thread more than the cores, and
/// each render paid for the switches (docs/adr/0012-parallel-template-parse.md).
pub fn template_with(
    fs: &dyn kiln_base::fs::FileSystem,
    opts: &TemplateOptions,
) -> Result<Rendered, HelmError> {
    rayon::scope(|_| {
        let mut chart = load_chart(fs, &opts.chart).map_err(load_error)?;
        add_dependencies(fs, &mut chart, &opts.dependencies)?;
        template_loaded(fs, chart, opts)
    })
}

/// [`template_with`] for a chart already loaded through `fs`: reads the values files
/// through `fs`, then renders (reading the chart files the load deferred through it too).
pub fn template_loaded(
    fs: &dyn kiln_base::fs::FileSystem,
    chart: chart::Chart,
    opts: &TemplateOptions,
) -> Result<Rendered, HelmError> {
    let user = user_values(fs, opts)?;
    render_chart(fs, chart, &user, opts)
}

impl From<engine::RenderError> for HelmError {
    fn from(e: engine::RenderError) -> HelmError {
        let (file, message) = (e.file, e.message);
        match e.kind {
            engine::RenderErrorKind::Parse => HelmError::Syntax { file, message },
            engine::RenderErrorKind::UnknownFunction => {
                HelmError::UnknownFunction { file, message }
            }
            engine::RenderErrorKind::Fail => HelmError::Fail { file, message },
            engine::RenderErrorKind::Exec => HelmError::Exec { file, message },
        }
    }
}

/// The release name `--name-template` (kustomize: `nameTemplate`) renders to, checked as
/// Helm checks every release name.
pub fn name_template(text: &str) -> Result<String, HelmError> {
    let name = engine::name_template(text)?;
    validate_release_name(&name)?;
    Ok(name)
}

/// The longest release name Helm installs (pkg/chart/v2/util/validate_name.go: 63, the
/// shortest Kubernetes name limit, less 10 for what charts append).
const MAX_RELEASE_NAME_LEN: usize = 53;

/// Helm's `chartutil.ValidateReleaseName`, checked by `helm template` before it renders
/// (pkg/action/install.go `availableName`, v4.2.3), with Helm's message: the name must
/// match `^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$` and be at most
/// 53 bytes long.
pub fn validate_release_name(name: &str) -> Result<(), HelmError> {
    let label_ok = |l: &str| {
        let b = l.as_bytes();
        let alnum = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
        b.first().is_some_and(alnum)
            && b.last().is_some_and(alnum)
            && b.iter().all(|c| alnum(c) || *c == b'-')
    };
    let reason = if name.is_empty() {
        "no name provided".to_string()
    } else if name.len() > MAX_RELEASE_NAME_LEN || !name.split('.').all(label_ok) {
        format!(
            "release name {name:?}: invalid release name, must match regex {} and the length must not be longer than {MAX_RELEASE_NAME_LEN}",
            r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
        )
    } else {
        return Ok(());
    };
    Err(HelmError::ReleaseName {
        message: format!("release name check failed: {reason}"),
    })
}

/// The seed of the random functions (see the module docs).
/// `--kube-version` (Helm's default without it), parsed as Helm's `chartutil.ParseKubeVersion`.
fn kube_version(opts: &TemplateOptions) -> Result<sprig::semver::Version, HelmError> {
    let kube_version = opts
        .kube_version
        .clone()
        .unwrap_or_else(|| engine::capabilities::DEFAULT_KUBE_VERSION.to_string());
    sprig::semver::Version::parse(&kube_version).map_err(|_| HelmError::KubeVersion {
        message: format!("invalid kube version {kube_version:?}"),
    })
}

fn seed(chart: &chart::Chart, user: &Map, opts: &TemplateOptions) -> u64 {
    use sha2::Digest;
    let mut h = sha2::Sha256::new();
    for part in [
        chart.name.as_str(),
        chart.version.as_str(),
        opts.release_name.as_str(),
        opts.namespace.as_str(),
    ] {
        h.update(part.as_bytes());
        h.update([0]);
    }
    h.update(yaml::to_json(&Value::Map(user.clone()), false, false).as_bytes());
    let d = h.finalize();
    u64::from_le_bytes([d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7]])
}

/// Renders a loaded chart with user values. `fs` must be the file system the chart was
/// loaded through: the files only `.Files` and `--include-crds` reach are read from it when
/// first used ([`chart::FileData::Deferred`]).
pub fn render_chart(
    fs: &dyn kiln_base::fs::FileSystem,
    mut chart: chart::Chart,
    user: &Map,
    opts: &TemplateOptions,
) -> Result<Rendered, HelmError> {
    check_dependencies(&chart)?;
    validate_release_name(&opts.release_name)?;
    let seed = seed(&chart, user, opts);
    let mut helm_reads = Vec::new();
    if opts.record_reads {
        dependency_paths(&chart, &[], &mut helm_reads);
    }
    chartutil::dependencies::process_dependencies(&mut chart, user);
    let kv = kube_version(opts)?;
    let vals = chartutil::coalesce::coalesce_values(&chart, user);
    // The schemas are checked beside the render, as a job on rayon's pool. Each was
    // compiled ahead since the load (chart::Schema), or this job compiles it: jsonschema
    // first validates a schema against its meta-schema, a tenth of rendering the charts that
    // have one. A pool thread is already started and its allocator heap already has pages;
    // a thread started per render paid for both (traefik's schema). Inside `kiln render`,
    // where this thread is itself a pool thread and none may be free, the scope runs the job
    // here when the render is done. Helm checks the schemas first, so their error, if any,
    // wins over whatever the render met.
    let mut jobs = Vec::new();
    chartutil::schema::schema_jobs(&chart, &vals, &mut jobs);
    if jobs.is_empty() {
        return render_checked(fs, &chart, (&vals, user, helm_reads), opts, seed, &kv);
    }
    let checked = std::sync::Mutex::new(None);
    let rendered = rayon::in_place_scope(|scope| {
        scope.spawn(|_| {
            let r = chartutil::schema::check_schemas(jobs)
                .map_err(|message| HelmError::Schema { message });
            if let Ok(mut c) = checked.lock() {
                *c = Some(r);
            }
        });
        render_checked(fs, &chart, (&vals, user, helm_reads), opts, seed, &kv)
    });
    // A panic in the job was re-raised by the scope, so the check ran to its end.
    if let Some(r) = checked.into_inner().ok().flatten() {
        r?;
    }
    rendered
}

/// What follows the schema check: kubeVersion, render, sort, assembly. `values` are the
/// coalesced values, the user's, and the paths Helm reads itself ([`dependency_paths`]).
fn render_checked(
    fs: &dyn kiln_base::fs::FileSystem,
    chart: &chart::Chart,
    (vals, user, helm_reads): (&Map, &Map, Vec<Vec<String>>),
    opts: &TemplateOptions,
    seed: u64,
    kv: &sprig::semver::Version,
) -> Result<Rendered, HelmError> {
    let kv_text = format!("v{}.{}.{}", kv.major, kv.minor, kv.patch);
    if let Value::Map(m) = &chart.meta {
        let constraint = m
            .borrow()
            .get("kubeVersion")
            .map(template::fmt::s)
            .unwrap_or_default();
        if !constraint.is_empty() && !sprig::semver::satisfies(&constraint, kv).unwrap_or(false) {
            return Err(HelmError::KubeVersion {
                message: format!(
                    "chart requires kubeVersion: {constraint} which is incompatible with Kubernetes {kv_text}"
                ),
            });
        }
    }
    let ctx = context(opts, kv_text);
    let engine::Output { files, reads } = engine::render(fs, chart, vals, &ctx, seed)?;
    let unused_values = match reads {
        Some(mut reads) => {
            for p in helm_reads {
                reads.path(p);
            }
            reads
                .unused(user)
                .into_iter()
                .map(|(path, siblings)| UnusedValue {
                    chart: chart.name.clone(),
                    suggestion: path.last().and_then(|last| {
                        kiln_base::diag::did_you_mean(last, siblings.iter().map(String::as_str))
                    }),
                    path: path.join("."),
                    keys: path,
                })
                .collect()
        }
        None => Vec::new(),
    };
    let (mut hooks, manifests) =
        releaseutil::sorter::sort_manifests(&files).map_err(|e| HelmError::Manifest {
            file: e.file,
            message: e.message,
        })?;
    // pkg/cmd/template.go: `--no-hooks` prints no hook, `--skip-tests` no test hook.
    if opts.skip_hooks {
        hooks.clear();
    } else if opts.skip_tests {
        hooks.retain(|h| !h.test);
    }
    let crds = if opts.include_crds {
        crd_files(fs, chart, None)?
    } else {
        Vec::new()
    };
    let stream = releaseutil::sorter::assemble(&crds, &manifests, &hooks);
    let mut documents: Vec<(String, String)> = crds;
    documents.extend(
        manifests
            .into_iter()
            .chain(hooks)
            .map(|d| (d.source, d.text)),
    );
    Ok(Rendered {
        stream,
        documents,
        unused_values,
    })
}

/// The engine's context for a render with `opts` for Kubernetes `kube_version` (`v1.2.3`).
fn context(opts: &TemplateOptions, kube_version: String) -> engine::Context {
    let mut api_versions: Vec<String> = engine::capabilities::DEFAULT_API_VERSIONS
        .iter()
        .map(|s| s.to_string())
        .collect();
    api_versions.extend(opts.api_versions.iter().cloned());
    engine::Context {
        release_name: opts.release_name.clone(),
        namespace: opts.namespace.clone(),
        kube_version,
        api_versions,
        is_upgrade: false,
        now: opts.now.unwrap_or(sprig::date::FIXED_NOW),
        budget: opts.budget,
        record_reads: opts.record_reads,
        trace_reads: false,
    }
}

/// A render made again to explain a finding in its output (issue 36, item 7): which values
/// each template line read ([`template::reads::ValueReads::traced`]) and where each value
/// came from ([`chartutil::origin`]). Only [`trace_values`] builds one, so a render pays
/// nothing for it.
pub struct ValuesTrace {
    /// Per template (named as [`Rendered::documents`] name them), per line: what the
    /// actions on it read.
    pub lines: BTreeMap<String, BTreeMap<u32, template::reads::LineReads>>,
    /// The values' layers, for [`chartutil::origin::Layers::origin`].
    pub layers: chartutil::origin::Layers,
}

/// [`template_with`] traced ([`ValuesTrace`]): the same chart, values and options render the
/// same output, with every values read kept per template line. The schemas are not checked
/// again (the render this explains passed them), and nothing is sorted or printed.
pub fn trace_values(
    fs: &dyn kiln_base::fs::FileSystem,
    opts: &TemplateOptions,
) -> Result<ValuesTrace, HelmError> {
    let mut chart = load_chart(fs, &opts.chart).map_err(load_error)?;
    add_dependencies(fs, &mut chart, &opts.dependencies)?;
    let user = user_values(fs, opts)?;
    let layers = user_layers(fs, opts)?;
    let seed = seed(&chart, &user, opts);
    chartutil::dependencies::process_dependencies(&mut chart, &user);
    let kv = kube_version(opts)?;
    let vals = chartutil::coalesce::coalesce_values(&chart, &user);
    let mut ctx = context(opts, format!("v{}.{}.{}", kv.major, kv.minor, kv.patch));
    ctx.record_reads = true;
    ctx.trace_reads = true;
    let out = engine::render(fs, &chart, &vals, &ctx, seed)?;
    let mut defaults = Vec::new();
    chart_defaults(fs, &chart, Vec::new(), &mut defaults);
    Ok(ValuesTrace {
        lines: out.reads.map(|r| r.lines()).unwrap_or_default(),
        layers: chartutil::origin::Layers {
            user: layers,
            defaults,
        },
    })
}

/// The user's layers of values, highest first: `--set…` (named `--set`), inline values
/// (named `values`), the values files last to first (named as given).
fn user_layers(
    fs: &dyn kiln_base::fs::FileSystem,
    opts: &TemplateOptions,
) -> Result<Vec<chartutil::origin::Layer>, HelmError> {
    use chartutil::origin::{Layer, LayerKind};
    let set = template::value::new_map();
    let read = |p: &str| fs.read_to_string(Path::new(p)).map_err(|e| e.to_string());
    chartutil::strvals::apply_set_flags(&set, &opts.set, &read).map_err(|(kind, message)| {
        HelmError::Values {
            file: kind.flag().into(),
            message,
        }
    })?;
    let mut layers = vec![Layer {
        kind: LayerKind::Set,
        name: "--set".into(),
        text: None,
        values: set,
    }];
    if let Some(v) = &opts.values {
        layers.push(Layer {
            kind: LayerKind::Inline,
            name: "values".into(),
            text: None,
            values: chartutil::from_json_map(v),
        });
    }
    for f in opts.value_files.iter().rev() {
        let name = f.display().to_string();
        let values_error = |message: String| HelmError::Values {
            file: name.clone(),
            message,
        };
        let text = fs
            .read_to_string(f)
            .map_err(|e| values_error(e.to_string()))?;
        let values = chart::loader::load_values(&text).map_err(|e| values_error(e.to_string()))?;
        layers.push(Layer {
            kind: LayerKind::File,
            name,
            text: Some(std::sync::Arc::from(text)),
            values,
        });
    }
    Ok(layers)
}

/// Each chart's values.yaml below `c` (itself at `prefix`), parents first: its text read
/// again where the chart is a directory (`<origin>/values.yaml`), for the value's line.
fn chart_defaults(
    fs: &dyn kiln_base::fs::FileSystem,
    c: &chart::Chart,
    prefix: Vec<String>,
    out: &mut Vec<(Vec<String>, chartutil::origin::Layer)>,
) {
    let file = Path::new(&c.origin).join("values.yaml");
    let values = match &c.values {
        Value::Map(m) => m.clone(),
        _ => template::value::new_map(),
    };
    out.push((
        prefix.clone(),
        chartutil::origin::Layer {
            kind: chartutil::origin::LayerKind::ChartDefault,
            name: file.display().to_string(),
            text: fs.read_to_string(&file).ok().map(std::sync::Arc::from),
            values,
        },
    ));
    for sub in &c.subcharts {
        let mut p = prefix.clone();
        p.push(sub.name.clone());
        chart_defaults(fs, sub, p, out);
    }
}

/// `CRDObjects()`: the chart's `crds/` files, then each enabled subchart's. A chart
/// directory's are read here, through `fs`, only when `--include-crds` asks for them.
fn crd_files(
    fs: &dyn kiln_base::fs::FileSystem,
    c: &chart::Chart,
    parent: Option<&str>,
) -> Result<Vec<(String, String)>, HelmError> {
    let full = match parent {
        None => c.name.clone(),
        Some(p) => format!("{p}/charts/{}", c.name),
    };
    let mut out = Vec::new();
    for (n, data) in c.files.iter().filter(|(n, _)| n.starts_with("crds/")) {
        let text = match data {
            chart::FileData::Loaded(d) => chart::lossy_text(d),
            chart::FileData::Deferred(real) => {
                let d = chart::read_deferred(fs, n, real).map_err(|message| HelmError::Load {
                    file: c.origin.clone(),
                    line: None,
                    message,
                })?;
                chart::lossy_text_owned(d)
            }
        };
        out.push((format!("{full}/{n}"), text));
    }
    for sub in &c.subcharts {
        out.extend(crd_files(fs, sub, Some(&full))?);
    }
    Ok(out)
}

/// `CheckDependencies`: every declared dependency must be present in charts/.
fn check_dependencies(c: &chart::Chart) -> Result<(), HelmError> {
    let missing: Vec<String> = c
        .deps
        .iter()
        .filter(|d| !c.subcharts.iter().any(|s| s.name == d.name))
        .map(|d| d.name.clone())
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    Err(HelmError::Dependency {
        message: format!(
            "an error occurred while checking for chart dependencies. You may need to run `helm dependency build` to fetch missing dependencies: found in Chart.yaml, but missing in charts/ directory: {}",
            missing.join(", ")
        ),
    })
}

/// A path shown relative to the working directory when possible.
pub fn shown(p: &Path) -> String {
    p.display().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn release_names_are_checked_as_helm_checks_them() {
        for ok in ["rel", "my.rel-1", "a", "0", &"a".repeat(53)] {
            assert!(validate_release_name(ok).is_ok(), "{ok}");
        }
        for bad in [
            "Bad_Name",
            "-a",
            "a-",
            "a..b",
            ".a",
            "a_b",
            &"a".repeat(54),
            "ü",
        ] {
            let e = validate_release_name(bad).unwrap_err().to_string();
            assert!(
                e.starts_with(&format!("release name check failed: release name {bad:?}: invalid release name, must match regex ^[a-z0-9]")),
                "{bad}: {e}"
            );
        }
        let e = validate_release_name("").unwrap_err().to_string();
        assert_eq!(e, "release name check failed: no name provided");
    }

    #[test]
    fn name_templates_render_with_sprig_and_a_seed_of_their_text() {
        assert_eq!(
            name_template("{{ \"Web\" | lower }}-{{ add 1 2 }}").unwrap(),
            "web-3"
        );
        let random = "{{ randAlpha 6 | lower }}";
        let name = name_template(random).unwrap();
        assert_eq!(name.len(), 6);
        assert_eq!(
            name_template(random).unwrap(),
            name,
            "one name per template"
        );
        // Sprig only, as Helm's TemplateName: Helm's own functions are not there.
        let e = name_template("{{ toYaml 1 }}").unwrap_err().to_string();
        assert_eq!(
            e,
            "template: name-template:1: function \"toYaml\" not defined"
        );
        // The rendered name must be a valid release name.
        let e = name_template("{{ \"Web\" }}").unwrap_err().to_string();
        assert!(
            e.contains("release name \"Web\": invalid release name"),
            "{e}"
        );
    }

    /// A chart whose schema wants `replicas` to be an integer, with a subchart that has its
    /// own schema, a template that fails and a kubeVersion constraint.
    fn chart(fail_template: bool, kube: &str) -> chart::Chart {
        let mut fs = kiln_base::fs::MemFs::new();
        fs.add_file(
            "/c/Chart.yaml",
            format!("apiVersion: v2\nname: c\nversion: 1.0.0\nkubeVersion: \"{kube}\"\n"),
        )
        .add_file("/c/values.yaml", "replicas: 1\nsub:\n  port: 80\n")
        .add_file(
            "/c/values.schema.json",
            r#"{"type":"object","properties":{"replicas":{"type":"integer"}}}"#,
        )
        .add_file(
            "/c/templates/a.yaml",
            if fail_template {
                "{{ fail \"boom\" }}"
            } else {
                "kind: ConfigMap\nreplicas: {{ .Values.replicas }}\n"
            },
        )
        .add_file(
            "/c/charts/sub/Chart.yaml",
            "apiVersion: v2\nname: sub\nversion: 1.0.0\n",
        )
        .add_file(
            "/c/charts/sub/values.schema.json",
            r#"{"type":"object","properties":{"port":{"type":"integer"}}}"#,
        );
        load_chart(&fs, std::path::Path::new("/c")).unwrap()
    }

    fn user(yaml: &str) -> Map {
        match yaml::parse_one(yaml).unwrap() {
            Value::Map(m) => m,
            _ => unreachable!(),
        }
    }

    fn render(c: chart::Chart, values: &str) -> Result<Rendered, HelmError> {
        let opts = TemplateOptions::new("/c", "rel");
        render_chart(&kiln_base::fs::MemFs::new(), c, &user(values), &opts)
    }

    /// A values.schema.json that is not JSON fails the load, naming the file; one that is
    /// JSON but no valid schema fails the render with jsonschema's reason. Compiled ahead
    /// on the pool or by the render's own check, and rendered twice, the verdict is one.
    #[test]
    fn a_broken_schema_fails_the_load_and_an_invalid_one_the_render() {
        let load = |schema: &str| {
            let mut fs = kiln_base::fs::MemFs::new();
            fs.add_file("/c/Chart.yaml", "apiVersion: v2\nname: c\nversion: 1.0.0\n")
                .add_file("/c/values.schema.json", schema)
                .add_file("/c/templates/a.yaml", "kind: ConfigMap\n");
            load_chart(&fs, std::path::Path::new("/c"))
        };
        let Err(e) = load("{\"type\": \"object\",\n}") else {
            panic!("a schema that is not JSON loads");
        };
        assert_eq!(e.file, "/c/values.schema.json");
        assert_eq!(e.message, "trailing comma at line 2 column 1");
        // What the skipping parser lets through and a full parse refuses (a lone surrogate)
        // still fails, at the render, naming the schema.
        let c = load(r#"{"description": "\ud800"}"#).unwrap();
        match render(c, "{}") {
            Err(HelmError::Schema { message }) => {
                assert!(
                    message.contains("- invalid values.schema.json: "),
                    "{message}"
                )
            }
            other => panic!("{:?}", other.err()),
        }
        for _ in 0..20 {
            let c = load(r#"{"type": 5}"#).unwrap();
            for _ in 0..2 {
                match render(c.clone(), "{}") {
                    Err(HelmError::Schema { message }) => assert!(
                        message.starts_with(
                            "values don't meet the specifications of the schema(s) in the following chart(s):\nc:\n- invalid values.schema.json: "
                        ),
                        "{message}"
                    ),
                    other => panic!("{:?}", other.err()),
                }
            }
        }
    }

    /// The schemas are checked beside the render: their verdict must still be Helm's, and
    /// come first, before a kubeVersion refusal or a template failure.
    #[test]
    fn schema_errors_win_over_what_the_render_meets() {
        let ok = render(chart(false, ">=1.0.0"), "{}").unwrap();
        assert!(ok.stream.contains("replicas: 1"), "{}", ok.stream);

        let bad = "replicas: many\nsub:\n  port: eighty\n";
        for c in [
            chart(false, ">=1.0.0"),
            chart(true, ">=1.0.0"),
            chart(false, "<1.0.0"),
        ] {
            match render(c, bad) {
                Err(HelmError::Schema { message }) => {
                    // Both charts' failures, the parent's first.
                    let (c, sub) = (message.find("c:\n"), message.find("sub:\n"));
                    assert!(c.is_some() && sub.is_some() && c < sub, "{message}");
                    assert!(message.contains("- at '/replicas'"), "{message}");
                    assert!(message.contains("- at '/port'"), "{message}");
                }
                other => panic!("{:?}", other.err()),
            }
        }
        // Valid values: the render's own error comes through.
        assert!(matches!(
            render(chart(true, ">=1.0.0"), "{}"),
            Err(HelmError::Fail { .. })
        ));
        assert!(matches!(
            render(chart(false, "<1.0.0"), "{}"),
            Err(HelmError::KubeVersion { .. })
        ));
    }

    /// A [`kiln_base::fs::MemFs`] that counts the reads of each path and refuses to read some,
    /// as a file without read permission would.
    #[derive(Debug)]
    struct CountingFs {
        inner: kiln_base::fs::MemFs,
        refused: Vec<PathBuf>,
        reads: std::sync::Mutex<std::collections::BTreeMap<PathBuf, usize>>,
        /// Reads made on a thread that is not one of rayon's.
        off_pool: std::sync::atomic::AtomicUsize,
    }

    impl CountingFs {
        fn reads(&self, path: &str) -> usize {
            let reads = self.reads.lock().unwrap();
            reads.get(Path::new(path)).copied().unwrap_or(0)
        }
    }

    impl kiln_base::fs::FileSystem for CountingFs {
        fn read(&self, path: &Path) -> std::io::Result<Vec<u8>> {
            if rayon::current_thread_index().is_none() {
                self.off_pool
                    .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            }
            *self
                .reads
                .lock()
                .unwrap()
                .entry(path.to_path_buf())
                .or_default() += 1;
            if self.refused.iter().any(|r| r == path) {
                return Err(std::io::Error::from(std::io::ErrorKind::PermissionDenied));
            }
            self.inner.read(path)
        }
        fn is_dir(&self, path: &Path) -> bool {
            self.inner.is_dir(path)
        }
        fn is_file(&self, path: &Path) -> bool {
            self.inner.is_file(path)
        }
        fn read_dir(&self, path: &Path) -> std::io::Result<Vec<PathBuf>> {
            self.inner.read_dir(path)
        }
        fn canonicalize(&self, path: &Path) -> std::io::Result<PathBuf> {
            self.inner.canonicalize(path)
        }
    }

    /// A chart whose one template is `template`, with a file only `.Files` reaches that
    /// can be read, one that cannot (no permission) and one over Helm's 5 MiB limit.
    fn files_chart(template: &str) -> CountingFs {
        let mut fs = kiln_base::fs::MemFs::new();
        fs.add_file("/c/Chart.yaml", "apiVersion: v2\nname: c\nversion: 1.0.0\n")
            .add_file("/c/templates/cm.yaml", template)
            .add_file("/c/files/a.conf", "\u{feff}from a\n")
            .add_file("/c/files/locked.conf", "never read\n")
            .add_file("/c/files/big.bin", "x".repeat(5 * 1024 * 1024 + 1))
            .add_file("/c/README.md", "# not for templates\n");
        CountingFs {
            inner: fs,
            refused: vec![PathBuf::from("/c/files/locked.conf")],
            reads: Default::default(),
            off_pool: Default::default(),
        }
    }

    fn template_files(fs: &CountingFs) -> Result<Rendered, HelmError> {
        let opts = TemplateOptions::new("/c", "rel");
        let c = load_chart(fs, &opts.chart).map_err(load_error)?;
        template_loaded(fs, c, &opts)
    }

    /// `helm template` runs on rayon's pool, load and render: called from another thread
    /// (the CLI's), the pool's jobs then share the cores with the render instead of adding
    /// a thread to them. The render's `.Files.Get` read came from the caller's thread.
    #[test]
    fn helm_template_loads_and_renders_on_the_pool() {
        let fs = files_chart("data: {{ .Files.Get \"files/a.conf\" | quote }}\n");
        let out = std::thread::spawn(move || {
            let out = template_with(&fs, &TemplateOptions::new("/c", "rel")).unwrap();
            (out, fs)
        })
        .join()
        .unwrap();
        let (out, fs) = out;
        assert!(out.stream.contains("from a"), "{}", out.stream);
        assert_eq!(fs.reads("/c/files/a.conf"), 1);
        assert_eq!(
            fs.off_pool.load(std::sync::atomic::Ordering::SeqCst),
            0,
            "a read off the pool"
        );
    }

    /// A file only `.Files` reaches is not read when the chart loads; the render reads it on
    /// its first use, once however often it is used, as the loader would have (BOM dropped),
    /// and never reads the files no template uses.
    #[test]
    fn files_only_dot_files_reaches_are_read_once_on_first_use() {
        let fs = files_chart(
            "kind: ConfigMap\ndata:\n  a: {{ .Files.Get \"files/a.conf\" | quote }}\n  again: {{ .Files.Get \"files/a.conf\" | quote }}\n  lines: {{ .Files.Lines \"files/a.conf\" | len }}\n  names: {{ len (.Files.Glob \"files/*\") }}\n",
        );
        let c = load_chart(&fs, Path::new("/c")).unwrap();
        assert_eq!(fs.reads("/c/files/a.conf"), 0, "read at load");
        assert_eq!(fs.reads("/c/templates/cm.yaml"), 1);
        let out = template_loaded(&fs, c, &TemplateOptions::new("/c", "rel")).unwrap();
        assert!(
            out.stream
                .contains("a: \"from a\\n\"\n  again: \"from a\\n\"\n  lines: 1\n  names: 3\n"),
            "{}",
            out.stream
        );
        assert_eq!(fs.reads("/c/files/a.conf"), 1);
        for unused in ["/c/files/locked.conf", "/c/files/big.bin", "/c/README.md"] {
            assert_eq!(fs.reads(unused), 0, "{unused}");
        }
    }

    /// Helm refuses an unreadable or oversized chart file at load; kiln only when a template
    /// reads it (tests/helm/DIVERGENCES.md), with an error naming it.
    #[test]
    fn an_unreadable_or_oversized_file_fails_only_the_render_that_reads_it() {
        let fs = files_chart("kind: ConfigMap\n");
        assert!(template_files(&fs).is_ok());
        for (template, want) in [
            (
                "{{ .Files.Get \"files/locked.conf\" }}",
                "error calling Get: cannot read chart file \"files/locked.conf\" (/c/files/locked.conf): permission denied",
            ),
            (
                "{{ range $n, $d := .Files }}{{ $n }}{{ end }}",
                "at <range>:\n    chart file \"files/big.bin\" is larger than the maximum file size",
            ),
            (
                "{{ (.Files.Glob \"files/big.*\").AsConfig }}",
                "error calling AsConfig: chart file \"files/big.bin\" is larger than the maximum file size 5242880",
            ),
        ] {
            let fs = files_chart(template);
            match template_files(&fs) {
                Err(HelmError::Exec { message, .. }) => {
                    assert!(message.contains(want), "{template}: {message}")
                }
                other => panic!("{template}: {:?}", other.err()),
            }
        }
    }

    /// Issue 36, item 6: with `record_reads`, the user's values no template read are
    /// reported (with the read key closest to a typo); every way a template reads a value
    /// counts: field chains, `index`, `pluck`, `dig`, `hasKey`, `toYaml` of a subtree,
    /// `range`/`with` over one, a subchart's own `.Values` and its copy of `global`, and a
    /// dependency's `condition`. The output is the same with the record on.
    #[test]
    fn values_no_template_reads_are_reported() {
        let mut fs = kiln_base::fs::MemFs::new();
        fs.add_file(
            "/ledger/Chart.yaml",
            "apiVersion: v2\nname: ledger\nversion: 1.0.0\ndependencies:\n- {name: db, version: 1.0.0, condition: db.enabled}\n- {name: cache, version: 1.0.0, condition: cache.enabled}\n",
        )
        .add_file(
            "/ledger/values.yaml",
            "replicaCount: 1\nimage: {repository: x, tag: \"1\"}\nresources: {}\nservice: {port: 80}\ndeep: {a: {b: 0}}\ndb: {enabled: true}\ncache: {enabled: false}\n",
        )
        .add_file(
            "/ledger/templates/deploy.yaml",
            concat!(
                "replicas: {{ .Values.replicaCount }}\n",
                "image: {{ .Values.image.repository }}:{{ index .Values \"image\" \"tag\" }}\n",
                "{{- with .Values.podLabels }}\nlabels: {{ toYaml . | nindent 2 }}{{ end }}\n",
                "resources: {{ toYaml .Values.resources | nindent 2 }}\n",
                "env:{{- range .Values.env }}\n- {{ .name }}{{ end }}\n",
                "p: {{ pluck \"port\" .Values.service | first }}\n",
                "d: {{ dig \"a\" \"b\" 0 .Values.deep }}\n",
                "h: {{ hasKey .Values \"flag\" }}\n",
                "{{- if .Values.ingress.enabled }}\nhost: {{ .Values.ingress.host }}{{ end }}\n",
            ),
        )
        .add_file(
            "/ledger/charts/db/Chart.yaml",
            "apiVersion: v2\nname: db\nversion: 1.0.0\n",
        )
        .add_file(
            "/ledger/charts/db/templates/s.yaml",
            "port: {{ .Values.port }}\nregion: {{ .Values.global.region }}\n",
        )
        .add_file(
            "/ledger/charts/cache/Chart.yaml",
            "apiVersion: v2\nname: cache\nversion: 1.0.0\n",
        )
        .add_file(
            "/ledger/charts/cache/templates/s.yaml",
            "size: {{ .Values.size }}\n",
        );
        let values = concat!(
            "replicaCont: 3\n",
            "image: {repository: y, tag: \"2\", tg: \"3\"}\n",
            "podLabels: {a: b}\n",
            "resources: {limits: {cpu: 1}}\n",
            "env: [{name: A}]\n",
            "service: {port: 80, prt: 81}\n",
            "deep: {a: {b: 1, other: 2}}\n",
            "flag: true\n",
            "ingress: {enabled: false, host: h}\n",
            "db: {port: 5432, prot: 1}\n",
            "global: {region: eu, zone: a}\n",
            "cache: {size: 3}\n",
            "unknown: {x: 1}\n",
        );
        let run = |record: bool| {
            let c = load_chart(&fs, Path::new("/ledger")).unwrap();
            let mut opts = TemplateOptions::new("/ledger", "rel");
            opts.record_reads = record;
            render_chart(&fs, c, &user(values), &opts).unwrap()
        };
        let off = run(false);
        assert!(off.unused_values.is_empty());
        let on = run(true);
        assert_eq!(on.stream, off.stream, "recording changes no output byte");
        let found: Vec<String> = on.unused_values.iter().map(|u| u.to_string()).collect();
        assert_eq!(
            found,
            [
                // The cache subchart is disabled: its templates read nothing.
                "value cache.size is not used by chart ledger",
                "value db.prot is not used by chart ledger; did you mean port?",
                "value deep.a.other is not used by chart ledger",
                "value global.zone is not used by chart ledger",
                "value image.tg is not used by chart ledger; did you mean tag?",
                // Read only inside `if .Values.ingress.enabled`, which is false.
                "value ingress.host is not used by chart ledger",
                "value replicaCont is not used by chart ledger; did you mean replicaCount?",
                "value service.prt is not used by chart ledger; did you mean port?",
                "value unknown is not used by chart ledger",
            ]
        );
        // Under an enabled branch the same value is read.
        let c = load_chart(&fs, Path::new("/ledger")).unwrap();
        let mut opts = TemplateOptions::new("/ledger", "rel");
        opts.record_reads = true;
        let on = render_chart(&fs, c, &user("ingress: {enabled: true, host: h}\n"), &opts).unwrap();
        assert!(on.unused_values.is_empty(), "{:?}", on.unused_values);
    }

    /// Issue 36, item 7: a traced render keeps, per template line, the values paths the
    /// actions on it read (through `include`, variables, `with` and `range` too), and each
    /// path's origin is the last layer that set it, with its line.
    #[test]
    fn a_traced_render_names_each_lines_values_and_their_origin() {
        let mut fs = kiln_base::fs::MemFs::new();
        fs.add_file(
            "/ledger/Chart.yaml",
            "apiVersion: v2\nname: ledger\nversion: 1.0.0\n",
        )
        .add_file(
            "/ledger/values.yaml",
            "replicas: 1\nimage: {repository: x, tag: \"1\"}\nport: 80\nlabels: {a: b}\n",
        )
        .add_file(
            "/ledger/templates/_helpers.tpl",
            "{{- define \"img\" -}}{{ .Values.image.repository }}:{{ .Values.image.tag }}{{- end }}\n",
        )
        .add_file(
            "/ledger/templates/dep.yaml",
            concat!(
                "{{- $p := .Values.port }}\n",
                "replicas: {{ .Values.replicas | quote }}\n",
                "image: {{ include \"img\" . }}\n",
                "port: {{ $p }}\n",
                "labels:\n",
                "  {{- toYaml .Values.labels | nindent 2 }}\n",
                "{{- with .Values.image }}\n",
                "tag: {{ .tag }}\n",
                "{{- end }}\n",
            ),
        )
        .add_file("/prod.yaml", "# prod\nreplicas: 3\n");
        let mut opts = TemplateOptions::new("/ledger", "rel");
        opts.value_files = vec!["/prod.yaml".into()];
        opts.values = Some(serde_json::json!({"image": {"tag": "2"}}));
        let trace = trace_values(&fs, &opts).unwrap();
        let lines = &trace.lines["ledger/templates/dep.yaml"];
        let at = |line: u32| -> Vec<String> {
            lines.get(&line).map_or(Vec::new(), |r| {
                r.iter()
                    .map(|(p, whole)| {
                        format!("{}{}", p.join("."), if *whole { " (whole)" } else { "" })
                    })
                    .collect()
            })
        };
        assert_eq!(at(2), ["replicas"]);
        assert_eq!(at(3), ["image", "image.repository", "image.tag"]);
        assert_eq!(at(4), ["port"], "the variable's value came from port");
        assert_eq!(at(6), ["labels", "labels (whole)"]);
        assert_eq!(at(7), ["image", "image (whole)"]);
        assert_eq!(at(8), ["image.tag"]);
        assert!(!trace.lines.contains_key("ledger/templates/_helpers.tpl"));
        let origin = |p: &str| {
            let path: Vec<String> = p.split('.').map(str::to_string).collect();
            trace
                .layers
                .origin(&path)
                .map(|o| format!("{:?} {}:{}", o.kind, o.name, o.line.unwrap_or(0)))
        };
        assert_eq!(origin("replicas").as_deref(), Some("File /prod.yaml:2"));
        assert_eq!(origin("image.tag").as_deref(), Some("Inline values:0"));
        assert_eq!(
            origin("image.repository").as_deref(),
            Some("ChartDefault /ledger/values.yaml:2")
        );
        // The output is the one the untraced render printed.
        let rendered = template_with(&fs, &opts).unwrap();
        assert!(
            rendered
                .stream
                .contains("replicas: \"3\"\nimage: x:2\nport: 80\n")
        );
    }
}
