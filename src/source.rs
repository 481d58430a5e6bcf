//! The source stage (issue 33): before load, every component instance with a `source:` is
//! resolved, fetched and verified through the source fetcher (`kiln_source`, ADR 0018), under
//! `kiln.lock` beside `platform.yaml`. Its output is the tree of each such instance
//! ([`crate::load::SourceTree`]), which load reads as it reads a local component, confined
//! to the tree; and the lock as the run leaves it, which the pipeline stores when the run
//! succeeds (never under `--locked`).
//!
//! A `ref` may hold `${env.name}`, `${env.tier}`, `${env.cluster}`, `${project.name}` and
//! `${params.*}` (the platform's, environment's, project's, instance's and instance-per-
//! environment parameters, in that order): it is expanded for each environment the instance
//! is deployed to, and each distinct (repository, commit) is fetched once. When the refs
//! differ between environments (prod follows a tag, dev `main`), each environment's tree is
//! loaded as its own component ([`SourceTree::environments`]), and the lock holds one entry
//! per ref.
//!
//! Remote kustomize bases (`resources:` and `components:` URLs in kustomize's forms, ADR
//! 0023) are found here too: every kustomization a component's `kustomize:` generator names
//! is read (local bases and fetched ones, recursively), each URL parsed as kustomize parses
//! it (`kiln_kustomize::git::RepoSpec`) and its repository fetched at its `?ref=` through the
//! same fetcher and lock. The engine then reads the fetched trees ([`Resolved::bases`]); it
//! never fetches.
//!
//! No I/O of its own: platform.yaml is read through the caller's `FileSystem`; the network,
//! the cache and the lock file are the fetcher's.

use crate::fs::FileSystem;
use crate::kustomize::git::{RemoteTree, RemoteTrees, RepoSpec};
use crate::load::SourceTree;
use crate::spec::{Parameters, PlatformFile};
use kiln_source::fetch::Kind;
use kiln_source::{Fetcher, LockEntry, LockFile, Request, SourceError};
use miette::Diagnostic;
use serde::Deserialize;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use thiserror::Error;

pub mod charts;

pub use kiln_source::Mode;
pub use kiln_source::archive::{DEFAULT_TIMEOUT, Limits};
pub use kiln_source::git::Callbacks;
pub use kiln_source::http::Credentials;

/// How the source stage runs (the CLI builds it from its flags and the environment).
#[derive(Debug, Clone, Default)]
pub struct SourceOptions {
    /// The cache's base directory (`KILN_CACHE_DIR`, else `$XDG_CACHE_HOME/kiln`); `None`:
    /// a platform with remote sources is refused.
    pub cache_dir: Option<PathBuf>,
    /// Registry and chart repository credentials.
    pub credentials: Credentials,
    /// Size limits.
    pub limits: Limits,
    /// `--locked`, `--offline`, `kiln update`.
    pub mode: Mode,
    /// `--source-ref NAME=REF`: the ref a component instance (by its name, or its
    /// repository's) is previewed at, in every environment; the lock is then never stored.
    pub refs: BTreeMap<String, String>,
}

/// Why the source stage failed. Codes `kiln::source::*` (the fetcher's) and these.
#[derive(Debug, Error, Diagnostic)]
pub enum SourceStageError {
    #[error(transparent)]
    #[diagnostic(transparent)]
    Fetch(#[from] SourceError),

    #[error("{at}: `{field}` {problem}")]
    #[diagnostic(code(kiln::source::invalid), help("{help}"))]
    Invalid {
        at: String,
        field: String,
        problem: String,
        help: String,
    },

    #[error("{at}: a component comes from `{url}`, but no source cache is configured")]
    #[diagnostic(
        code(kiln::source::no_cache),
        help(
            "the CLI uses $XDG_CACHE_HOME/kiln (or KILN_CACHE_DIR); a library caller sets SourceOptions::cache_dir"
        )
    )]
    NoCache { at: String, url: String },

    /// Several sources failed: each is reported, not only the first.
    #[error(transparent)]
    #[diagnostic(transparent)]
    Many(kiln_base::diag::Errors<SourceStageError>),

    /// `kiln update NAME` or `--source-ref NAME=REF` names no source of the platform.
    #[error("no source of {platform} is named `{name}`")]
    #[diagnostic(code(kiln::source::unknown_name))]
    UnknownName {
        platform: String,
        name: String,
        #[help]
        help: String,
    },

    /// A repository's name (`cart` for `…/cart.git`) that several repositories share.
    #[error("`{name}` is the name of {count} repositories of {platform}:{list}")]
    #[diagnostic(
        code(kiln::source::ambiguous_name),
        help(
            "name the component instead (its `name:`, else its `metadata.name`), or the repository's URL"
        )
    )]
    AmbiguousName {
        platform: String,
        name: String,
        count: usize,
        list: String,
    },

    #[error("{count} sources are not in the cache, and `--offline` forbids fetching them:{list}")]
    #[diagnostic(
        code(kiln::source::not_cached),
        help("run once without `--offline` (or `kiln update`) to fill the cache")
    )]
    NotCached { count: usize, list: String },
}

/// What the source stage produced.
#[derive(Debug, Clone, Default)]
pub struct Resolved {
    /// Each instance's tree, by (project index, instance index).
    pub trees: BTreeMap<(usize, usize), SourceTree>,
    /// Every remote source used, as locked (for the publish trailers).
    pub used: Vec<LockEntry>,
    /// The app repository commit each (project, environment, component) is rendered from,
    /// so publish records it per cell (`Kiln-App-Commit: <project>/<env>/<component> …`).
    pub cells: BTreeMap<(String, String, String), LockEntry>,
    /// The lock as this run leaves it; `None` when the platform has no remote source.
    pub lock: Option<LockFile>,
    /// Where the lock lives.
    pub lock_path: PathBuf,
    /// Whether the lock must be written (it differs from the file).
    pub lock_changed: bool,
    /// How the lock differs from the file, per source (moved, added, removed; a moved tag
    /// marked), for `kiln update`'s report.
    pub changes: Vec<kiln_source::lock::Change>,
    /// Every chart pulled from a repository or registry (the `helm` generator's and
    /// kustomize's `helmCharts[].repo`), by source, with its chart dependencies.
    pub charts: charts::Charts,
    /// A preview (`--source-ref`): the lock is not stored.
    pub preview: bool,
    /// The fetched tree of every remote kustomize base, by the entry as written (for the
    /// engine's `BuildOptions::remotes`).
    pub bases: Arc<RemoteTrees>,
    /// `platform.yaml` and every local `component.yaml` as this stage parsed them, for load
    /// to take instead of parsing them again ([`crate::load::LoadOptions::parsed`]).
    pub parsed: Arc<crate::load::Parsed>,
}

impl Resolved {
    /// The tree roots, for the render's rooted file system.
    pub fn roots(&self) -> Vec<PathBuf> {
        let set: BTreeSet<PathBuf> = self
            .trees
            .values()
            .flat_map(|t| std::iter::once(t).chain(t.environments.values()))
            .map(|t| t.root.clone())
            .chain(self.bases.values().map(|b| b.root.clone()))
            .chain(self.charts.pulled.values().map(|c| c.root.clone()))
            .chain(
                self.charts
                    .dependencies
                    .values()
                    .flatten()
                    .map(|c| c.root.clone()),
            )
            .collect();
        set.into_iter().collect()
    }

    /// Whether the platform names no remote source (the render journal applies only then).
    pub fn is_local(&self) -> bool {
        self.trees.is_empty()
            && self.bases.is_empty()
            && self.charts.pulled.is_empty()
            && self.charts.dependencies.is_empty()
    }

    /// The pulled charts as the kustomize engine takes them (`helmCharts[].repo`) and the
    /// `helm` generator looks them up.
    pub fn pulled_charts(&self) -> kiln_kustomize::PulledCharts {
        kiln_kustomize::PulledCharts {
            charts: self
                .charts
                .pulled
                .iter()
                .map(|(k, v)| (k.clone(), v.dir.clone()))
                .collect(),
            dependencies: self
                .charts
                .dependencies
                .iter()
                .map(|(k, v)| (k.clone(), v.iter().map(|c| c.dir.clone()).collect()))
                .collect(),
        }
    }

    /// A digest of every pulled chart (its source and content digest), part of the render
    /// cache's keys: a chart resolved to another version renders anew. Empty without pulled
    /// charts, so that the keys of a local platform's renders (full and incremental) stay as
    /// they were.
    pub fn charts_digest(&self) -> String {
        if self.charts.pulled.is_empty() && self.charts.dependencies.is_empty() {
            return String::new();
        }
        let mut text = String::new();
        for (k, v) in &self.charts.pulled {
            text.push_str(&format!(
                "{}\t{}\t{}\t{}\n",
                k.repo, k.name, k.version, v.entry.digest
            ));
        }
        for (dir, deps) in &self.charts.dependencies {
            text.push_str(&format!("{}\n", dir.display()));
            for d in deps {
                text.push_str(&format!("\t{}\n", d.entry.digest));
            }
        }
        kiln_base::digest::sha256_tagged(text.as_bytes())
    }

    /// Writes the lock when it changed (the pipeline calls this once the run succeeded).
    pub fn store_lock(&self) -> Result<(), SourceStageError> {
        if let (Some(lock), true, false) = (&self.lock, self.lock_changed, self.preview) {
            lock.store(&self.lock_path)?;
        }
        Ok(())
    }
}

/// One instance's source, as written.
struct Wanted {
    project: usize,
    instance: usize,
    /// The instance's name, the one rule render uses too: `components[].name`, else the
    /// component's `metadata.name` (known once its tree is there, see [`name_instances`]).
    name: Option<String>,
    project_name: String,
    git: String,
    reference: String,
    path: String,
    /// Where the source is written: `platforms/p/platform.yaml:14:14 (source.ref)`.
    at: String,
}

impl Wanted {
    /// The instance as messages name it: `component cart`, or, while its `metadata.name`
    /// is unknown (not fetched yet), `the component from <url>`.
    fn describe(&self) -> String {
        match &self.name {
            Some(n) => format!("component {n}"),
            None => format!("the component from `{}`", kiln_base::url::redact(&self.git)),
        }
    }
}

/// Runs the stage for the platform in `platform_dir`.
pub fn resolve(
    fs: &dyn FileSystem,
    platform_dir: &Path,
    opts: &SourceOptions,
    callbacks: Callbacks<'_>,
) -> Result<Resolved, SourceStageError> {
    let lock_path = platform_dir.join(kiln_source::lock::FILE_NAME);
    let mut out = Resolved {
        lock_path: lock_path.clone(),
        ..Resolved::default()
    };
    // A platform.yaml that does not parse is load's to report.
    let file = platform_dir.join("platform.yaml");
    let Some((text, platform)) = fs.read_to_string(&file).ok().and_then(|t| {
        let v = out.parsed.parse("platform.yaml", &t).ok()?;
        Some((t, PlatformFile::deserialize(&*v).ok()?))
    }) else {
        return Ok(out);
    };
    let mut wanted = wanted(&platform, &file.display().to_string(), &text)?;
    // Charts of local components are known before any fetch; those of fetched components
    // once their trees are there.
    let mut charts = charts::ChartScan::new(out.parsed.clone());
    charts.scan_local(fs, platform_dir, &platform)?;
    let root = crate::load::repository_root(fs, platform_dir, None)
        .unwrap_or_else(|_| platform_dir.to_path_buf());
    let local = kustomizations(
        fs,
        &root,
        platform_dir,
        &platform,
        &BTreeMap::new(),
        &out.parsed,
    );
    let local: Vec<PathBuf> = local.into_keys().collect();
    let remote_bases = has_remote_bases(fs, &root, &local);
    if wanted.is_empty() && charts.is_empty() && !remote_bases {
        return Ok(out);
    }
    let Some(cache_dir) = &opts.cache_dir else {
        let (at, url) = match wanted.first() {
            Some(w) => (
                format!("project {} {}", w.project_name, w.describe()),
                w.git.clone(),
            ),
            None if !charts.is_empty() => charts.first_use(),
            None => ("a kustomization".to_string(), "a remote base".to_string()),
        };
        return Err(SourceStageError::NoCache {
            at,
            url: kiln_base::url::redact(&url),
        });
    };
    let old = kiln_source::LockFile::read(&lock_path)?;
    // One fetcher for the run, probes included, so that each source is fetched once.
    let mut fetcher = Fetcher::new(
        kiln_source::cache::Cache::new(cache_dir),
        kiln_source::http::Http::new(opts.credentials.clone(), opts.limits),
        callbacks,
        Mode {
            update: None,
            ..opts.mode.clone()
        },
        old.clone().unwrap_or_default(),
    );
    let naming = !opts.refs.is_empty() || opts.mode.update.as_ref().is_some_and(|u| !u.is_empty());
    if naming && wanted.iter().any(|w| w.name.is_none()) {
        name_instances(fs, &platform, &fetcher, &mut wanted);
    }
    let shown = platform_dir.display().to_string();
    let selection = Selection::new(&shown, &wanted, opts)?;
    fetcher.set_update(selection.update.clone());
    out.preview = !opts.refs.is_empty();
    let misses = Misses::new(opts.mode.offline);
    // Every failing source is reported, not only the first: Git sources, charts and remote
    // bases alike, in the spec's order, once the stage has tried them all.
    let mut failed = Failures::default();
    let mut fetched_cells = Vec::new();
    for w in &wanted {
        let preview = selection.refs.get(&(w.project, w.instance));
        let found = instance_tree(&fetcher, &platform, w, preview, &mut out.used);
        match misses.note(found.map(|(tree, cells)| {
            // Keyed by the instance's name once every name is known (below).
            for (env, entry) in cells {
                fetched_cells.push((w.project, w.instance, env, entry));
            }
            tree
        })) {
            Ok(Some(tree)) => {
                out.trees.insert((w.project, w.instance), tree);
            }
            Ok(None) => {}
            Err(e) => failed.push(vec![w.project, w.instance, 0], e),
        }
    }
    for w in wanted.iter_mut().filter(|w| w.name.is_none()) {
        w.name = out
            .trees
            .get(&(w.project, w.instance))
            .and_then(|t| component_name(fs, t));
    }
    for (project, instance, env, entry) in fetched_cells {
        let Some(w) = wanted
            .iter()
            .find(|w| (w.project, w.instance) == (project, instance))
        else {
            continue;
        };
        let name = w.name.clone().unwrap_or_default();
        out.cells.insert((w.project_name.clone(), env, name), entry);
    }
    for w in &wanted {
        let Some(tree) = out.trees.get(&(w.project, w.instance)) else {
            continue;
        };
        let project = &platform.spec.projects[w.project];
        let name = w.name.clone().unwrap_or_default();
        let mut dirs: BTreeMap<&PathBuf, String> = BTreeMap::new();
        for t in std::iter::once(tree).chain(tree.environments.values()) {
            dirs.entry(&t.dir).or_insert_with(|| t.shown_dir());
        }
        for (dir, shown) in dirs {
            let at = (w.project, w.instance);
            // A field error in one fetched component is reported in the spec's order with
            // every other failure, not alone in their place.
            if let Err(e) = charts.scan_component(fs, dir, &shown, at, &project.name, &name) {
                failed.push(vec![w.project, w.instance, 1], e);
            }
        }
    }
    let chart_users = charts.instance_names();
    out.charts = charts.fetch(fs, &fetcher, &misses, &mut failed);
    let pulled = out.charts.pulled.values();
    for got in pulled.chain(out.charts.dependencies.values().flatten()) {
        if !out.used.contains(&got.entry) {
            out.used.push(got.entry.clone());
        }
    }
    // The kustomizations of the fetched components too, then every remote base they name.
    let more = kustomizations(fs, &root, platform_dir, &platform, &out.trees, &out.parsed);
    let mut bases = RemoteTrees::new();
    scan_bases(
        fs,
        &root,
        &out.roots(),
        &more,
        (&fetcher, &misses, &mut failed),
        &mut bases,
        &mut out.used,
    )?;
    out.bases = Arc::new(bases);
    failed.finish()?;
    misses.finish()?;
    selection.check_pending(&shown, &wanted, &out.used, &chart_users)?;
    // A run over the whole platform leaves only what it used; the lock shrinks with it.
    let lock = fetcher.lock_file(false);
    out.lock_changed = old.as_ref() != Some(&lock);
    out.changes = fetcher.changes(&lock);
    if out.lock_changed && opts.mode.locked {
        let e = lock
            .entries
            .values()
            .find(|e| old.as_ref().and_then(|o| o.get(&e.key())) != Some(e))
            .or_else(|| old.as_ref().and_then(|o| o.entries.values().next()));
        let origin = kiln_source::Origin::new(
            match e.map(|e| e.kind.as_str()) {
                Some("helm") => "helm",
                Some("oci") => "oci",
                _ => "git",
            },
            e.map_or("", |e| e.url.as_str()),
            e.map_or("", |e| e.requested.as_str()),
        );
        return Err(SourceError::LockOutOfDate {
            origin: Box::new(origin),
            problem: "would change (an entry no component uses any more)".into(),
        }
        .into());
    }
    out.used.sort_by_key(LockEntry::key);
    out.lock = Some(lock);
    Ok(out)
}

/// The tree (or trees, one per environment's ref) of instance `w`, its sources noted in
/// `used`, with the lock entry each environment it is deployed to renders from.
fn instance_tree(
    fetcher: &Fetcher<'_>,
    platform: &PlatformFile,
    w: &Wanted,
    preview: Option<&String>,
    used: &mut Vec<LockEntry>,
) -> Result<(SourceTree, BTreeMap<String, LockEntry>), SourceStageError> {
    let mut refs = expand_refs(platform, w)?;
    if let Some(r) = preview {
        refs.values_mut().for_each(|v| v.clone_from(r));
    }
    let distinct: BTreeSet<&String> = refs.values().collect();
    // One tree per distinct ref; the fetcher fetches each (repository, commit) once.
    let mut by_ref: BTreeMap<&String, SourceTree> = BTreeMap::new();
    let mut entries: BTreeMap<&String, LockEntry> = BTreeMap::new();
    for reference in distinct {
        let tree = fetch_component(fetcher, w, reference)?;
        if !used.contains(&tree.1) {
            used.push(tree.1.clone());
        }
        entries.insert(reference, tree.1);
        by_ref.insert(reference, tree.0);
    }
    let cells = refs
        .iter()
        .filter_map(|(env, r)| Some((env.clone(), entries.get(r)?.clone())))
        .collect();
    let mut tree = match refs.values().next().and_then(|r| by_ref.get(r)) {
        Some(t) => t.clone(),
        // Deployed nowhere: its own ref, as written.
        None => {
            let t = fetch_component(fetcher, w, &w.reference)?;
            if !used.contains(&t.1) {
                used.push(t.1);
            }
            t.0
        }
    };
    if by_ref.len() > 1 {
        tree.environments = refs
            .iter()
            .filter_map(|(env, r)| Some((env.clone(), by_ref.get(r)?.clone())))
            .collect();
    }
    Ok((tree, cells))
}

/// Gives each instance without `name:` its component's `metadata.name`, read from its tree at
/// the ref the lock (or platform.yaml) gives it, probed through the run's own fetcher
/// ([`Fetcher::probe`]: it updates nothing, and the run's fetch of the same source reuses
/// it): `kiln update NAME` and `--source-ref NAME=REF` must know the names before the run's
/// own fetches. A source that cannot be fetched stays unnamed here; the run's fetch reports
/// why.
fn name_instances(
    fs: &dyn FileSystem,
    platform: &PlatformFile,
    fetcher: &Fetcher<'_>,
    wanted: &mut [Wanted],
) {
    for w in wanted.iter_mut().filter(|w| w.name.is_none()) {
        let reference = expand_refs(platform, w)
            .ok()
            .and_then(|refs| refs.values().next().cloned())
            .unwrap_or_else(|| w.reference.clone());
        w.name = fetch_component_with(fetcher, w, &reference, Fetcher::probe)
            .ok()
            .and_then(|(tree, _)| component_name(fs, &tree));
    }
}

/// The `metadata.name` of the component in `tree`.
fn component_name(fs: &dyn FileSystem, tree: &SourceTree) -> Option<String> {
    let rooted = crate::fs::RootedFs::new(fs, tree.root.clone());
    component_name_in(&rooted, &tree.dir, &crate::load::Parsed::default())
}

/// The `metadata.name` of the component in `dir` (`None` when it cannot be read: load
/// reports why).
pub(crate) fn component_name_in(
    fs: &dyn FileSystem,
    dir: &Path,
    parsed: &crate::load::Parsed,
) -> Option<String> {
    let text = fs.read_to_string(&dir.join("component.yaml")).ok()?;
    let doc = parsed.parse("component.yaml", &text).ok()?;
    Some(doc.pointer("/metadata/name")?.as_str()?.to_string())
}

/// What `kiln update NAME…` and `--source-ref NAME=REF` name, resolved against the
/// platform's sources by one rule (docs/sources.md): a component instance by its name (as
/// render names it: `name:`, else the component's `metadata.name`), else a repository by its
/// URL, else by its name (`cart` for `…/shop/cart.git`) when only one repository has it; for
/// `kiln update`, also a chart by its name or URL, and a remote kustomize base by its
/// repository's URL or name. A name that matches nothing is an error, never a silent no-op.
struct Selection {
    /// The fetcher's `Mode::update`: the instance names as given, plus the URL of each
    /// repository named by its name.
    update: Option<BTreeSet<String>>,
    /// `--source-ref`: the ref of each instance, by (project, instance).
    refs: BTreeMap<(usize, usize), String>,
    /// `kiln update` names that name no component instance or repository of one: charts and
    /// remote bases, known once fetched ([`Selection::check_pending`]).
    pending: Vec<String>,
}

impl Selection {
    fn new(
        platform: &str,
        wanted: &[Wanted],
        opts: &SourceOptions,
    ) -> Result<Selection, SourceStageError> {
        let mut selection = Selection {
            update: None,
            refs: BTreeMap::new(),
            pending: Vec::new(),
        };
        for (name, reference) in &opts.refs {
            let found = instances_named(platform, wanted, name)?;
            if found.is_empty() {
                return Err(unknown_name(platform, name, wanted, &[]));
            }
            for w in found {
                selection
                    .refs
                    .insert((w.project, w.instance), reference.clone());
            }
        }
        if let Some(names) = &opts.mode.update {
            let mut update = BTreeSet::new();
            for name in names {
                update.insert(name.clone());
                let found = instances_named(platform, wanted, name)?;
                if found.is_empty() {
                    selection.pending.push(name.clone());
                } else if found
                    .iter()
                    .all(|w| w.name.as_deref() != Some(name.as_str()))
                {
                    // A repository (by its name or URL): every instance from it, by URL.
                    update.extend(found.iter().map(|w| w.git.clone()));
                }
            }
            selection.update = Some(update);
        }
        Ok(selection)
    }

    /// Fails for a `kiln update` name that matched no source once every source is known.
    fn check_pending(
        &self,
        platform: &str,
        wanted: &[Wanted],
        used: &[LockEntry],
        chart_users: &BTreeSet<String>,
    ) -> Result<(), SourceStageError> {
        for name in &self.pending {
            let known = used.iter().any(|e| {
                &e.url == name
                    || chart_name(e) == Some(name.as_str())
                    || (e.kind == "git" && &repo_name(&e.url) == name)
            }) || chart_users.contains(name)
                || wanted.iter().any(|w| w.name.as_ref() == Some(name));
            if !known {
                return Err(unknown_name(platform, name, wanted, used));
            }
        }
        Ok(())
    }
}

/// The instances `name` names: by instance name, else by repository URL, else by repository
/// name when one repository has it (several: [`SourceStageError::AmbiguousName`]).
fn instances_named<'w>(
    platform: &str,
    wanted: &'w [Wanted],
    name: &str,
) -> Result<Vec<&'w Wanted>, SourceStageError> {
    let by_name: Vec<&Wanted> = wanted
        .iter()
        .filter(|w| w.name.as_deref() == Some(name))
        .collect();
    if !by_name.is_empty() {
        return Ok(by_name);
    }
    let urls: BTreeSet<&str> = wanted
        .iter()
        .filter(|w| w.git == name || repo_name(&w.git) == name)
        .map(|w| w.git.as_str())
        .collect();
    if urls.len() > 1 {
        return Err(SourceStageError::AmbiguousName {
            platform: platform.to_string(),
            name: name.to_string(),
            count: urls.len(),
            list: urls
                .iter()
                .map(|u| format!("\n- {}", kiln_base::url::redact(u)))
                .collect(),
        });
    }
    Ok(wanted
        .iter()
        .filter(|w| urls.contains(w.git.as_str()))
        .collect())
}

/// The error for a name no source has: a did-you-mean, and every source by name.
fn unknown_name(
    platform: &str,
    name: &str,
    wanted: &[Wanted],
    used: &[LockEntry],
) -> SourceStageError {
    let mut known: BTreeMap<String, String> = BTreeMap::new();
    for w in wanted {
        let url = kiln_base::url::redact(&w.git);
        match &w.name {
            Some(n) => known.insert(n.clone(), url),
            None => known.insert(repo_name(&w.git), url),
        };
    }
    for e in used {
        if let Some(chart) = chart_name(e) {
            known
                .entry(chart.to_string())
                .or_insert_with(|| format!("chart from {}", kiln_base::url::redact(&e.url)));
        }
    }
    let candidates = known
        .keys()
        .map(String::as_str)
        .chain(wanted.iter().map(|w| w.git.as_str()));
    let list: Vec<String> = known.iter().map(|(n, u)| format!("`{n}` ({u})")).collect();
    let help = match (
        kiln_base::diag::did_you_mean(name, candidates),
        list.is_empty(),
    ) {
        (_, true) => "the platform has no remote source".to_string(),
        (Some(m), false) => format!("did you mean `{m}`? sources: {}", list.join(", ")),
        (None, false) => format!("sources: {}", list.join(", ")),
    };
    SourceStageError::UnknownName {
        platform: platform.to_string(),
        name: name.to_string(),
        help,
    }
}

/// Under `--offline`, every source missing from the cache is named at once (issue 33, item
/// 4): a miss is noted and the stage goes on without that source (nothing is rendered from
/// it), then fails naming them all ([`Misses::finish`]).
pub(crate) struct Misses {
    offline: bool,
    missing: std::cell::RefCell<Vec<SourceError>>,
}

impl Misses {
    fn new(offline: bool) -> Misses {
        Misses {
            offline,
            missing: Default::default(),
        }
    }

    /// `Ok(None)` for a source missing from the cache under `--offline` (noted); the result
    /// otherwise.
    fn note<T>(&self, r: Result<T, SourceStageError>) -> Result<Option<T>, SourceStageError> {
        match r {
            Ok(v) => Ok(Some(v)),
            Err(SourceStageError::Fetch(e @ SourceError::NotCached { .. })) if self.offline => {
                self.missing.borrow_mut().push(e);
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }

    /// The error naming every missing source: the source's own when it is the only one.
    fn finish(self) -> Result<(), SourceStageError> {
        let mut missing = self.missing.into_inner();
        match missing.len() {
            0 => Ok(()),
            1 => Err(missing.remove(0).into()),
            count => Err(SourceStageError::NotCached {
                count,
                list: missing
                    .iter_mut()
                    .filter_map(|e| e.origin_mut().map(|o| format!("\n- {o}")))
                    .collect(),
            }),
        }
    }
}

/// Where a source stands in the spec, the order its failure is reported in: the project's
/// and the instance's indexes, then `0` for the instance's own `source:`, or `1`, the
/// generator's index and the chart's (or remote base's) among those it reaches.
pub(crate) type Order = Vec<usize>;

/// The sources that failed, each at its place in the spec ([`Order`]).
#[derive(Default)]
pub(crate) struct Failures(Vec<(Order, SourceStageError)>);

impl Failures {
    pub(crate) fn push(&mut self, order: Order, e: SourceStageError) {
        self.0.push((order, e));
    }

    /// `Ok` when nothing failed; else every failure in the spec's order, one per cause (a
    /// source several components need is reported at the first), the one error itself when
    /// it is alone.
    fn finish(self) -> Result<(), SourceStageError> {
        let mut all = self.0;
        all.sort_by(|a, b| a.0.cmp(&b.0));
        let mut causes = BTreeSet::new();
        let mut failed: Vec<SourceStageError> = Vec::new();
        for (_, mut e) in all {
            let cause = match &mut e {
                SourceStageError::Fetch(f) => f
                    .origin_mut()
                    .map(|o| (o.kind, o.url.clone(), o.requested.clone())),
                _ => None,
            };
            if cause.is_none_or(|c| causes.insert(c)) {
                failed.push(e);
            }
        }
        match failed.len() {
            0 => Ok(()),
            1 => Err(failed.remove(0)),
            _ => Err(SourceStageError::Many(kiln_base::diag::Errors::new(failed))),
        }
    }
}

/// Every instance with a `source:`, checked.
fn wanted(
    platform: &PlatformFile,
    file: &str,
    text: &str,
) -> Result<Vec<Wanted>, SourceStageError> {
    let spans = kiln_base::yaml::SpanIndex::build(text);
    let mut out = Vec::new();
    for (p, project) in platform.spec.projects.iter().enumerate() {
        for (i, inst) in project.components.iter().enumerate() {
            let Some(src) = &inst.source else { continue };
            let name = inst.name.clone();
            let at = format!(
                "platform.yaml, project {} {}",
                project.name,
                match &name {
                    Some(n) => format!("component {n}"),
                    None => format!("the component from `{}`", kiln_base::url::redact(&src.git)),
                }
            );
            // Each error names the line of its field, as a fetch error does (below).
            let invalid = |field: &str, problem: String, help: &str| {
                let pointer = format!(
                    "/spec/projects/{p}/components/{i}/{}",
                    field.replace('.', "/")
                );
                SourceStageError::Invalid {
                    at: match spans.find(0, &pointer, false) {
                        Some(l) => format!("{file}:{}:{}, {at}", l.line, l.column),
                        None => at.clone(),
                    },
                    field: field.into(),
                    problem,
                    help: help.into(),
                }
            };
            if !inst.path.is_empty() {
                return Err(invalid(
                    "path",
                    "is set beside `source`".into(),
                    "a component is either local (`path`) or in another repository (`source`); keep one",
                ));
            }
            if kiln_base::url::has_credentials(&src.git) {
                return Err(invalid(
                    "source.git",
                    format!("`{}` holds credentials", kiln_base::url::redact(&src.git)),
                    "keep credentials out of platform.yaml: KILN_GIT_USERNAME/KILN_GIT_PASSWORD, a credential helper or an ssh agent",
                ));
            }
            let path = src.path.trim_matches('/').to_string();
            if !path.is_empty() && kiln_source::archive::safe_relative(Path::new(&path)).is_none() {
                return Err(invalid(
                    "source.path",
                    format!("`{path}` leaves the repository"),
                    "`source.path` is a folder inside the repository, relative to its root",
                ));
            }
            // The field a fetch failure is about: the ref (or the URL when no ref is given).
            let (field, pointer) = match src.reference.is_empty() {
                true => (
                    "source.git",
                    format!("/spec/projects/{p}/components/{i}/source/git"),
                ),
                false => (
                    "source.ref",
                    format!("/spec/projects/{p}/components/{i}/source/ref"),
                ),
            };
            let at = match spans.find(0, &pointer, false) {
                Some(l) => format!("{file}:{}:{} (`{field}`)", l.line, l.column),
                None => format!("{file} (`{field}`)"),
            };
            out.push(Wanted {
                at,
                project: p,
                instance: i,
                name,
                project_name: project.name.clone(),
                git: src.git.clone(),
                reference: src.reference.clone(),
                path,
            });
        }
    }
    Ok(out)
}

/// The ref `w.reference` names in each environment the instance is deployed to, by
/// environment name, in the platform's order of environments.
fn expand_refs(
    platform: &PlatformFile,
    w: &Wanted,
) -> Result<indexmap::IndexMap<String, String>, SourceStageError> {
    let project = &platform.spec.projects[w.project];
    let inst = &project.components[w.instance];
    let mut refs = indexmap::IndexMap::new();
    for env in &platform.spec.environments {
        if inst
            .deploy_to
            .as_ref()
            .is_some_and(|d| !d.admits(&env.name, &env.tier, &env.cluster))
        {
            continue;
        }
        if !w.reference.contains("${") {
            refs.insert(env.name.clone(), w.reference.clone());
            continue;
        }
        let mut params: Parameters = platform.spec.parameters.clone();
        for layer in [&env.parameters, &project.parameters, &inst.parameters] {
            params.extend(layer.iter().map(|(k, v)| (k.clone(), v.clone())));
        }
        if let Some(e) = inst.environments.get(&env.name) {
            params.extend(e.parameters.iter().map(|(k, v)| (k.clone(), v.clone())));
        }
        let lookup = |name: &str| -> Option<String> {
            let v = match name.split_once('.') {
                Some(("env", "name")) => Value::String(env.name.clone()),
                Some(("env", "tier")) => Value::String(env.tier.clone()),
                Some(("env", "cluster")) => Value::String(env.cluster.clone()),
                Some(("project", "name")) => Value::String(project.name.clone()),
                Some(("params", key)) => params.get(key)?.clone(),
                _ => return None,
            };
            match v {
                Value::String(s) => Some(s),
                Value::Number(n) => Some(n.to_string()),
                Value::Bool(b) => Some(b.to_string()),
                _ => None,
            }
        };
        if kiln_base::reference::unterminated(&w.reference).is_some() {
            return Err(bad_ref(w, "has an unclosed `${`"));
        }
        let mut unknown = None;
        let out = kiln_base::reference::replace(&w.reference, |r| {
            let v = lookup(r.name());
            if v.is_none() {
                unknown.get_or_insert_with(|| r.raw.to_string());
            }
            v
        });
        if let Some(name) = unknown {
            return Err(bad_ref(
                w,
                &format!(
                    "names `${{{name}}}`, which is not a string in environment {}",
                    env.name
                ),
            ));
        }
        refs.insert(env.name.clone(), out);
    }
    Ok(refs)
}

fn bad_ref(w: &Wanted, problem: &str) -> SourceStageError {
    SourceStageError::Invalid {
        at: format!("platform.yaml, project {} {}", w.project_name, w.describe()),
        field: "source.ref".into(),
        problem: problem.into(),
        help: "a ref may hold ${env.name}, ${env.tier}, ${env.cluster}, ${project.name} and ${params.<name>} (a string parameter)".into(),
    }
}

/// A repository's name: the last part of its URL, without `.git` (`shop/cart.git` → `cart`).
fn repo_name(url: &str) -> String {
    let last = url
        .trim_end_matches('/')
        .rsplit(['/', ':'])
        .next()
        .unwrap_or(url);
    last.trim_end_matches(".git").to_string()
}

/// The name of the chart a lock entry holds, as `kiln update NAME` takes it: a Helm
/// repository's `chart`, or the last part of an OCI reference (`oci://host/charts/web` is
/// `web`: the lock keeps an OCI chart by its reference alone, and without this its name was
/// refused as no source's). `None` for a Git source.
fn chart_name(e: &LockEntry) -> Option<&str> {
    match e.kind.as_str() {
        "oci" => e.url.rsplit('/').next().filter(|n| !n.is_empty()),
        _ => Some(e.chart.as_str()).filter(|c| !c.is_empty()),
    }
}

/// A source as publish records it (`Kiln-App-Commit`, read by `kiln status` and `kiln
/// history`): `<url>[#<chart>]@<commit or digest>`, the URL without credentials.
pub fn trailer_value(e: &LockEntry) -> String {
    let chart = if e.chart.is_empty() {
        String::new()
    } else {
        format!("#{}", e.chart)
    };
    format!("{}{chart}@{}", kiln_base::url::redact(&e.url), e.resolved)
}

/// Fetches `w`'s repository at `reference`: its tree, and its lock entry.
fn fetch_component(
    fetcher: &Fetcher<'_>,
    w: &Wanted,
    reference: &str,
) -> Result<(SourceTree, LockEntry), SourceStageError> {
    fetch_component_with(fetcher, w, reference, Fetcher::fetch)
}

/// [`fetch_component`] through `how` ([`Fetcher::fetch`] or [`Fetcher::probe`]).
fn fetch_component_with<'f, 'a>(
    fetcher: &'f Fetcher<'a>,
    w: &Wanted,
    reference: &str,
    how: fn(&'f Fetcher<'a>, &Request) -> Result<kiln_source::fetch::Fetched, SourceError>,
) -> Result<(SourceTree, LockEntry), SourceStageError> {
    let req = Request {
        kind: Kind::Git,
        url: w.git.clone(),
        chart: String::new(),
        requested: reference.to_string(),
        needed_by: format!("{} (project {}) at {}", w.describe(), w.project_name, w.at),
        // `kiln update NAME`: the instance's name ([`Selection`] turns the repository's name
        // into its URL, which selects it too).
        names: w.name.iter().cloned().collect(),
        // A component's tree leaves its submodules out, and its fetch is not bounded.
        git: Default::default(),
    };
    let got = how(fetcher, &req)?;
    let root = got.root.clone();
    let dir = if w.path.is_empty() {
        root.clone()
    } else {
        root.join(&w.path)
    };
    let short = &got.entry.resolved[..got.entry.resolved.len().min(12)];
    // Errors name the ref the user gave (`v1.2.0`, `main`), else the commit: a ref not
    // expanded (an instance deployed nowhere) names nothing one could check out.
    let shown_ref = if reference.is_empty() || reference.contains("${") {
        short
    } else {
        reference
    };
    let tree = SourceTree {
        root,
        dir,
        label: format!("{}@{short}/{}", kiln_base::url::redact(&w.git), w.path),
        shown_root: format!("{}@{shown_ref}:", kiln_base::url::redact(&w.git)),
        environments: BTreeMap::new(),
    };
    Ok((tree, got.entry))
}

/// The kustomization directories the components' `kustomize:` generators name (paths
/// without references): local components' (inside `root`) and, from `trees`, fetched ones';
/// each with where its first use stands in the spec.
fn kustomizations(
    fs: &dyn FileSystem,
    root: &Path,
    platform_dir: &Path,
    platform: &PlatformFile,
    trees: &BTreeMap<(usize, usize), SourceTree>,
    parsed: &crate::load::Parsed,
) -> BTreeMap<PathBuf, Order> {
    let mut dirs: BTreeMap<PathBuf, Order> = BTreeMap::new();
    let mut component_dirs = Vec::new();
    let platform_dir = fs
        .canonicalize(platform_dir)
        .unwrap_or_else(|_| platform_dir.to_path_buf());
    for (p, project) in platform.spec.projects.iter().enumerate() {
        for (i, inst) in project.components.iter().enumerate() {
            match trees.get(&(p, i)) {
                Some(t) => {
                    component_dirs.push(((p, i), t.root.clone(), t.dir.clone()));
                    for e in t.environments.values() {
                        component_dirs.push(((p, i), e.root.clone(), e.dir.clone()));
                    }
                }
                None if !inst.path.is_empty() => {
                    let dir = platform_dir.join(&inst.path);
                    component_dirs.push(((p, i), root.to_path_buf(), dir));
                }
                None => {}
            }
        }
    }
    // Each component.yaml read on rayon's pool (a platform of 10,000 components), its
    // `kustomize:` generators (index, path) noted in the spec's order below.
    let read: Vec<Vec<(usize, String)>> = {
        use rayon::prelude::*;
        component_dirs
            .par_iter()
            .map(|(_, home, dir)| {
                let rooted = crate::fs::RootedFs::new(fs, home.clone());
                let Some(doc) = rooted
                    .read_to_string(&dir.join("component.yaml"))
                    .ok()
                    .and_then(|t| parsed.parse("component.yaml", &t).ok())
                else {
                    return Vec::new();
                };
                let generators = doc.pointer("/spec/generators").and_then(Value::as_array);
                generators
                    .into_iter()
                    .flatten()
                    .enumerate()
                    .filter_map(|(n, g)| Some((n, g.get("kustomize")?.as_str()?.to_string())))
                    .collect()
            })
            .collect()
    };
    for (((p, i), _, dir), kustomize) in component_dirs.into_iter().zip(read) {
        for (n, k) in kustomize {
            // `overlays/${env.tier}`: each environment's folder. A path with other references
            // is left to the render (an unfetched remote base there is an error naming it).
            for env in &platform.spec.environments {
                let path = k
                    .replace("${env.name}", &env.name)
                    .replace("${env.tier}", &env.tier)
                    .replace("${env.cluster}", &env.cluster);
                if !path.contains("${") {
                    let order = vec![p, i, 1, n];
                    let first = dirs.entry(dir.join(path)).or_insert_with(|| order.clone());
                    if order < *first {
                        *first = order;
                    }
                }
            }
        }
    }
    dirs
}

/// The entries of the kustomization in `dir` that may name a base (`resources`, `bases`,
/// `components`), and its file's name; `None` when `dir` holds none (the engine reports it).
fn base_entries(fs: &dyn FileSystem, dir: &Path) -> Option<(String, Vec<String>)> {
    let name = crate::kustomize::types::kustomization::KUSTOMIZATION_FILE_NAMES
        .iter()
        .find(|n| fs.is_file(&dir.join(n)))?;
    let text = fs.read_to_string(&dir.join(name)).ok()?;
    let doc = crate::yaml::parse_one(name, &text).ok()?;
    let entries = ["resources", "bases", "components"]
        .iter()
        .filter_map(|k| doc.get(*k).and_then(Value::as_array))
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_string)
        .collect();
    Some((name.to_string(), entries))
}

/// Whether any of `dirs` (or a local base below them) names a remote base.
fn has_remote_bases(fs: &dyn FileSystem, root: &Path, dirs: &[PathBuf]) -> bool {
    use rayon::prelude::*;
    let rooted = crate::fs::RootedFs::new(fs, root.to_path_buf());
    let mut seen = BTreeSet::new();
    // A level of kustomizations at a time, each read on rayon's pool: one after another,
    // 10,000 components' kustomizations held one core for most of a second before any render.
    let mut level: Vec<PathBuf> = dirs.to_vec();
    while !level.is_empty() {
        let read: Vec<(PathBuf, Vec<(String, bool)>)> = level
            .par_iter()
            .filter_map(|dir| {
                let real = rooted.canonicalize(dir).ok()?;
                let entries = base_entries(&rooted, &real)
                    .map(|(_, e)| e)
                    .unwrap_or_default()
                    .into_iter()
                    .map(|e| {
                        let remote = !rooted.is_file(&real.join(&e)) && RepoSpec::parse(&e).is_ok();
                        (e, remote)
                    })
                    .collect();
                Some((real, entries))
            })
            .collect();
        let mut next = Vec::new();
        for (real, entries) in read {
            if !seen.insert(real.clone()) {
                continue;
            }
            for (e, remote) in entries {
                if remote {
                    return true;
                }
                next.push(real.join(e));
            }
        }
        level = next;
    }
    false
}

/// Walks the kustomizations in `dirs` and every base below them, fetching each remote base
/// (kustomize's URL forms) into `bases`; each kustomization is read once, so a cycle of
/// remote bases ends here and the engine reports it (with its chain) at render. A base that
/// cannot be fetched is noted in `failed`, at the place in the spec of the first component
/// that reaches it.
fn scan_bases(
    fs: &dyn FileSystem,
    root: &Path,
    trees: &[PathBuf],
    dirs: &BTreeMap<PathBuf, Order>,
    (fetcher, misses, failed): (&Fetcher<'_>, &Misses, &mut Failures),
    bases: &mut RemoteTrees,
    used: &mut Vec<LockEntry>,
) -> Result<(), SourceStageError> {
    let mut homes: Vec<PathBuf> = trees.to_vec();
    let mut seen = BTreeSet::new();
    // Popped in the spec's order: the first component to reach a base names it.
    let mut todo: Vec<(PathBuf, String, Order)> = dirs
        .iter()
        .map(|(d, o)| (d.clone(), d.display().to_string(), o.clone()))
        .collect();
    todo.sort_by(|a, b| b.2.cmp(&a.2));
    while let Some((dir, shown, order)) = todo.pop() {
        let rooted = crate::fs::RootedFs::new(fs, root.to_path_buf()).with_trees(homes.clone());
        let Ok(real) = rooted.canonicalize(&dir) else {
            continue;
        };
        if !seen.insert(real.clone()) {
            continue;
        }
        let Some((file, entries)) = base_entries(&rooted, &real) else {
            continue;
        };
        for e in entries {
            if rooted.is_file(&real.join(&e)) {
                continue;
            }
            let Ok(spec) = RepoSpec::parse(&e) else {
                todo.push((real.join(&e), format!("{shown}/{e}"), order.clone()));
                continue;
            };
            let url = spec.clone_spec();
            if kiln_base::url::has_credentials(&url) {
                return Err(SourceStageError::Invalid {
                    at: format!("{shown}/{file}"),
                    field: "resources".into(),
                    problem: format!("`{}` holds credentials", kiln_base::url::redact(&e)),
                    help: "keep credentials out of kustomizations: KILN_GIT_USERNAME/KILN_GIT_PASSWORD, a credential helper or an ssh agent".into(),
                });
            }
            let req = Request {
                kind: Kind::Git,
                url: url.clone(),
                chart: String::new(),
                requested: spec.git_ref.clone(),
                needed_by: format!(
                    "remote base `{}` (in {shown}/{file})",
                    kiln_base::url::redact(&e)
                ),
                names: vec![repo_name(&url)],
                // kustomize's clone options: the submodules (unless `?submodules=false`), and
                // `?timeout=` on the fetch (27 s when absent).
                git: kiln_source::git::Options {
                    submodules: spec.submodules,
                    timeout: Some(spec.timeout),
                },
            };
            let got = match misses.note(fetcher.fetch(&req).map_err(Into::into)) {
                Ok(Some(got)) => got,
                Ok(None) => continue,
                Err(e) => {
                    failed.push(order.clone(), e);
                    continue;
                }
            };
            let short = &got.entry.resolved[..got.entry.resolved.len().min(12)];
            bases.insert(
                e.clone(),
                RemoteTree {
                    root: got.root.clone(),
                    label: format!("{}@{short}", kiln_base::url::redact(&url)),
                },
            );
            homes.push(got.root.clone());
            todo.push((
                got.root.join(&spec.kust_root_path),
                format!(
                    "{}@{short}//{}",
                    kiln_base::url::redact(&url),
                    spec.kust_root_path
                ),
                order.clone(),
            ));
            if !used.contains(&got.entry) {
                used.push(got.entry);
            }
        }
    }
    Ok(())
}
