//! What a kiln commit says: which components, environments, Kargo and Argo CD resources changed
//! and which images they run, written as a readable subject plus machine-readable trailers
//! (git-interpret-trailers(1) syntax) that `history` parses back.
//!
//! Sits between `publish` (which builds the message from the old and new owned files) and
//! `history` (which reads it). Units are derived from artifact paths: a *component directory* is
//! a directory holding a `kustomization.yaml`; its last three segments are
//! `<project>/<environment>/<component>` (service layout; the cluster layout only adds leading
//! segments). Files under a `kargo/` or `argocd/` directory belong to the project before it.
//!
//! Invariant: the message is a pure function of its inputs (sorted maps, no clock), so identical
//! publishes produce identical commits.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde::{Deserialize, Serialize};

use super::Provenance;
use crate::artifact::ArtifactSet;

/// Trailer keys. Stable: `history` of older repositories depends on them.
pub const SOURCE_COMMIT: &str = "Kiln-Source-Commit";
pub const VERSION: &str = "Kiln-Version";
pub const SPEC_DIGEST: &str = "Kiln-Spec-Digest";
pub const ENVIRONMENT: &str = "Kiln-Environment";
pub const CHANGE: &str = "Kiln-Change";
pub const IMAGES: &str = "Kiln-Images";
/// A remote source of the render (an app repository, a chart, a remote base), as
/// `[<project>/<environment>/<component> ]<url>[#<chart>]@<commit or sha256 digest>`
/// ([`AppCommit`]); `kiln status` and `kiln history` read it.
pub const APP_COMMIT: &str = "Kiln-App-Commit";

/// Stamped by `kiln promote`'s runner and `kiln bootstrap` on every commit they make (the
/// Stage's `git-commit`, the `Initial commit` of a branch they create): `sha256:<hex>` of what
/// the commit changes against its first parent ([`change_digest`]). `history` counts such a
/// commit as kiln's only when the digest matches, so a hand commit that copies the message (or
/// amends kiln's commit) is not kiln's. Kargo's own commits carry no such trailer.
pub const PROMOTE: &str = "Kiln-Promote";

/// File names kustomize accepts for a kustomization (api/konfig/general.go
/// `RecognizedKustomizationFileNames`).
const KUSTOMIZATION_FILES: [&str; 3] = ["kustomization.yaml", "kustomization.yml", "Kustomization"];
const KARGO_DIR: &str = "kargo";
const ARGOCD_DIR: &str = "argocd";

/// Placeholder for a project or environment the path does not name.
const UNKNOWN: &str = "-";

/// What one rendered file belongs to.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Unit {
    /// Manifests of one component in one environment.
    Component {
        project: String,
        environment: String,
        component: String,
    },
    /// A project's Kargo resources.
    Kargo { project: String },
    /// A project's Argo CD Applications.
    Argocd { project: String },
    /// Anything else, named by its first path segment.
    Other { name: String },
}

impl Unit {
    /// `component web/dev/api`, `kargo web`, `argocd web`, `other README.md`.
    fn token(&self) -> String {
        match self {
            Unit::Component {
                project,
                environment,
                component,
            } => format!("component {project}/{environment}/{component}"),
            Unit::Kargo { project } => format!("kargo {project}"),
            Unit::Argocd { project } => format!("argocd {project}"),
            Unit::Other { name } => format!("other {name}"),
        }
    }

    fn parse_token(kind: &str, id: &str) -> Option<Self> {
        Some(match kind {
            "component" => parse_component_id(id)?,
            "kargo" => Unit::Kargo {
                project: id.to_string(),
            },
            "argocd" => Unit::Argocd {
                project: id.to_string(),
            },
            "other" => Unit::Other {
                name: id.to_string(),
            },
            _ => return None,
        })
    }

    /// The component name, for component units.
    pub fn component(&self) -> Option<&str> {
        match self {
            Unit::Component { component, .. } => Some(component),
            _ => None,
        }
    }

    /// The environment, for component units.
    pub fn environment(&self) -> Option<&str> {
        match self {
            Unit::Component { environment, .. } => Some(environment),
            _ => None,
        }
    }
}

impl fmt::Display for Unit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.token())
    }
}

/// One [`APP_COMMIT`] value. A component's app repository is recorded for each cell it
/// renders (its `ref` may name another commit in each environment), so a cell's audit names
/// only its own commit; sources kiln cannot tie to one cell (charts, remote bases) and every
/// source of commits made before cells were recorded name none.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct AppCommit {
    /// The (project, environment, component) rendered from it.
    pub cell: Option<Unit>,
    /// `<url>[#<chart>]@<commit or digest>`.
    pub source: String,
}

impl AppCommit {
    /// Reads a value as written; one without a leading cell is the whole publish's.
    pub fn parse(value: &str) -> AppCommit {
        let value = value.trim();
        if let Some((id, source)) = value.split_once(' ')
            && let Some(unit) = parse_component_id(id)
        {
            return AppCommit {
                cell: Some(unit),
                source: source.trim().to_string(),
            };
        }
        AppCommit {
            cell: None,
            source: value.to_string(),
        }
    }

    /// Whether it tells about a cell `keeps` keeps: the cell's own, or the whole publish's.
    pub fn concerns(&self, keeps: impl Fn(&Unit) -> bool) -> bool {
        self.cell.as_ref().is_none_or(keeps)
    }
}

impl fmt::Display for AppCommit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.cell.as_ref().and_then(component_id) {
            Some(id) => write!(f, "{id} {}", self.source),
            None => f.write_str(&self.source),
        }
    }
}

fn parse_component_id(id: &str) -> Option<Unit> {
    let mut parts = id.split('/');
    let (project, environment, component) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() || component.is_empty() {
        return None;
    }
    Some(Unit::Component {
        project: project.to_string(),
        environment: environment.to_string(),
        component: component.to_string(),
    })
}

fn component_id(unit: &Unit) -> Option<String> {
    match unit {
        Unit::Component {
            project,
            environment,
            component,
        } => Some(format!("{project}/{environment}/{component}")),
        _ => None,
    }
}

/// How a unit changed in a publish.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ChangeAction {
    Added,
    Changed,
    Removed,
}

impl ChangeAction {
    fn word(self) -> &'static str {
        match self {
            ChangeAction::Added => "added",
            ChangeAction::Changed => "changed",
            ChangeAction::Removed => "removed",
        }
    }
    fn verb(self) -> &'static str {
        match self {
            ChangeAction::Added => "add",
            ChangeAction::Changed => "update",
            ChangeAction::Removed => "remove",
        }
    }
    fn parse(word: &str) -> Option<Self> {
        match word {
            "added" => Some(Self::Added),
            "changed" => Some(Self::Changed),
            "removed" => Some(Self::Removed),
            _ => None,
        }
    }
}

/// One unit touched by a publish.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct UnitChange {
    pub action: ChangeAction,
    pub unit: Unit,
}

impl fmt::Display for UnitChange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.action.word(), self.unit)
    }
}

/// Classifies paths of one managed tree into units. Built from every path on both sides of a
/// change, so a removed component is still recognised by its old kustomization.
pub struct Classifier {
    component_dirs: BTreeSet<String>,
    /// Set for per-environment publishes, whose paths no longer name the environment.
    environment: Option<String>,
    /// Directories whose unit is known from the spec (a [`WriteLayout`]): where Kargo's
    /// promotions write each component, which holds no kustomization to recognise it by.
    known: BTreeMap<String, Unit>,
}

/// Where the Stages of a platform write each component: (branch, directory) to its unit,
/// from each Stage's `kustomize-build` steps (see `promote::Objects::write_layout`). `kiln
/// history --platform` gives it to the [`Classifier`], so a Kargo promotion into a
/// path-per-environment or branch-per-environment write repository is reported against the
/// components it changed. A directory two Stages claim for different units is left out.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WriteLayout {
    dirs: BTreeMap<(String, String), Option<Unit>>,
}

impl WriteLayout {
    /// Records that `dir` on `branch` holds `unit`.
    pub fn insert(&mut self, branch: &str, dir: &str, unit: Unit) {
        let dir = dir.trim_matches('/').trim_start_matches("./").to_string();
        self.dirs
            .entry((branch.to_string(), dir))
            .and_modify(|known| {
                if known.as_ref() != Some(&unit) {
                    *known = None;
                }
            })
            .or_insert(Some(unit));
    }

    /// The known directories of `branch`.
    pub fn for_branch(&self, branch: &str) -> BTreeMap<String, Unit> {
        self.dirs
            .iter()
            .filter(|((b, _), _)| b == branch)
            .filter_map(|((_, dir), unit)| Some((dir.clone(), unit.clone()?)))
            .collect()
    }

    pub fn is_empty(&self) -> bool {
        self.dirs.is_empty()
    }
}

impl Classifier {
    /// `paths`: all file paths (relative to the managed path) of the old and new trees.
    pub fn new<'a>(paths: impl IntoIterator<Item = &'a str>, environment: Option<&str>) -> Self {
        let paths: BTreeSet<&str> = paths.into_iter().collect();
        let mut component_dirs = BTreeSet::new();
        for path in &paths {
            let Some((dir, file)) = path.rsplit_once('/') else {
                continue;
            };
            if !KUSTOMIZATION_FILES.contains(&file) {
                continue;
            }
            let name = dir.rsplit('/').next().unwrap_or(dir);
            // A `kargo/` or `argocd/` directory with a kustomization is the project's Kargo or
            // Argo CD bundle, unless it is a real component of that name (the platform team
            // deploying Argo CD itself), which the emitter marks with `<component>.gen.yaml`.
            if (name == KARGO_DIR || name == ARGOCD_DIR)
                && !paths.contains(format!("{dir}/{name}.gen.yaml").as_str())
            {
                continue;
            }
            component_dirs.insert(dir.to_string());
        }
        Self {
            component_dirs,
            environment: environment.map(str::to_string),
            known: BTreeMap::new(),
        }
    }

    /// The same, with the directories whose unit the spec names (they win over kiln's own
    /// layout).
    pub fn with_known(mut self, known: BTreeMap<String, Unit>) -> Self {
        self.known = known;
        self
    }

    /// The unit of the deepest known directory enclosing `path`.
    pub fn known_unit(&self, path: &str) -> Option<&Unit> {
        let segments: Vec<&str> = path.split('/').collect();
        let dirs = &segments[..segments.len().saturating_sub(1)];
        (1..=dirs.len())
            .rev()
            .find_map(|depth| self.known.get(&dirs[..depth].join("/")))
    }

    /// Number of segments of the component directory enclosing `path` (the deepest one), if
    /// any.
    pub fn component_depth(&self, path: &str) -> Option<usize> {
        let segments: Vec<&str> = path.split('/').collect();
        let dirs = &segments[..segments.len().saturating_sub(1)];
        (1..=dirs.len())
            .rev()
            .find(|&depth| self.component_dirs.contains(&dirs[..depth].join("/")))
    }

    /// The unit `path` belongs to.
    pub fn classify(&self, path: &str) -> Unit {
        if let Some(unit) = self.known_unit(path) {
            return unit.clone();
        }
        let segments: Vec<&str> = path.split('/').collect();
        let dirs = &segments[..segments.len().saturating_sub(1)];
        if let Some(depth) = self.component_depth(path) {
            return self.component_unit(&dirs[..depth]);
        }
        for (i, dir) in dirs.iter().enumerate() {
            let project = if i > 0 { dirs[i - 1] } else { UNKNOWN }.to_string();
            match *dir {
                KARGO_DIR => return Unit::Kargo { project },
                ARGOCD_DIR => return Unit::Argocd { project },
                _ => {}
            }
        }
        Unit::Other {
            name: segments[0].to_string(),
        }
    }

    fn component_unit(&self, dir: &[&str]) -> Unit {
        let n = dir.len();
        let at = |back: usize| {
            if n > back {
                dir[n - 1 - back].to_string()
            } else {
                UNKNOWN.to_string()
            }
        };
        match &self.environment {
            Some(environment) => Unit::Component {
                project: at(1),
                environment: environment.clone(),
                component: at(0),
            },
            None => Unit::Component {
                project: at(2),
                environment: at(1),
                component: at(0),
            },
        }
    }
}

/// Per-unit changes between the old owned files and the new ones (`path → blob id or bytes`,
/// anything comparable). A unit is `added` when none of its files existed before, `removed`
/// when none exist after, `changed` otherwise (and only if some file differs).
pub fn unit_changes<V: PartialEq>(
    classifier: &Classifier,
    old: &BTreeMap<String, V>,
    new: &BTreeMap<String, V>,
) -> Vec<UnitChange> {
    #[derive(Default)]
    struct Seen {
        old: bool,
        new: bool,
        differs: bool,
    }
    let mut units: BTreeMap<Unit, Seen> = BTreeMap::new();
    for (path, value) in old {
        let seen = units.entry(classifier.classify(path)).or_default();
        seen.old = true;
        if new.get(path) != Some(value) {
            seen.differs = true;
        }
    }
    for (path, value) in new {
        let seen = units.entry(classifier.classify(path)).or_default();
        seen.new = true;
        if old.get(path) != Some(value) {
            seen.differs = true;
        }
    }
    units
        .into_iter()
        .filter(|(_, s)| s.differs)
        .map(|(unit, s)| UnitChange {
            action: match (s.old, s.new) {
                (false, _) => ChangeAction::Added,
                (_, false) => ChangeAction::Removed,
                _ => ChangeAction::Changed,
            },
            unit,
        })
        .collect()
}

/// One `images:` entry of a kustomization (kustomize's `types.Image`).
struct ImageEntry {
    name: String,
    new_name: Option<String>,
    new_tag: Option<String>,
    digest: Option<String>,
}

impl ImageEntry {
    /// The image reference kustomize writes for this entry: `newName` replaces the name; tag and
    /// digest are joined as `name:tag@digest`, mirroring kustomize's
    /// api/filters/imagetag/updater.go (a new tag or digest replaces both old values).
    fn reference(&self) -> String {
        let mut out = self.new_name.clone().unwrap_or_else(|| self.name.clone());
        if let Some(tag) = self.new_tag.as_deref().filter(|t| !t.is_empty()) {
            out.push(':');
            out.push_str(tag);
        }
        if let Some(digest) = self.digest.as_deref().filter(|d| !d.is_empty()) {
            out.push('@');
            out.push_str(digest);
        }
        out
    }
}

/// Image references per component, read from the `images:` of each component directory's
/// kustomization in `set`. Unparseable kustomizations contribute no images (the render wrote
/// them; `verify` is where a broken file shows up).
pub fn images_by_unit(set: &ArtifactSet, classifier: &Classifier) -> BTreeMap<Unit, Vec<String>> {
    let mut out: BTreeMap<Unit, Vec<String>> = BTreeMap::new();
    for (path, bytes) in &set.files {
        let file = path.rsplit('/').next().unwrap_or(path);
        if !KUSTOMIZATION_FILES.contains(&file) {
            continue;
        }
        let unit = classifier.classify(path);
        if !matches!(unit, Unit::Component { .. }) {
            continue;
        }
        let refs = kustomization_images(path, bytes);
        if !refs.is_empty() {
            out.entry(unit).or_default().extend(refs);
        }
    }
    out
}

/// The image references a kustomization's `images:` sets (`name:tag@digest`, as kustomize
/// writes them), in its order; none when it does not parse.
pub fn kustomization_images(path: &str, bytes: &[u8]) -> Vec<String> {
    let Ok(text) = std::str::from_utf8(bytes) else {
        return Vec::new();
    };
    let Ok(kustomization) = crate::yaml::parse_one(path, text) else {
        return Vec::new();
    };
    let Some(entries) = kustomization.get("images").and_then(|i| i.as_array()) else {
        return Vec::new();
    };
    let field = |entry: &serde_json::Value, key: &str| entry.get(key).and_then(scalar_string);
    entries
        .iter()
        .map(|entry| ImageEntry {
            name: field(entry, "name").unwrap_or_default(),
            new_name: field(entry, "newName"),
            new_tag: field(entry, "newTag"),
            digest: field(entry, "digest"),
        })
        .filter(|i| !i.name.is_empty() || i.new_name.is_some())
        .map(|i| i.reference())
        .collect()
}

/// A scalar as kustomize reads it into a string field: a tag written `1.20` or `42` is the
/// text `1.20`/`42`.
fn scalar_string(value: &serde_json::Value) -> Option<String> {
    match value {
        serde_json::Value::String(s) => Some(s.clone()),
        serde_json::Value::Number(n) => Some(n.to_string()),
        serde_json::Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// Maximum subject length before kiln falls back to a counted summary.
const SUBJECT_MAX: usize = 72;

/// Builds the commit message: a subject naming what changed, a short body listing components
/// and environments, and kiln's trailers (provenance, one `Kiln-Change` per unit, one
/// `Kiln-Images` per component that names images: the full deployed state, not just the
/// changed part, so `history --at` can answer from a single commit).
pub fn commit_message(
    changes: &[UnitChange],
    images: &BTreeMap<Unit, Vec<String>>,
    provenance: &Provenance,
    environment: Option<&str>,
) -> String {
    let mut msg = subject(changes);
    msg.push_str("\n\n");

    let components: BTreeSet<&str> = changes.iter().filter_map(|c| c.unit.component()).collect();
    let environments: BTreeSet<&str> = changes
        .iter()
        .filter_map(|c| c.unit.environment())
        .collect();
    let mut body = Vec::new();
    if !components.is_empty() {
        body.push(format!("components: {}", join(&components)));
    }
    if !environments.is_empty() {
        body.push(format!("environments: {}", join(&environments)));
    }
    if !body.is_empty() {
        // Lower-case labels: git only treats the final paragraph as trailers, and these lines
        // should not look like them to a reader either.
        msg.push_str(&body.join("\n"));
        msg.push_str("\n\n");
    }

    if let Some(source) = &provenance.source_commit {
        msg.push_str(&format!("{SOURCE_COMMIT}: {source}\n"));
    }
    msg.push_str(&format!("{VERSION}: {}\n", provenance.kiln_version));
    if let Some(digest) = &provenance.spec_digest {
        msg.push_str(&format!("{SPEC_DIGEST}: {digest}\n"));
    }
    for source in &provenance.sources {
        msg.push_str(&format!("{APP_COMMIT}: {source}\n"));
    }
    if let Some(environment) = environment {
        msg.push_str(&format!("{ENVIRONMENT}: {environment}\n"));
    }
    for change in changes {
        msg.push_str(&format!("{CHANGE}: {change}\n"));
    }
    for (unit, refs) in images {
        if let Some(id) = component_id(unit) {
            msg.push_str(&format!("{IMAGES}: {id} {}\n", refs.join(" ")));
        }
    }
    msg
}

fn join(items: &BTreeSet<&str>) -> String {
    items.iter().copied().collect::<Vec<_>>().join(", ")
}

fn subject(changes: &[UnitChange]) -> String {
    // action → name → environments (or projects, for Kargo/Argo CD)
    let mut groups: BTreeMap<(ChangeAction, String), BTreeSet<String>> = BTreeMap::new();
    for c in changes {
        let (name, scope) = match &c.unit {
            Unit::Component {
                component,
                environment,
                ..
            } => (component.clone(), environment.clone()),
            Unit::Kargo { project } => ("kargo".to_string(), project.clone()),
            Unit::Argocd { project } => ("argocd".to_string(), project.clone()),
            Unit::Other { name } => (name.clone(), String::new()),
        };
        let entry = groups.entry((c.action, name)).or_default();
        if !scope.is_empty() {
            entry.insert(scope);
        }
    }
    let parts: Vec<String> = groups
        .iter()
        .map(|((action, name), scopes)| {
            if scopes.is_empty() {
                format!("{} {name}", action.verb())
            } else {
                let scopes: Vec<&str> = scopes.iter().map(String::as_str).collect();
                format!("{} {name} ({})", action.verb(), scopes.join(", "))
            }
        })
        .collect();
    if parts.is_empty() {
        // Only the marker changed (first publish with --adopt of identical files).
        return "kiln: record ownership of published files".to_string();
    }
    let full = format!("kiln: {}", parts.join("; "));
    if full.chars().count() <= SUBJECT_MAX {
        return full;
    }
    let components: BTreeSet<&str> = changes.iter().filter_map(|c| c.unit.component()).collect();
    let environments: BTreeSet<&str> = changes
        .iter()
        .filter_map(|c| c.unit.environment())
        .collect();
    // The verb says what happened: an initial publish adds, a pure removal removes.
    let verb = if changes.iter().all(|c| c.action == changes[0].action) {
        changes[0].action.verb()
    } else {
        "update"
    };
    format!(
        "kiln: {verb} {} component{} in {} environment{} ({} changes)",
        components.len(),
        plural(components.len()),
        environments.len(),
        plural(environments.len()),
        changes.len()
    )
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// kiln's trailers parsed back from a commit message.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct KilnTrailers {
    pub source_commit: Option<String>,
    pub kiln_version: String,
    pub spec_digest: Option<String>,
    pub environment: Option<String>,
    pub changes: Vec<UnitChange>,
    /// Image references per component unit (the whole published state).
    pub images: BTreeMap<Unit, Vec<String>>,
    /// The remote sources rendered (`Kiln-App-Commit`), as written.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub app_commits: Vec<String>,
}

/// Parses kiln's trailers; `None` when the message has no `Kiln-Version` trailer (not a kiln
/// commit). Unknown or malformed `Kiln-*` lines are skipped, so newer kilns' extra trailers do
/// not break older readers.
pub fn parse_message(message: &str) -> Option<KilnTrailers> {
    let trailers = git2::message_trailers_strs(message).ok()?;
    let mut out = KilnTrailers::default();
    let mut is_kiln = false;
    for (key, value) in trailers.iter() {
        let value = value.trim();
        match key {
            VERSION => {
                is_kiln = true;
                out.kiln_version = value.to_string();
            }
            SOURCE_COMMIT => out.source_commit = Some(value.to_string()),
            SPEC_DIGEST => out.spec_digest = Some(value.to_string()),
            APP_COMMIT => out.app_commits.push(value.to_string()),
            ENVIRONMENT => out.environment = Some(value.to_string()),
            CHANGE => {
                let mut words = value.split_whitespace();
                if let (Some(action), Some(kind), Some(id)) =
                    (words.next(), words.next(), words.next())
                    && let (Some(action), Some(unit)) =
                        (ChangeAction::parse(action), Unit::parse_token(kind, id))
                {
                    out.changes.push(UnitChange { action, unit });
                }
            }
            IMAGES => {
                let mut words = value.split_whitespace();
                if let Some(unit) = words.next().and_then(parse_component_id) {
                    out.images
                        .entry(unit)
                        .or_default()
                        .extend(words.map(str::to_string));
                }
            }
            _ => {}
        }
    }
    is_kiln.then_some(out)
}

/// `sha256:<hex>` of what `tree` changes against `parent` (`None`: the empty tree): one
/// `<new blob id> <path>` line per changed path (a deleted path's id is zero), sorted, so it
/// depends on the change only, not on the rest of the tree (a rebase that replays the change
/// elsewhere keeps it). Deterministic: no rename detection, byte order. The lines are what
/// libgit2's `diff_tree_to_tree` (default options) reports, which stamps made before this
/// walk used (`change_lines`).
pub fn change_digest(
    repo: &git2::Repository,
    parent: Option<&git2::Tree<'_>>,
    tree: &git2::Tree<'_>,
) -> Result<String, git2::Error> {
    let mut lines = Vec::new();
    change_lines(repo, parent, Some(tree), "", &mut lines)?;
    Ok(digest_of_lines(lines))
}

/// [`change_digest`] of a commit whose whole change lies in the folder `folder` (`""`: the
/// root), from the folder's trees before and after alone (`None`: no folder there): equal to
/// the commit's digest exactly when the commit changed nothing outside the folder, since any
/// other path adds a line. `kiln status` checks a write's stamp with it without reading the
/// rest of the commit's tree.
pub fn folder_change_digest(
    repo: &git2::Repository,
    folder: &str,
    before: Option<&git2::Tree<'_>>,
    after: Option<&git2::Tree<'_>>,
) -> Result<String, git2::Error> {
    let prefix = match folder {
        "" => String::new(),
        f => format!("{f}/"),
    };
    let mut lines = Vec::new();
    change_lines(repo, before, after, &prefix, &mut lines)?;
    Ok(digest_of_lines(lines))
}

/// Adds to `lines` one `<new id> <prefix><path>` line per path that differs between the trees
/// `old` and `new`, as libgit2's tree diff (default options) lists its deltas: a file, link or
/// submodule added or changed (content or mode) gives its new id; one removed gives the zero
/// id; one whose kind changed (a file that became a link, a submodule) is removed and added
/// (two lines, as without `GIT_DIFF_INCLUDE_TYPECHANGE`); a directory is compared entry by
/// entry, only where its ids differ. Unchanged subtrees are never read.
fn change_lines(
    repo: &git2::Repository,
    old: Option<&git2::Tree<'_>>,
    new: Option<&git2::Tree<'_>>,
    prefix: &str,
    lines: &mut Vec<String>,
) -> Result<(), git2::Error> {
    let zero = git2::Oid::ZERO_SHA1;
    let len = |t: Option<&git2::Tree<'_>>| t.map_or(0, git2::Tree::len);
    let is_tree = |e: &git2::TreeEntry<'_>| e.kind() == Some(git2::ObjectType::Tree);
    let path =
        |e: &git2::TreeEntry<'_>| format!("{prefix}{}", String::from_utf8_lossy(e.name_bytes()));
    // Every entry under `e` (itself when it is no tree), as removed or added.
    let one_side = |e: &git2::TreeEntry<'_>, added: bool, lines: &mut Vec<String>| {
        if is_tree(e) {
            let sub = repo.find_tree(e.id())?;
            let (o, n) = if added {
                (None, Some(&sub))
            } else {
                (Some(&sub), None)
            };
            change_lines(repo, o, n, &format!("{}/", path(e)), lines)
        } else {
            let id = if added { e.id() } else { zero };
            lines.push(format!("{id} {}\n", path(e)));
            Ok(())
        }
    };
    let (mut i, mut j) = (0, 0);
    while i < len(old) || j < len(new) {
        let x = old.and_then(|t| t.get(i));
        let y = new.and_then(|t| t.get(j));
        let order = match (&x, &y) {
            (Some(x), Some(y)) => git_order(x.name_bytes(), is_tree(x), y.name_bytes(), is_tree(y)),
            (Some(_), None) => std::cmp::Ordering::Less,
            (None, _) => std::cmp::Ordering::Greater,
        };
        match (order, x, y) {
            (std::cmp::Ordering::Equal, Some(x), Some(y)) => {
                i += 1;
                j += 1;
                if x.id() == y.id() && x.filemode() == y.filemode() {
                    continue;
                }
                if is_tree(&x) {
                    let (o, n) = (repo.find_tree(x.id())?, repo.find_tree(y.id())?);
                    change_lines(repo, Some(&o), Some(&n), &format!("{}/", path(&x)), lines)?;
                } else if x.filemode() & 0o170000 != y.filemode() & 0o170000 {
                    lines.push(format!("{zero} {}\n", path(&x)));
                    lines.push(format!("{} {}\n", y.id(), path(&y)));
                } else {
                    lines.push(format!("{} {}\n", y.id(), path(&y)));
                }
            }
            (std::cmp::Ordering::Less, Some(x), _) => {
                i += 1;
                one_side(&x, false, lines)?;
            }
            (_, _, Some(y)) => {
                j += 1;
                one_side(&y, true, lines)?;
            }
            // An entry that cannot be read: step past it on both sides.
            _ => {
                i += 1;
                j += 1;
            }
        }
    }
    Ok(())
}

/// Git's order of tree entries: by name, a tree's name read as if it ended in `/`.
pub(crate) fn git_order(a: &[u8], a_tree: bool, b: &[u8], b_tree: bool) -> std::cmp::Ordering {
    let n = a.len().min(b.len());
    match a[..n].cmp(&b[..n]) {
        std::cmp::Ordering::Equal => {}
        other => return other,
    }
    let next = |name: &[u8], tree: bool| match (name.get(n), tree) {
        (Some(c), _) => Some(*c),
        (None, true) => Some(b'/'),
        (None, false) => None,
    };
    next(a, a_tree).cmp(&next(b, b_tree))
}

/// The digest [`change_digest`] makes of its `<new blob id> <path>` lines: sorted, joined,
/// SHA-256.
pub fn digest_of_lines(mut lines: Vec<String>) -> String {
    lines.sort();
    kiln_base::digest::sha256_tagged(lines.concat().as_bytes())
}

/// `message` with one [`PROMOTE`] trailer, `digest`, replacing any it had (a rebased commit is
/// stamped again). Joins the message's trailer block when it ends in one (kiln's promotion
/// message ends in `stage: …`), else starts one.
pub fn stamp_promote(message: &str, digest: &str) -> String {
    let prefix = format!("{PROMOTE}:");
    let kept: Vec<&str> = message
        .lines()
        .filter(|l| !l.starts_with(&prefix))
        .collect();
    let base = kept.join("\n");
    let base = base.trim_end();
    let in_block = git2::message_trailers_strs(base).is_ok_and(|t| t.len() > 0);
    let gap = if in_block { "\n" } else { "\n\n" };
    format!("{base}{gap}{PROMOTE}: {digest}\n")
}

/// The [`PROMOTE`] trailer of `message`, when it has one.
pub fn promote_stamp(message: &str) -> Option<String> {
    let trailers = git2::message_trailers_strs(message).ok()?;
    trailers
        .iter()
        .find(|(k, _)| *k == PROMOTE)
        .map(|(_, v)| v.trim().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn comp(p: &str, e: &str, c: &str) -> Unit {
        Unit::Component {
            project: p.into(),
            environment: e.into(),
            component: c.into(),
        }
    }

    fn classifier(paths: &[&str]) -> Classifier {
        Classifier::new(paths.iter().copied(), None)
    }

    /// The change lines are libgit2's tree diff's deltas (default options), which stamps
    /// written before this walk were made from: files added, changed, removed, made
    /// executable, turned into links or directories, submodules.
    #[test]
    fn change_digest_lists_what_libgit2s_tree_diff_lists() {
        let dir = tempfile::tempdir().unwrap();
        let repo = git2::Repository::init_bare(dir.path()).unwrap();
        // A tree of `entries` (path, content, mode); a directory's entries by `dir/name`.
        let tree = |entries: &[(&str, &str, i32)]| -> git2::Oid {
            fn build(repo: &git2::Repository, entries: &[(&str, &str, i32)]) -> git2::Oid {
                let mut b = repo.treebuilder(None).unwrap();
                let mut dirs: BTreeMap<&str, Vec<(&str, &str, i32)>> = BTreeMap::new();
                for (path, content, mode) in entries {
                    match path.split_once('/') {
                        Some((d, rest)) => dirs.entry(d).or_default().push((rest, content, *mode)),
                        None if *mode == 0o160000 => {
                            let id =
                                git2::Oid::hash_object(git2::ObjectType::Blob, content.as_bytes());
                            b.insert(path, id.unwrap(), *mode).unwrap();
                        }
                        None => {
                            let id = repo.blob(content.as_bytes()).unwrap();
                            b.insert(path, id, *mode).unwrap();
                        }
                    }
                }
                for (d, inner) in dirs {
                    b.insert(d, build(repo, &inner), 0o040000).unwrap();
                }
                b.write().unwrap()
            }
            build(&repo, entries)
        };
        let before = tree(&[
            ("a/x.yaml", "1", 0o100644),
            ("a/run.sh", "echo", 0o100644),
            ("a/link", "x.yaml", 0o100644),
            ("a/sub/y.yaml", "y", 0o100644),
            ("a/gone/z.yaml", "z", 0o100644),
            ("a/file", "f", 0o100644),
            ("a/mod", "c1", 0o160000),
            ("a/same/s.yaml", "s", 0o100644),
            ("b.yaml", "b", 0o100644),
        ]);
        let after = tree(&[
            ("a/x.yaml", "2", 0o100644),
            ("a/run.sh", "echo", 0o100755),
            ("a/link", "x.yaml", 0o120000),
            ("a/sub/y.yaml", "y2", 0o100644),
            ("a/sub/new.yaml", "n", 0o100644),
            ("a/file/inside.yaml", "i", 0o100644),
            ("a/mod", "c2", 0o160000),
            ("a/same/s.yaml", "s", 0o100644),
            ("a.yaml", "new", 0o100644),
        ]);
        let (before, after) = (
            repo.find_tree(before).unwrap(),
            repo.find_tree(after).unwrap(),
        );
        let libgit2 = |old: Option<&git2::Tree<'_>>, new: &git2::Tree<'_>| {
            let diff = repo.diff_tree_to_tree(old, Some(new), None).unwrap();
            let lines = diff
                .deltas()
                .map(|d| {
                    let path = d.new_file().path().or_else(|| d.old_file().path()).unwrap();
                    format!("{} {}\n", d.new_file().id(), path.display())
                })
                .collect();
            (diff.deltas().len(), digest_of_lines(lines))
        };
        let (deltas, digest) = libgit2(Some(&before), &after);
        assert!(deltas >= 11, "{deltas}");
        assert_eq!(change_digest(&repo, Some(&before), &after).unwrap(), digest);
        assert_eq!(
            change_digest(&repo, None, &after).unwrap(),
            libgit2(None, &after).1
        );
        assert_eq!(
            change_digest(&repo, Some(&after), &before).unwrap(),
            libgit2(Some(&after), &before).1
        );
    }

    #[test]
    fn the_promote_stamp_joins_the_trailer_block_and_replaces_an_old_one() {
        let promotion = "kiln: promote cart to dev\n\nimage: r/cart:1.2.0\nstage: shop/cart-dev\n";
        let once = stamp_promote(promotion, "sha256:aa");
        assert_eq!(
            once,
            "kiln: promote cart to dev\n\nimage: r/cart:1.2.0\nstage: shop/cart-dev\nKiln-Promote: sha256:aa\n"
        );
        assert_eq!(promote_stamp(&once).as_deref(), Some("sha256:aa"));
        let again = stamp_promote(&once, "sha256:bb");
        assert_eq!(again, once.replace("sha256:aa", "sha256:bb"));
        let initial = stamp_promote("Initial commit", "sha256:cc");
        assert_eq!(initial, "Initial commit\n\nKiln-Promote: sha256:cc\n");
        assert_eq!(promote_stamp(&initial).as_deref(), Some("sha256:cc"));
        assert_eq!(promote_stamp(promotion), None);
        // Not a kiln publish commit: publish's trailers stay the only `Kiln-Version`.
        assert!(parse_message(&once).is_none());
    }

    #[test]
    fn classify_service_and_cluster_layouts() {
        let c = classifier(&[
            "web/dev/api/kustomization.yaml",
            "web/dev/api/api.gen.yaml",
            "east/web/prod/api/kustomization.yaml",
            "web/kargo/kustomization.yaml",
            "web/kargo/warehouse.yaml",
            "web/argocd/apps.yaml",
            "platform/prod/argocd/kustomization.yaml",
            "platform/prod/argocd/argocd.gen.yaml",
            "README.md",
        ]);
        assert_eq!(
            c.classify("web/dev/api/api.gen.yaml"),
            comp("web", "dev", "api")
        );
        assert_eq!(
            c.classify("east/web/prod/api/kustomization.yaml"),
            comp("web", "prod", "api")
        );
        assert_eq!(
            c.classify("web/kargo/warehouse.yaml"),
            Unit::Kargo {
                project: "web".into()
            }
        );
        assert_eq!(
            c.classify("web/argocd/apps.yaml"),
            Unit::Argocd {
                project: "web".into()
            }
        );
        // Argo CD deployed as a component is a component, not the Applications bundle.
        assert_eq!(
            c.classify("platform/prod/argocd/argocd.gen.yaml"),
            comp("platform", "prod", "argocd")
        );
        assert_eq!(
            c.classify("README.md"),
            Unit::Other {
                name: "README.md".into()
            }
        );
    }

    #[test]
    fn classify_with_fixed_environment() {
        let c = Classifier::new(["web/api/kustomization.yaml"], Some("prod"));
        assert_eq!(c.classify("web/api/x.yaml"), comp("web", "prod", "api"));
    }

    #[test]
    fn unit_changes_detect_added_changed_removed() {
        let old: BTreeMap<String, u8> = [
            ("w/dev/api/kustomization.yaml".to_string(), 1),
            ("w/dev/api/api.gen.yaml".to_string(), 1),
            ("w/dev/old/kustomization.yaml".to_string(), 1),
            ("w/dev/same/kustomization.yaml".to_string(), 1),
        ]
        .into();
        let new: BTreeMap<String, u8> = [
            ("w/dev/api/kustomization.yaml".to_string(), 1),
            ("w/dev/api/api.gen.yaml".to_string(), 2),
            ("w/dev/new/kustomization.yaml".to_string(), 1),
            ("w/dev/same/kustomization.yaml".to_string(), 1),
        ]
        .into();
        let c = Classifier::new(old.keys().chain(new.keys()).map(String::as_str), None);
        let changes = unit_changes(&c, &old, &new);
        let shown: Vec<String> = changes.iter().map(|c| c.to_string()).collect();
        assert_eq!(
            shown,
            [
                "changed component w/dev/api",
                "added component w/dev/new",
                "removed component w/dev/old"
            ]
        );
    }

    #[test]
    fn images_follow_kustomize_join_rules() {
        let mut set = ArtifactSet::new();
        set.insert(
            "w/dev/api/kustomization.yaml",
            "resources: [api.gen.yaml]\nimages:\n- name: api\n  newName: ghcr.io/acme/api\n  newTag: 1.2.3\n- name: side\n  newTag: \"4\"\n  digest: sha256:abc\n",
        );
        let c = Classifier::new(set.paths(), None);
        let images = images_by_unit(&set, &c);
        assert_eq!(
            images[&comp("w", "dev", "api")],
            ["ghcr.io/acme/api:1.2.3", "side:4@sha256:abc"]
        );
    }

    #[test]
    fn message_round_trips_through_trailers() {
        let changes = vec![
            UnitChange {
                action: ChangeAction::Changed,
                unit: comp("w", "dev", "api"),
            },
            UnitChange {
                action: ChangeAction::Added,
                unit: Unit::Kargo {
                    project: "w".into(),
                },
            },
        ];
        let images: BTreeMap<Unit, Vec<String>> = [(
            comp("w", "dev", "api"),
            vec!["api:1".to_string(), "db:2".to_string()],
        )]
        .into();
        let provenance = Provenance {
            source_commit: Some("abc123".into()),
            kiln_version: "0.1.0".into(),
            spec_digest: Some("sha256:00".into()),
            sources: vec!["https://git.example/shop/cart.git@4f3c".into()],
        };
        let msg = commit_message(&changes, &images, &provenance, None);
        assert!(
            msg.starts_with("kiln: add kargo (w); update api (dev)\n\n"),
            "{msg}"
        );
        let parsed = parse_message(&msg).expect("kiln commit");
        assert_eq!(parsed.changes, changes);
        assert_eq!(parsed.images, images);
        assert_eq!(parsed.source_commit.as_deref(), Some("abc123"));
        assert_eq!(parsed.spec_digest.as_deref(), Some("sha256:00"));
        assert_eq!(parsed.kiln_version, "0.1.0");
        // Issue 33 item 6: each remote source rendered, in the trailer `kiln status` reads.
        assert!(msg.contains("\nKiln-App-Commit: https://git.example/shop/cart.git@4f3c\n"));
        assert_eq!(
            parsed.app_commits,
            ["https://git.example/shop/cart.git@4f3c"]
        );
        assert!(parse_message("fix typo\n\nSigned-off-by: a <a@b>\n").is_none());
    }

    #[test]
    fn long_subjects_are_summarised() {
        let changes: Vec<UnitChange> = (0..20)
            .map(|i| UnitChange {
                action: ChangeAction::Changed,
                unit: comp("w", &format!("env{i}"), "component-with-long-name"),
            })
            .collect();
        let s = subject(&changes);
        assert_eq!(
            s,
            "kiln: update 1 component in 20 environments (20 changes)"
        );
    }
}
