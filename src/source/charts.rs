//! The charts a platform pulls (issue 33, item 2), found before load and fetched through the
//! source fetcher like the Git sources:
//!
//! - the `helm` generator's `chart:` with `repository:` (a Helm HTTP repository) or an
//!   `oci://` reference, with `version:` (exact or a constraint);
//! - kustomize's `helmCharts:` entries with `repo:` that have no vendored copy where
//!   kustomize would have pulled them (`<chartHome>[/<name>-<version>]/<name>`,
//!   `HelmChartInflationGenerator.go` `absChartHome`), in every kustomization a component's
//!   `kustomize:` generator reaches through local `resources:`/`components:`;
//! - the dependencies a chart's `Chart.yaml` lists and its `charts/` lacks, as `helm
//!   dependency build` fetches them (`pkg/downloader/manager.go` `Build`): at the versions
//!   `Chart.lock` pins when there is one and it agrees with `Chart.yaml`, else resolved from
//!   the constraints. Only a chart's own dependencies are pulled, as Helm does; a pulled
//!   dependency brings its own `charts/`.
//!
//! The chart's fields are literal (no `${…}`): a chart is resolved and locked before the
//! platform is evaluated, as a `source.ref` is. Files are read through the caller's
//! `FileSystem`; a file that does not parse is left to load to report.

use super::SourceStageError;
use crate::fs::FileSystem;
use kiln_kustomize::ChartSource;
use kiln_source::fetch::Kind;
use kiln_source::{Fetcher, LockEntry, Request};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// One pulled chart: its lock entry and where it lies in the source cache.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PulledChart {
    pub entry: LockEntry,
    /// The fetched tree's root.
    pub root: PathBuf,
    /// The chart's directory inside it.
    pub dir: PathBuf,
}

/// What needs a chart: for errors, and the names `kiln update NAME` selects it by.
#[derive(Debug, Clone, Default)]
struct Use {
    /// The first use in the spec's order: `component web (project shop) at
    /// components/web/component.yaml:9:7`.
    needed_by: String,
    names: BTreeSet<String>,
    /// (project, instance) of every instance that uses it, for the publish trailers.
    instances: BTreeSet<(String, String)>,
    /// Where the first use stands in the spec ([`super::Order`]): its failure is reported
    /// there, among the other sources'.
    order: super::Order,
}

impl Use {
    /// Notes a use at `order` by instance `name` of project `project`; the first in the
    /// spec's order names the chart in errors.
    fn add(&mut self, order: &super::Order, needed_by: &str, project: &str, name: &str) {
        if self.needed_by.is_empty() || *order < self.order {
            self.order = order.clone();
            self.needed_by = needed_by.to_string();
        }
        self.names.insert(name.to_string());
        self.instances
            .insert((project.to_string(), name.to_string()));
    }
}

/// The charts found so far.
#[derive(Debug, Default)]
pub struct ChartScan {
    wanted: BTreeMap<ChartSource, Use>,
    /// Chart directories in the repository or a fetched tree (vendored charts), whose
    /// `Chart.yaml` dependencies may need pulling, with what uses them.
    local: BTreeMap<PathBuf, Use>,
    /// Component directories scanned, with the charts each names (a component shared by
    /// instances is read once).
    scanned: BTreeMap<PathBuf, Vec<Finding>>,
    /// The documents parsed in this render (see [`crate::load::Parsed`]).
    parsed: Arc<crate::load::Parsed>,
}

#[derive(Debug, Clone)]
enum Found {
    Pulled(ChartSource),
    Local(PathBuf),
}

/// A chart a component names: where in the component (its generator's index, then the
/// chart's among those the generator reaches), and the file and line that name it.
#[derive(Debug, Clone)]
struct Finding {
    found: Found,
    within: Vec<usize>,
    at: String,
}

/// What the stage hands on: every pulled chart by source, and each chart directory's pulled
/// dependencies.
#[derive(Debug, Clone, Default)]
pub struct Charts {
    pub pulled: BTreeMap<ChartSource, PulledChart>,
    pub dependencies: BTreeMap<PathBuf, Vec<PulledChart>>,
    /// Each chart pulled (a dependency too) with the (project, instance) pairs whose
    /// component uses it, so a publish credits it to their cells only.
    pub used_by: Vec<(LockEntry, BTreeSet<(String, String)>)>,
}

const KUSTOMIZATION_FILES: [&str; 3] = ["kustomization.yaml", "kustomization.yml", "Kustomization"];

impl ChartScan {
    /// An empty scan, parsing component documents through `parsed`.
    pub fn new(parsed: Arc<crate::load::Parsed>) -> ChartScan {
        ChartScan {
            parsed,
            ..ChartScan::default()
        }
    }

    pub fn is_empty(&self) -> bool {
        self.wanted.is_empty() && self.local.is_empty()
    }

    /// The first use and URL, for the error when there is no cache.
    pub fn first_use(&self) -> (String, String) {
        self.wanted
            .iter()
            .next()
            .map(|(s, u)| (u.needed_by.clone(), s.repo.clone()))
            .unwrap_or_default()
    }

    /// The names of the component instances that use a chart (`kiln update NAME` selects
    /// their charts).
    pub fn instance_names(&self) -> BTreeSet<String> {
        self.wanted
            .values()
            .chain(self.local.values())
            .flat_map(|u| u.names.iter().cloned())
            .collect()
    }

    /// Every local component instance (`path:`) of the platform. Each component directory
    /// is read on rayon's pool (issue 38, item 8: the scans were 9 % of a render's CPU, on
    /// one thread), then the instances are noted in the spec's order, as one by one.
    pub fn scan_local(
        &mut self,
        fs: &dyn FileSystem,
        platform_dir: &Path,
        platform: &crate::spec::PlatformFile,
    ) -> Result<(), SourceStageError> {
        use rayon::prelude::*;
        let mut local = Vec::new();
        for (p, project) in platform.spec.projects.iter().enumerate() {
            for (i, inst) in project.components.iter().enumerate() {
                if inst.source.is_some() || inst.path.is_empty() {
                    continue;
                }
                let dir = crate::fs::normalize(&platform_dir.join(&inst.path));
                local.push(((p, i), project.name.as_str(), inst.name.as_ref(), dir));
            }
        }
        // The instance's name as render gives it: `name:`, else `metadata.name`.
        let names: Vec<String> = local
            .par_iter()
            .map(|(_, _, name, dir)| {
                name.cloned()
                    .or_else(|| super::component_name_in(fs, dir, &self.parsed))
                    .unwrap_or_default()
            })
            .collect();
        // Each directory not read yet, with the first instance that uses it (its errors name
        // that one, as the sequential scan's did).
        let mut first: Vec<(&Path, String)> = Vec::new();
        let mut taken = BTreeSet::new();
        for ((_, project, _, dir), name) in local.iter().zip(&names) {
            if !self.scanned.contains_key(dir) && taken.insert(dir) {
                first.push((dir, format!("component {name} (project {project})")));
            }
        }
        let this = &*self;
        let read: Vec<Result<Vec<Finding>, SourceStageError>> = first
            .par_iter()
            .map(|(dir, user)| this.read_component(fs, dir, &dir.display().to_string(), user))
            .collect();
        for ((dir, _), found) in first.iter().zip(read) {
            // The first error in the spec's order, as the sequential scan stopped at it.
            self.scanned.insert(dir.to_path_buf(), found?);
        }
        for (((p, i), project, _, dir), name) in local.iter().zip(&names) {
            let shown = dir.display().to_string();
            self.scan_component(fs, dir, &shown, (*p, *i), project, name)?;
        }
        Ok(())
    }

    /// The component in `dir` (shown as `shown`: a path, or `<url>@<ref>:<path>` for a
    /// fetched tree, [`crate::load::SourceTree::shown_dir`]), used
    /// by instance `instance` (at `(project index, instance index)` in the spec) of project
    /// `project`.
    pub fn scan_component(
        &mut self,
        fs: &dyn FileSystem,
        dir: &Path,
        shown: &str,
        (p, i): (usize, usize),
        project: &str,
        instance: &str,
    ) -> Result<(), SourceStageError> {
        let user = format!("component {instance} (project {project})");
        let found = match self.scanned.get(dir) {
            Some(found) => found.clone(),
            None => {
                let found = self.read_component(fs, dir, shown, &user)?;
                self.scanned.insert(dir.to_path_buf(), found.clone());
                found
            }
        };
        for f in found {
            let u = match f.found {
                Found::Pulled(source) => self.wanted.entry(source).or_default(),
                Found::Local(chart) => self.local.entry(chart).or_default(),
            };
            let order: super::Order = [p, i, 1].into_iter().chain(f.within).collect();
            u.add(&order, &format!("{user} at {}", f.at), project, instance);
        }
        Ok(())
    }

    fn read_component(
        &self,
        fs: &dyn FileSystem,
        dir: &Path,
        shown: &str,
        needed_by: &str,
    ) -> Result<Vec<Finding>, SourceStageError> {
        let file = dir.join("component.yaml");
        let Some((doc, text)) = fs.read_to_string(&file).ok().and_then(|text| {
            let doc = self.parsed.parse(&file.display().to_string(), &text).ok()?;
            Some((doc, text))
        }) else {
            return Ok(Vec::new());
        };
        let shown_file = crate::load::shown_join(shown, "component.yaml");
        // The span index only when a line is named: building it cost more than the parse.
        let spans = std::cell::OnceCell::new();
        let line = |pointer: &str| {
            let spans = spans.get_or_init(|| kiln_base::yaml::SpanIndex::build(&text));
            line_of(&shown_file, spans, pointer)
        };
        let mut found = Vec::new();
        let generators = doc.pointer("/spec/generators").and_then(Value::as_array);
        for (g, generator) in generators.into_iter().flatten().enumerate() {
            if let Some(h) = generator.get("helm") {
                let Ok(h) = serde_json::from_value::<crate::spec::HelmGenerator>(h.clone()) else {
                    continue;
                };
                // A field error names the line of its generator, as a Git source's names its
                // `source.ref`.
                let at = format!(
                    "{}, spec.generators[{g}]",
                    line(&format!("/spec/generators/{g}/helm"))
                );
                found.extend(
                    helm_generator(fs, dir, &h, &at, needed_by)?.map(|f| Finding {
                        found: f,
                        within: vec![g],
                        at: line(&format!("/spec/generators/{g}/helm/chart")),
                    }),
                );
            } else if let Some(k) = generator.get("kustomize").and_then(Value::as_str)
                && !k.contains("${")
            {
                let mut seen = BTreeSet::new();
                let mut charts = Vec::new();
                kustomization(
                    fs,
                    &crate::fs::normalize(&dir.join(k)),
                    &mut seen,
                    &mut charts,
                );
                if charts.is_empty() {
                    continue;
                }
                let kustomize = line(&format!("/spec/generators/{g}/kustomize"));
                found.extend(charts.into_iter().enumerate().map(|(n, f)| Finding {
                    found: f,
                    within: vec![g, n],
                    at: kustomize.clone(),
                }));
            }
        }
        Ok(found)
    }

    /// Fetches every chart found, then the dependencies of every chart (pulled or local).
    /// Every chart that fails is noted in `failed` at its first use in the spec (each error
    /// names the chart, its repository, the version asked for, the file and line that
    /// asks for it, and the cause), not only the first.
    pub(crate) fn fetch(
        &self,
        fs: &dyn FileSystem,
        fetcher: &Fetcher<'_>,
        misses: &super::Misses,
        failed: &mut super::Failures,
    ) -> Charts {
        let mut out = Charts::default();
        let mut with_deps: BTreeMap<PathBuf, Use> = self.local.clone();
        for (source, u) in &self.wanted {
            match misses.note(pull(fetcher, source, u)) {
                Ok(Some(pulled)) => {
                    out.used_by
                        .push((pulled.entry.clone(), u.instances.clone()));
                    with_deps
                        .entry(pulled.dir.clone())
                        .or_insert_with(|| u.clone());
                    out.pulled.insert(source.clone(), pulled);
                }
                Ok(None) => {}
                Err(e) => failed.push(u.order.clone(), e),
            }
        }
        for (dir, u) in &with_deps {
            let deps = match dependencies(fs, dir, u) {
                Ok(deps) => deps,
                Err(e) => {
                    failed.push(u.order.clone(), e);
                    continue;
                }
            };
            let mut pulled = Vec::new();
            for (d, (source, at)) in deps.into_iter().enumerate() {
                // Reported after the chart that depends on it.
                let order: super::Order = u.order.iter().copied().chain([usize::MAX, d]).collect();
                let dep = Use {
                    needed_by: format!("{} at {at}", u.needed_by),
                    ..u.clone()
                };
                match misses.note(pull(fetcher, &source, &dep)) {
                    Ok(got) => {
                        out.used_by
                            .extend(got.iter().map(|p| (p.entry.clone(), u.instances.clone())));
                        pulled.extend(got)
                    }
                    Err(e) => failed.push(order, e),
                }
            }
            if !pulled.is_empty() {
                let dir = fs.canonicalize(dir).unwrap_or_else(|_| dir.clone());
                out.dependencies.insert(dir, pulled);
            }
        }
        out
    }
}

fn read_yaml(fs: &dyn FileSystem, path: &Path) -> Option<Value> {
    read_yaml_text(fs, path).map(|(v, _)| v)
}

/// The document at `path`, with its text (for the lines errors name).
fn read_yaml_text(fs: &dyn FileSystem, path: &Path) -> Option<(Value, String)> {
    let text = fs.read_to_string(path).ok()?;
    let value = crate::yaml::parse_one(&path.display().to_string(), &text).ok()?;
    Some((value, text))
}

/// The document at `path`, with its spans (for the lines errors name).
fn read_yaml_spans(
    fs: &dyn FileSystem,
    path: &Path,
) -> Option<(Value, kiln_base::yaml::SpanIndex)> {
    read_yaml_text(fs, path).map(|(v, text)| (v, kiln_base::yaml::SpanIndex::build(&text)))
}

/// `file:line:column` of the node at `pointer` (or its nearest parent), `file` alone when
/// it has no span.
fn line_of(file: &str, spans: &kiln_base::yaml::SpanIndex, pointer: &str) -> String {
    match spans.find(0, pointer, false) {
        Some(l) => format!("{file}:{}:{}", l.line, l.column),
        None => file.to_string(),
    }
}

fn invalid(at: &str, field: &str, problem: String, help: &str) -> SourceStageError {
    SourceStageError::Invalid {
        at: at.to_string(),
        field: field.to_string(),
        problem,
        help: help.to_string(),
    }
}

/// The chart a `helm` generator pulls, checked; or its local chart directory.
fn helm_generator(
    fs: &dyn FileSystem,
    dir: &Path,
    h: &crate::spec::HelmGenerator,
    at: &str,
    needed_by: &str,
) -> Result<Option<Found>, SourceStageError> {
    let Some(source) = h.remote() else {
        if h.version.as_deref().is_some_and(|v| !v.is_empty()) {
            return Err(invalid(
                at,
                "helm.version",
                format!("is set, but `{}` is a chart directory", h.chart),
                "a vendored chart's version is its Chart.yaml's; set `repository:` (or write `chart: oci://…`) to pull a chart at a version",
            ));
        }
        if h.chart.contains("${") {
            return Ok(None);
        }
        // Only a chart with dependencies to pull is a source (and needs the cache).
        let chart = crate::fs::normalize(&dir.join(&h.chart));
        let u = Use {
            needed_by: needed_by.to_string(),
            ..Use::default()
        };
        let pulls = fs.is_dir(&chart) && !dependencies(fs, &chart, &u)?.is_empty();
        return Ok(pulls.then_some(Found::Local(chart)));
    };
    for (field, value) in [
        ("helm.chart", h.chart.as_str()),
        (
            "helm.repository",
            h.repository.as_deref().unwrap_or_default(),
        ),
        ("helm.version", h.version.as_deref().unwrap_or_default()),
    ] {
        if value.contains("${") {
            return Err(invalid(
                at,
                field,
                format!("`{value}` holds a reference"),
                "a pulled chart's `chart`, `repository` and `version` are literal: they are resolved and locked in kiln.lock before the platform is evaluated",
            ));
        }
        if kiln_base::url::has_credentials(value) {
            return Err(invalid(
                at,
                field,
                format!("`{}` holds credentials", kiln_base::url::redact(value)),
                "keep credentials out of component.yaml: KILN_REGISTRY_<HOST> or Docker's config.json (docs/sources.md)",
            ));
        }
    }
    if h.chart.starts_with("oci://") && h.repository.as_deref().is_some_and(|r| !r.is_empty()) {
        return Err(invalid(
            at,
            "helm.repository",
            "is set beside an `oci://` chart".into(),
            "write either `chart: oci://registry/path/name`, or `repository: oci://registry/path` with `chart: name`",
        ));
    }
    check_source(&source, at, "helm.repository")?;
    Ok(Some(Found::Pulled(source)))
}

/// A chart source's repository must be one kiln can pull from.
fn check_source(source: &ChartSource, at: &str, field: &str) -> Result<(), SourceStageError> {
    let ok = source.repo.starts_with("https://")
        || source.repo.starts_with("http://")
        || (source.is_oci() && source.repo.len() > "oci://".len());
    if !ok || source.name.is_empty() || source.name.contains('/') {
        return Err(invalid(
            at,
            field,
            format!(
                "`{}` with chart `{}` is not a chart kiln can pull",
                source.repo, source.name
            ),
            "name a Helm repository by its URL (https://charts.example.com, serving index.yaml) or an OCI registry path (oci://registry.example.com/charts); repository aliases (`@name`, `helm repo add`) are not read",
        ));
    }
    Ok(())
}

/// The `helmCharts:` with `repo:` of the kustomization in `dir` and of every local
/// kustomization it reaches, skipping those vendored where kustomize would pull them.
fn kustomization(
    fs: &dyn FileSystem,
    dir: &Path,
    seen: &mut BTreeSet<PathBuf>,
    found: &mut Vec<Found>,
) {
    if !seen.insert(dir.to_path_buf()) {
        return;
    }
    let Some(k) = KUSTOMIZATION_FILES
        .iter()
        .find_map(|f| read_yaml(fs, &dir.join(f)))
    else {
        return;
    };
    let home = k
        .pointer("/helmGlobals/chartHome")
        .and_then(Value::as_str)
        .filter(|h| !h.is_empty())
        .unwrap_or(kiln_kustomize::types::helmchartargs::DEFAULT_CHART_HOME);
    for chart in k
        .get("helmCharts")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let field = |f: &str| {
            chart
                .get(f)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        let source = ChartSource {
            repo: field("repo"),
            name: field("name"),
            version: field("version"),
        };
        if source.repo.is_empty() || source.name.is_empty() {
            continue;
        }
        let mut home = dir.join(home);
        if !source.version.is_empty() {
            home = home.join(format!("{}-{}", source.name, source.version));
        }
        if fs.is_dir(&home.join(&source.name)) {
            continue;
        }
        found.push(Found::Pulled(source));
    }
    for list in ["resources", "components", "bases"] {
        for entry in k.get(list).and_then(Value::as_array).into_iter().flatten() {
            let Some(entry) = entry.as_str() else {
                continue;
            };
            if entry.contains("://") || entry.contains('?') {
                continue;
            }
            let sub = crate::fs::normalize(&dir.join(entry));
            if fs.is_dir(&sub) {
                kustomization(fs, &sub, seen, found);
            }
        }
    }
}

/// The request that fetches `source`.
fn request(source: &ChartSource, u: &Use) -> Request {
    let mut names: Vec<String> = u.names.iter().cloned().collect();
    names.push(source.name.clone());
    if source.is_oci() {
        Request {
            kind: Kind::Oci,
            url: source.oci_reference(),
            chart: String::new(),
            requested: source.version.clone(),
            needed_by: u.needed_by.clone(),
            names,
            git: Default::default(),
        }
    } else {
        Request {
            kind: Kind::Helm,
            url: source.repo.clone(),
            chart: source.name.clone(),
            requested: source.version.clone(),
            needed_by: u.needed_by.clone(),
            names,
            git: Default::default(),
        }
    }
}

fn pull(
    fetcher: &Fetcher<'_>,
    source: &ChartSource,
    u: &Use,
) -> Result<PulledChart, SourceStageError> {
    let got = fetcher.fetch(&request(source, u))?;
    let dir = got.chart_dir.clone().unwrap_or_else(|| got.root.clone());
    Ok(PulledChart {
        entry: got.entry,
        root: got.root,
        dir,
    })
}

/// The dependencies of the chart in `dir` to pull: those `Chart.yaml` (or a v1 chart's
/// `requirements.yaml`) lists from an `https://`, `http://` or `oci://` repository that
/// `charts/` does not hold, at `Chart.lock`'s versions (`requirements.lock` for v1); each
/// with the `file:line:column` that lists it.
fn dependencies(
    fs: &dyn FileSystem,
    dir: &Path,
    u: &Use,
) -> Result<Vec<(ChartSource, String)>, SourceStageError> {
    let Some((meta, meta_spans)) = read_yaml_spans(fs, &dir.join("Chart.yaml")) else {
        return Ok(Vec::new());
    };
    let v1 = meta.get("apiVersion").and_then(Value::as_str) == Some("v1");
    let (deps, lock_file, (listed, spans)) = if v1 {
        let file = dir.join("requirements.yaml");
        let (r, spans) = read_yaml_spans(fs, &file).unzip();
        (
            r.and_then(|r| r.get("dependencies").cloned()),
            "requirements.lock",
            (file, spans),
        )
    } else {
        (
            meta.get("dependencies").cloned(),
            "Chart.lock",
            (dir.join("Chart.yaml"), Some(meta_spans)),
        )
    };
    let listed = listed.display().to_string();
    let deps: Vec<Value> = deps.and_then(|d| d.as_array().cloned()).unwrap_or_default();
    if deps.is_empty() {
        return Ok(Vec::new());
    }
    let lock = read_yaml(fs, &dir.join(lock_file));
    let locked: Vec<Value> = lock
        .as_ref()
        .and_then(|l| l.get("dependencies"))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let at = format!(
        "{} (chart of {})",
        dir.join("Chart.yaml").display(),
        u.needed_by
    );
    let str_of = |v: &Value, k: &str| {
        v.get(k)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    let mut out = Vec::new();
    for (i, d) in deps.iter().enumerate() {
        let name = str_of(d, "name");
        let repo = str_of(d, "repository");
        let constraint = str_of(d, "version");
        if name.is_empty() || repo.is_empty() || repo.starts_with("file://") {
            continue;
        }
        if vendored(fs, dir, &name) {
            continue;
        }
        let field = format!("dependencies[{i}].repository");
        if repo.starts_with('@') || repo.starts_with("alias:") {
            return Err(invalid(
                &at,
                &field,
                format!("`{repo}` names a repository by its `helm repo add` alias"),
                "kiln reads no Helm repository configuration: write the repository's URL, or vendor the dependency under charts/",
            ));
        }
        // `Chart.lock` pins the version when it lists this dependency from this repository
        // and the version still satisfies `Chart.yaml` (else Helm calls the lock out of sync).
        let pinned = locked
            .iter()
            .find(|l| str_of(l, "name") == name && str_of(l, "repository") == repo)
            .map(|l| str_of(l, "version"));
        let version = match pinned {
            Some(v) if satisfies(&constraint, &v) => v,
            _ if lock.is_some() => {
                return Err(invalid(
                    &at,
                    &format!("dependencies[{i}]"),
                    format!(
                        "`{name}` {constraint} from {repo}: {lock_file} is out of sync with {}",
                        if v1 {
                            "requirements.yaml"
                        } else {
                            "Chart.yaml"
                        }
                    ),
                    "Helm refuses such a chart too: run `helm dependency update` in the chart, or remove its lock to resolve the constraints",
                ));
            }
            _ => constraint,
        };
        let source = ChartSource {
            repo: repo.trim_end_matches('/').to_string(),
            name,
            version,
        };
        check_source(&source, &at, &field)?;
        let line = match &spans {
            Some(spans) => line_of(&listed, spans, &format!("/dependencies/{i}")),
            None => listed.clone(),
        };
        out.push((source, line));
    }
    Ok(out)
}

/// Whether `version` satisfies `constraint` (Masterminds semver, as Helm's resolver checks
/// `Chart.lock` against `Chart.yaml`); an empty constraint admits everything.
fn satisfies(constraint: &str, version: &str) -> bool {
    use kiln_helm::sprig::semver::{Constraints, Version};
    if constraint.is_empty() || constraint == version {
        return true;
    }
    match (Constraints::parse(constraint), Version::parse(version)) {
        (Ok(c), Ok(v)) => c.check(&v),
        _ => false,
    }
}

/// Whether `charts/` holds `name`: a directory of that name, or an archive `name-*.tgz`
/// (what `helm dependency build` writes).
fn vendored(fs: &dyn FileSystem, dir: &Path, name: &str) -> bool {
    let charts = dir.join("charts");
    if fs.is_dir(&charts.join(name)) {
        return true;
    }
    fs.read_dir(&charts).is_ok_and(|entries| {
        entries.iter().any(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .and_then(|n| n.strip_suffix(".tgz"))
                .and_then(|n| n.strip_prefix(name))
                .is_some_and(|rest| {
                    rest.strip_prefix('-')
                        .is_some_and(|v| v.starts_with(|c: char| c.is_ascii_digit()))
                })
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chart_lock_versions_must_satisfy_chart_yaml() {
        assert!(satisfies("^1.2", "1.2.5"));
        assert!(satisfies("", "1.2.5"));
        assert!(satisfies("1.2.5", "1.2.5"));
        assert!(!satisfies("^2", "1.2.5"));
    }

    /// newcomer3's repro 10 (a): a chart whose URL holds credentials named its component but
    /// no line, where a Git source's error does.
    #[test]
    fn a_chart_field_error_names_the_line_that_declares_it() {
        let mut fs = crate::fs::MemFs::new();
        let component = "apiVersion: kiln/v1alpha1\nkind: Component\nmetadata: {name: cache}\nspec:\n  generators:\n  - helm: {chart: cache, repository: \"http://u:p@127.0.0.1:1\", version: 1.0.0}\n";
        fs.add_file("/r/d/component.yaml", component);
        let err = ChartScan::default()
            .scan_component(&fs, Path::new("/r/d"), "/r/d", (0, 0), "shop", "d")
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("/r/d/component.yaml:6:11, spec.generators[0]: `helm.repository`"),
            "{err}"
        );
    }
}
