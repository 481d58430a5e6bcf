//! `kiln status`: what runs in every (project, component, environment), audited from Git
//! alone — the write repositories and the source repository, no cluster.
//!
//! The render (in memory) says where each cell is deployed from: its Argo CD Application's
//! `repoURL`, `targetRevision` and `path`, whatever the write mode (Kargo's three, the
//! one-repo layout, `publish`, `publish --per-environment`), and which Stage writes there (the
//! Application's `kargo.akuity.io/authorized-stage`). [`crate::git::read_branch`] reads those
//! folders at each branch tip and walks back only for their past. From the folder and the
//! commits that wrote it, a [`Cell`] gets:
//! - the images it runs: the folder's kustomization `images:`, else its manifests' containers
//!   ([`crate::git::folder_images`]);
//! - the Freight, as Kargo names it ([`crate::promote::freight::generate_freight_id`]): the
//!   `freight:` line the Stage's `git-commit` wrote (`ctx.targetFreight.name`) when the Stage
//!   requests one Warehouse, else computed from the promotion's `image:` and `source:` lines;
//! - the source commit (`source:` line, or the `Kiln-Source-Commit` trailer of a publish) and
//!   the application repositories' commits (further `source:` lines, `Kiln-App-Commit`);
//! - the write commit, when and by whom;
//! - lag: an upstream environment (`environments[].from`) runs other images and was written
//!   later, or ran this cell's images before, or the cell runs nothing while upstream runs
//!   something (Kargo cells only: without Kargo each environment runs what its spec says).
//!   A lagging cell is `lagging` in every output (`<lag` in the matrix, exit 1) unless it
//!   drifted, which outranks it;
//! - drift: the folder is not what its Stage builds from the Freight its last promotion of
//!   the folder recorded. [`crate::promote::rebuild`] reruns the Stage's steps up to its
//!   `git-commit` (kiln promote's runner, in a temporary directory) and the files its
//!   `kustomize-build` steps wrote are compared with the tip's, so a hand edit is drift even
//!   under the Stage's own message, and a hand edit put back is in sync. Each (Stage,
//!   promotion) is rebuilt once, and only when needed: a folder whose tree at the tip is the
//!   tree a promotion by `kiln promote`'s runner wrote, alone in its commit
//!   ([`crate::git::WriteCommit::stamped`]: its `Kiln-Promote` stamp is the digest of that
//!   change, which a copied message or an amended commit does not match), is what the runner
//!   built from that Freight, and is not rebuilt (10,000 rebuilds were most of a status at
//!   1,000 × 10; docs/BENCHMARKS.md). A publish's cell (no Stage) is compared the same way with
//!   what `kiln publish` wrote from the source commit it recorded: the caller's [`Rerender`]
//!   renders that commit (once per commit), split per environment for
//!   `publish --per-environment` as `kiln verify` splits it. Only a folder its writer never
//!   wrote, a publish from a dirty checkout or a folder outside `spec.source.renderedPath` is
//!   judged by author: the newest commit that changed it is not its writer's.
//!
//! The Freight and commits come from the writer's last write however old it is:
//! [`crate::git::read_branch`] walks on past the `past` writes, for that folder only, until it
//! finds it ([`Cell::promotion`]).
//!
//! Sits after `promote` (it reads the emitted objects as `kiln promote` does) and before the
//! CLI; reads Git through `crate::git` only. [`html`] writes the page.
//!
//! Invariant: cells are ordered by project, component, then environment in the platform's
//! order; nothing reads the clock.

pub mod html;
mod objects;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::{self, Write as _};

use serde::Serialize;

use crate::artifact::ArtifactSet;
use crate::git::trailers::{AppCommit, Unit};
use crate::git::{GitError, Identity, RemoteAuth, Timestamp, printable};
use crate::promote::freight::{
    FreightCommit, FreightImage, FreightReference, FreightSet, Subscriptions, normalize_git,
};
use crate::promote::repo::{Location, RepoMap};
use crate::promote::{Built, Objects, PromoteError, StageDef};

/// Errors of `kiln status`. Codes are `kiln::status::<condition>`.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum StatusError {
    #[error(transparent)]
    #[diagnostic(transparent)]
    Git(#[from] GitError),
    #[error(transparent)]
    #[diagnostic(transparent)]
    Objects(#[from] PromoteError),
    #[error("the render emits no Argo CD Application{filter}: nothing is deployed to report")]
    #[diagnostic(
        code(kiln::status::no_applications),
        help(
            "`kiln status` reads what the generated Applications sync; check the platform and the -p/-e/-c filters"
        )
    )]
    NoApplications { filter: String },
    #[error(
        "cannot rebuild what Stage {stage} promoted in {commit} to check it for drift: {message}"
    )]
    #[diagnostic(
        code(kiln::status::rebuild),
        help(
            "`kiln status` reruns the Stage's steps up to its git-commit from the Freight the promotion commit records; pass --repo-map for repositories it cannot reach"
        )
    )]
    Rebuild {
        stage: String,
        commit: String,
        message: String,
    },
    #[error(
        "cannot render source commit {commit} again, which kiln publish recorded, to check its folders for drift: {message}"
    )]
    #[diagnostic(
        code(kiln::status::rerender),
        help(
            "`kiln status` renders the platform at the publish's Kiln-Source-Commit from this checkout's repository; fetch its history (CI: fetch-depth: 0)"
        )
    )]
    Rerender { commit: String, message: String },
    #[error("cannot read the write repository `{url}`: {message}")]
    #[diagnostic(
        code(kiln::status::unreachable),
        help(
            "`kiln status` reads the repository each Application syncs from; pass --repo-map URL=PATH with a local clone of it standing in for URL, or check the URL and the network"
        )
    )]
    Unreachable { url: String, message: String },
}

impl StatusError {
    /// A write repository's read error; an unreachable one says how to stand in for it.
    fn from_read(e: GitError) -> Self {
        match e {
            GitError::RemoteUnreachable { url, message } => {
                StatusError::Unreachable { url, message }
            }
            e => StatusError::Git(e),
        }
    }
}

/// Which cells to report (`-p`, `-e`, `-c`; empty: all).
#[derive(Debug, Clone, Default)]
pub struct StatusFilter {
    pub projects: Vec<String>,
    pub environments: Vec<String>,
    pub components: Vec<String>,
}

/// What [`status`] reads with.
#[derive(Debug, Clone, Default)]
pub struct StatusOptions {
    pub filter: StatusFilter,
    /// Local stand-ins for repository URLs (`--repo-map`).
    pub repo_map: RepoMap,
    pub auth: RemoteAuth,
    /// How many past writes to keep per cell (at least 1; the page shows them).
    pub past: usize,
    /// The cells without a Stage were published with `kiln publish --per-environment`: their
    /// branch holds their environment's slice of the render.
    pub per_environment: bool,
}

/// The render of the platform at a source commit (what `kiln publish` rendered when it
/// recorded that commit), or why it cannot be had. The CLI renders the commit's tree; status
/// sits below the pipeline and only compares.
pub type Rerender<'a> = &'a dyn Fn(&str) -> Result<ArtifactSet, String>;

/// One image reference, split.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Image {
    /// As written (`repo:tag@digest`).
    pub reference: String,
    pub repository: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tag: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub digest: Option<String>,
}

impl Image {
    /// Splits `repo[:tag][@digest]` (a `:` after the last `/` is a tag, not a port).
    pub fn parse(reference: &str) -> Self {
        let (rest, digest) = match reference.split_once('@') {
            Some((r, d)) if !d.is_empty() => (r, Some(d.to_string())),
            Some((r, _)) => (r, None),
            None => (reference, None),
        };
        let slash = rest.rfind('/').map_or(0, |i| i + 1);
        let (repository, tag) = match rest[slash..].rfind(':') {
            Some(i) if i + slash + 1 < rest.len() => (
                rest[..slash + i].to_string(),
                Some(rest[slash + i + 1..].to_string()),
            ),
            Some(i) => (rest[..slash + i].to_string(), None),
            None => (rest.to_string(), None),
        };
        Image {
            reference: reference.trim_end_matches('@').to_string(),
            repository,
            tag,
            digest,
        }
    }

    /// Fills the tag and digest this image's reference leaves out from what the promotion
    /// that wrote it says (`image: repo:tag@digest`): a Stage that promotes digests writes
    /// `repo@digest` into the manifests, and the tag lives only in its commit. A field the
    /// reference has is never replaced; `reference` stays as written.
    fn complete_from(&mut self, said: &[String]) {
        let Some(m) = said
            .iter()
            .map(|m| Image::parse(m))
            .find(|m| m.repository == self.repository)
        else {
            return;
        };
        let agrees = |a: &Option<String>, b: &Option<String>| a.is_none() || b.is_none() || a == b;
        if agrees(&self.tag, &m.tag) && agrees(&self.digest, &m.digest) {
            self.tag = self.tag.take().or(m.tag);
            self.digest = self.digest.take().or(m.digest);
        }
    }

    /// The tag, else the digest's first 12 hex digits.
    pub fn short(&self) -> String {
        match (&self.tag, &self.digest) {
            (Some(t), _) => t.clone(),
            (None, Some(d)) => d.rsplit(':').next().unwrap_or(d).chars().take(12).collect(),
            (None, None) => "latest".into(),
        }
    }
}

/// A commit of another repository named by a write (`source:` lines, app-repo trailers).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RepoCommit {
    #[serde(rename = "repoURL")]
    pub repo_url: String,
    pub commit: String,
}

/// Who wrote a folder.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Writer {
    /// A promotion by a Stage (kiln's promotion template: `kiln: promote …`, `stage: …`).
    Promotion,
    /// `kiln publish` (its trailers).
    Publish,
    /// Anyone else: a hand edit.
    Other,
}

/// One commit that changed a cell's folder.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Write {
    pub commit: String,
    pub time: Timestamp,
    pub author: Identity,
    pub summary: String,
    pub writer: Writer,
    /// `<project>/<stage>` of a promotion.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stage: Option<String>,
    /// The images the folder ran after this commit.
    pub images: Vec<Image>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub freight: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source_commit: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub app_commits: Vec<RepoCommit>,
}

/// How a cell stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum CellState {
    InSync,
    NotDeployed,
    Lagging,
    Drifted,
}

impl CellState {
    pub fn word(self) -> &'static str {
        match self {
            CellState::InSync => "in sync",
            CellState::NotDeployed => "not deployed",
            CellState::Lagging => "lagging",
            CellState::Drifted => "drifted",
        }
    }
}

/// An upstream environment that runs something newer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Lag {
    pub upstream: String,
    pub upstream_images: Vec<Image>,
    /// "stage runs 1.9.0, prod-east 1.8.1".
    pub message: String,
    /// The cell runs Freight its upstream never ran: it was promoted past it (with
    /// `kiln promote`'s warning ignored, or `--assume-verified`), which Kargo would not offer.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub skipped: bool,
}

/// One (project, component, environment).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Cell {
    pub project: String,
    pub component: String,
    pub environment: String,
    /// The Argo CD Application that deploys it, and what it syncs.
    pub application: String,
    #[serde(rename = "repoURL")]
    pub repo_url: String,
    pub branch: String,
    pub path: String,
    /// `<project>/<stage>` of the Stage that writes it (Kargo).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stage: Option<String>,
    pub state: CellState,
    pub images: Vec<Image>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub freight: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source_commit: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub app_commits: Vec<RepoCommit>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub write_commit: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time: Option<Timestamp>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub author: Option<Identity>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lag: Option<Lag>,
    /// Why the folder is not what its writer wrote.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub drift: Option<String>,
    /// A Kargo cell with nothing in its folder whose Stage promoted on another branch of the
    /// write repository, one the layout no longer names (`branchPattern` changed): that
    /// branch. Its Application keeps the commit of that promotion until the Stage promotes
    /// again (docs/pipeline.md, "Changing the layout").
    #[serde(skip_serializing_if = "Option::is_none")]
    pub earlier_layout: Option<String>,
    /// The commits that changed the folder, newest first (the first is `writeCommit`).
    pub history: Vec<Write>,
    /// The last write by the cell's writer (its Stage's promotion; without Kargo, kiln's
    /// publish), however far back it lies: `freight`, `sourceCommit` and `appCommits` are
    /// its. It is in `history` unless hand edits came after it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub promotion: Option<Write>,
    /// Whether the folder holds anything. A lagging cell may run nothing yet; `state` then
    /// says `lagging` and `images` is empty.
    #[serde(skip)]
    deployed: bool,
}

/// What a cell (or one write of it) runs: its images, then its Freight, else the app or
/// source commit it was rendered from. A component without images is told apart by the rest.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Version {
    images: Vec<String>,
    rendered: Option<String>,
}

impl Version {
    fn of(
        images: &[Image],
        freight: Option<&String>,
        app_commits: &[RepoCommit],
        source_commit: Option<&String>,
    ) -> Version {
        Version {
            images: images.iter().map(|i| i.reference.clone()).collect(),
            rendered: freight
                .or(app_commits.first().map(|c| &c.commit))
                .or(source_commit)
                .cloned(),
        }
    }

    /// The matrix text of an image-less cell: the short Freight ID or commit (`?` when
    /// neither is known).
    fn short(&self) -> String {
        match &self.rendered {
            Some(r) => r.chars().take(7).collect(),
            None => "?".to_string(),
        }
    }
}

impl Cell {
    fn version(&self) -> Version {
        Version::of(
            &self.images,
            self.freight.as_ref(),
            &self.app_commits,
            self.source_commit.as_ref(),
        )
    }

    /// `project/component`.
    pub fn row(&self) -> String {
        format!("{}/{}", self.project, self.component)
    }

    /// The matrix text: short tags, `-` when nothing is deployed, then `!drift` or `<lag`.
    pub fn label(&self) -> String {
        let tags: Vec<String> = self.images.iter().map(Image::short).collect();
        let mut label = if !self.deployed {
            "-".to_string()
        } else if tags.is_empty() {
            self.version().short()
        } else {
            tags.join(",")
        };
        match self.state {
            CellState::Drifted => label.push_str(" !drift"),
            CellState::Lagging => label.push_str(" <lag"),
            _ => {}
        }
        label
    }
}

/// Every cell, and the platform's environment order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StatusReport {
    pub environments: Vec<String>,
    pub cells: Vec<Cell>,
}

impl StatusReport {
    /// `true` when every deployed cell is in sync (the exit code 0 of `kiln status`).
    pub fn in_sync(&self) -> bool {
        self.cells
            .iter()
            .all(|c| matches!(c.state, CellState::InSync | CellState::NotDeployed))
    }

    /// What each Stage runs, for `kiln graph`: `<project>/<stage>` → `<component> <tags>`
    /// of every cell it writes (`drifted` or `lagging` added when so).
    pub fn stage_runs(&self) -> BTreeMap<String, String> {
        let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for c in &self.cells {
            let Some(stage) = &c.stage else { continue };
            let mut text = format!("{} {}", c.component, printable(&c.label()));
            if !c.deployed {
                text = format!("{} nothing yet", c.component);
                if c.state == CellState::Lagging {
                    text.push_str(" <lag");
                }
            }
            out.entry(stage.clone()).or_default().push(text);
        }
        out.into_iter().map(|(k, v)| (k, v.join(", "))).collect()
    }

    /// The rows (`project/component`) in order.
    pub fn rows(&self) -> Vec<String> {
        let mut rows: Vec<String> = Vec::new();
        for c in &self.cells {
            let r = c.row();
            if rows.last() != Some(&r) {
                rows.push(r);
            }
        }
        rows
    }

    /// The cell of `row` in `environment`.
    pub fn cell(&self, row: &str, environment: &str) -> Option<&Cell> {
        self.cells
            .iter()
            .find(|c| c.environment == environment && c.row() == row)
    }

    /// The text matrix (components × environments), then one line per lagging or drifted
    /// cell. `color`: ANSI colours (the CLI passes `true` only for a terminal). What Git said
    /// (tags, subjects, authors, paths) is [`printable`]: only kiln's colours reach the
    /// terminal.
    pub fn to_text(&self, color: bool) -> String {
        // Rows and environments are the spec's names (DNS labels): only cells carry Git's data.
        let rows = self.rows();
        let label = |c: &Cell| printable(&c.label()).into_owned();
        let envs: Vec<&String> = self
            .environments
            .iter()
            .filter(|e| self.cells.iter().any(|c| &c.environment == *e))
            .collect();
        let width = |s: &str| s.chars().count();
        let first = rows
            .iter()
            .map(|r| width(r))
            .chain([width("component")])
            .max()
            .unwrap_or(0);
        let col: Vec<usize> = envs
            .iter()
            .map(|e| {
                rows.iter()
                    .filter_map(|r| self.cell(r, e))
                    .map(|c| width(&label(c)))
                    .chain([width(e)])
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let mut out = format!("{:first$}", "component");
        for (e, w) in envs.iter().zip(&col) {
            let _ = write!(out, "  {e:w$}");
        }
        out = out.trim_end().to_string();
        out.push('\n');
        for r in &rows {
            let mut line = format!("{r:first$}");
            for (e, w) in envs.iter().zip(&col) {
                let (label, state) = match self.cell(r, e) {
                    Some(c) => (label(c), Some(c.state)),
                    None => (String::new(), None),
                };
                let padded = format!("{label:w$}");
                let paint = match state {
                    _ if !color => None,
                    Some(CellState::InSync) => Some("32"),
                    Some(CellState::Lagging) => Some("33"),
                    Some(CellState::Drifted) => Some("31"),
                    _ => None,
                };
                match paint {
                    Some(code) => {
                        let _ = write!(line, "  \u{1b}[{code}m{padded}\u{1b}[0m");
                    }
                    None => {
                        let _ = write!(line, "  {padded}");
                    }
                }
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
        for c in &self.cells {
            if let Some(lag) = &c.lag {
                let _ = writeln!(
                    out,
                    "lagging {} in {}: {}",
                    c.row(),
                    c.environment,
                    printable(&lag.message)
                );
            }
            if let Some(drift) = &c.drift {
                let _ = writeln!(
                    out,
                    "drifted {} in {}: {}",
                    c.row(),
                    c.environment,
                    printable(drift)
                );
            }
            if let (Some(branch), Some(stage)) = (&c.earlier_layout, &c.stage) {
                let _ = writeln!(
                    out,
                    "not promoted in this layout {} in {}: nothing on {}; {stage} promoted on {} \
                     (an earlier layout), and the Application keeps that commit until the next \
                     promotion",
                    c.row(),
                    c.environment,
                    printable(&c.branch),
                    printable(branch)
                );
            }
        }
        out
    }
}

impl fmt::Display for StatusReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_text(false))
    }
}

/// Where one cell is deployed from (its Application).
struct Target {
    project: String,
    component: String,
    environment: String,
    application: String,
    repo_url: String,
    branch: String,
    folder: String,
    stage: Option<objects::Stage>,
}

impl Target {
    /// `<project>/<stage>` of the Stage that writes it.
    fn stage_name(&self) -> Option<String> {
        self.stage
            .as_ref()
            .map(|s| format!("{}/{}", s.project, s.name))
    }
}

/// Each project's Warehouse subscriptions ([`Objects::subscriptions`]), by project.
type Subscribed = BTreeMap<String, BTreeMap<String, Subscriptions>>;

/// One raw write of `t`'s folder, read: who wrote it, what it deployed (`deployed`, its
/// folder's images), from what (`said`, its message read).
fn write_of(
    t: &Target,
    subscribed: &Subscribed,
    w: &crate::git::WriteCommit,
    said: Said,
    deployed: &[String],
) -> Write {
    let freight = match (&t.stage, said.writer) {
        (Some(stage), Some(Writer::Promotion)) => {
            let none = BTreeMap::new();
            let subs = subscribed.get(&stage.project).unwrap_or(&none);
            freight_of(&stage.requested, subs, &said, deployed)
        }
        _ => None,
    };
    let mut images: Vec<Image> = deployed.iter().map(|d| Image::parse(d)).collect();
    for i in &mut images {
        i.complete_from(&said.images);
    }
    let app_commits = said.app_commits_of(&t.project, &t.environment, &t.component);
    Write {
        commit: w.id.clone(),
        time: w.time,
        author: w.author.clone(),
        summary: w.message.lines().next().unwrap_or_default().to_string(),
        writer: said.writer.unwrap_or(Writer::Other),
        stage: said.stage,
        images,
        freight,
        app_commits,
        source_commit: said.source_commit,
    }
}

/// What a commit message says about the write it made.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Said {
    writer: Option<Writer>,
    stage: Option<String>,
    images: Vec<String>,
    freight: Option<String>,
    sources: Vec<RepoCommit>,
    /// With the cell each was rendered for (a publish's `Kiln-App-Commit`), `None` for the
    /// whole write's (a promotion's `source:` lines, a publish's unattributed sources).
    app_commits: Vec<(Option<Unit>, RepoCommit)>,
    source_commit: Option<String>,
}

impl Said {
    /// The app commits a cell was rendered from: its own, and those of the whole write.
    fn app_commits_of(&self, project: &str, environment: &str, component: &str) -> Vec<RepoCommit> {
        let own = |u: &Unit| {
            matches!(u, Unit::Component { project: p, environment: e, component: c }
                if p == project && e == environment && c == component)
        };
        self.app_commits
            .iter()
            .filter(|(cell, _)| cell.as_ref().is_none_or(own))
            .map(|(_, c)| c.clone())
            .collect()
    }

    /// Whether the writer of a folder made this write: a promotion by `stage`
    /// (`<project>/<stage>`), or without one a kiln publish.
    fn is_by(&self, stage: Option<&str>) -> bool {
        match stage {
            Some(name) => {
                self.writer == Some(Writer::Promotion) && self.stage.as_deref() == Some(name)
            }
            None => self.writer == Some(Writer::Publish),
        }
    }
}

/// Reads kiln's promotion message (`src/kargo/steps.rs`: `kiln: promote …`, then `image:`,
/// `source:`, `freight:`, `stage:` lines) or a publish's trailers.
fn read_message(message: &str) -> Said {
    if let Some(trailers) = crate::git::trailers::parse_message(message) {
        let app_commits = trailers
            .app_commits
            .iter()
            .map(|v| AppCommit::parse(v))
            .filter_map(|a| Some((a.cell, repo_commit(&a.source)?)))
            .collect();
        return Said {
            writer: Some(Writer::Publish),
            source_commit: trailers.source_commit,
            app_commits,
            ..Said::default()
        };
    }
    let mut said = Said::default();
    if !message.starts_with("kiln: promote ") {
        said.writer = Some(Writer::Other);
        return said;
    }
    said.writer = Some(Writer::Promotion);
    for line in message.lines() {
        if let Some(v) = line.strip_prefix("image: ") {
            said.images.push(v.trim().to_string());
        } else if let Some(v) = line.strip_prefix("source: ") {
            if let Some(c) = repo_commit(v.trim()) {
                said.sources.push(c);
            }
        } else if let Some(v) = line.strip_prefix("freight: ") {
            said.freight = Some(v.trim().to_string()).filter(|f| !f.is_empty());
        } else if let Some(v) = line.strip_prefix("stage: ") {
            said.stage = Some(v.trim().to_string());
        }
    }
    if let Some(first) = said.sources.first() {
        said.source_commit = Some(first.commit.clone());
        said.app_commits = said.sources[1..]
            .iter()
            .map(|c| (None, c.clone()))
            .collect();
    }
    said
}

/// The trailer a publish records an application repository's commit in (`<url>@<commit>`),
/// written by `crate::git::trailers::commit_message`.
pub const APP_COMMIT_TRAILER: &str = crate::git::trailers::APP_COMMIT;

/// `<url>@<commit>`, the commit the last `@`-separated part.
fn repo_commit(text: &str) -> Option<RepoCommit> {
    let (url, commit) = text.rsplit_once('@')?;
    (!commit.is_empty()).then(|| RepoCommit {
        repo_url: crate::git::redact(url),
        commit: commit.to_string(),
    })
}

/// The Freight that a promotion by a Stage requesting Freight from the Warehouses
/// `requested` deployed, as Kargo names it.
fn freight_of(
    requested: &[String],
    subs: &BTreeMap<String, Subscriptions>,
    said: &Said,
    deployed: &[String],
) -> Option<String> {
    // The Stage's own record, `ctx.targetFreight.name`, when it names one Freight only.
    if requested.len() == 1
        && let Some(f) = &said.freight
    {
        return Some(f.clone());
    }
    let warehouse = promoted_warehouse(requested, subs, deployed)?;
    let sub = subs.get(warehouse)?;
    Some(crate::promote::freight::generate_freight_id(&reference_of(
        warehouse, sub, said, deployed,
    )))
}

/// The Warehouse whose Freight a promotion of a Stage deployed: the first of those it
/// requests that subscribes to an image the folder runs, else the first requested.
fn promoted_warehouse<'s>(
    requested: &'s [String],
    subs: &BTreeMap<String, Subscriptions>,
    deployed: &[String],
) -> Option<&'s String> {
    requested
        .iter()
        .find(|w| {
            subs.get(*w).is_some_and(|s| {
                s.images.iter().any(|i| {
                    deployed
                        .iter()
                        .any(|d| Image::parse(d).repository == i.repo_url)
                })
            })
        })
        .or(requested.first())
}

/// The Freight of `warehouse` a promotion recorded: each subscribed image from its `image:`
/// lines (else the deployed folder), each subscribed repository at its `source:` commit.
fn reference_of(
    warehouse: &str,
    sub: &Subscriptions,
    said: &Said,
    deployed: &[String],
) -> FreightReference {
    let images = sub
        .images
        .iter()
        .filter_map(|i| {
            let from_message = said
                .images
                .iter()
                .map(|m| Image::parse(m))
                .find(|m| m.repository == i.repo_url);
            let from_tree = deployed
                .iter()
                .map(|d| Image::parse(d))
                .find(|d| d.repository == i.repo_url);
            let image = from_message.or(from_tree)?;
            Some(FreightImage {
                repo_url: i.repo_url.clone(),
                tag: image.tag.unwrap_or_default(),
                digest: image.digest.unwrap_or_default(),
            })
        })
        .collect();
    let commits = sub
        .git
        .iter()
        .filter_map(|(url, branch)| {
            said.sources
                .iter()
                .find(|c| normalize_git(&c.repo_url) == normalize_git(url))
                .map(|c| FreightCommit {
                    repo_url: url.clone(),
                    id: c.commit.clone(),
                    branch: branch.clone(),
                })
        })
        .collect();
    FreightReference {
        origin: warehouse.to_string(),
        images,
        commits,
    }
}

/// What `stage` would write from the Freight `said` records ([`crate::promote::rebuild`]),
/// by (repository URL, path).
fn rebuild_from(
    stage: &StageDef,
    objects: &Objects,
    said: &Said,
    deployed: &[String],
    options: &StatusOptions,
) -> Result<Built, String> {
    let warehouses = objects.subscriptions(&stage.project);
    // Only the promoted Freight, as `kiln promote` holds it (see `FreightSet::references`).
    let target = promoted_warehouse(&stage.requested, &warehouses, deployed)
        .cloned()
        .unwrap_or_default();
    let references = warehouses
        .get(&target)
        .map(|sub| reference_of(&target, sub, said, deployed))
        .into_iter()
        .collect();
    let freight = FreightSet {
        requested: stage.requested.clone(),
        warehouses,
        references,
        target,
    };
    let git = crate::promote::repo::Git {
        map: &options.repo_map,
        auth: &options.auth,
    };
    crate::promote::rebuild(stage.clone(), freight, objects, git)
}

/// The (Stage, Freight) pairs promoted on each write branch read, by (repository, branch):
/// one walk of a branch however many cells ask about it.
type Promotions = BTreeMap<(String, String), BTreeSet<(String, String)>>;

/// Why Kargo cell `c` runs Freight its upstream cell `u` never ran, or `None`: `c`'s
/// Freight is in none of `u`'s writes read, nor in any promotion by `u`'s Stage on its
/// branch ([`crate::git::promotions_on`], the check behind `kiln promote`'s warning).
fn skipped_upstream(
    c: &Cell,
    u: &Cell,
    promotions: &mut Promotions,
    repo_map: &RepoMap,
    auth: &RemoteAuth,
) -> Result<Option<String>, StatusError> {
    let (true, Some(freight), Some(stage)) = (c.deployed, &c.freight, &u.stage) else {
        return Ok(None);
    };
    if u.history
        .iter()
        .any(|w| w.freight.as_ref() == Some(freight))
    {
        return Ok(None);
    }
    let repo = match repo_map.locate(&u.repo_url) {
        Location::Local(p) => p.display().to_string(),
        Location::Remote(r) => r,
    };
    let key = (repo, u.branch.clone());
    if !promotions.contains_key(&key) {
        let promoted =
            crate::git::promotions_on(&key.0, &key.1, auth).map_err(StatusError::from_read)?;
        promotions.insert(key.clone(), promoted);
    }
    if promotions[&key].contains(&(stage.clone(), freight.clone())) {
        return Ok(None);
    }
    let tags: Vec<String> = c.images.iter().map(Image::short).collect();
    let short: String = freight.chars().take(7).collect();
    let what = match tags.is_empty() {
        true => format!("Freight {short}"),
        false => format!("{} (Freight {short})", tags.join(",")),
    };
    Ok(Some(format!(
        "{} never ran {what}: {} was promoted past it",
        u.environment, c.environment
    )))
}

/// Sets [`Cell::earlier_layout`] of each Kargo cell with nothing in its folder: the first
/// branch of its write repository, outside the branches the layout names (`wanted`), with a
/// promotion by the cell's Stage. Branches are listed and walked only when such a cell
/// exists; one that cannot be read is passed over (this only explains a `-`).
fn earlier_layouts(
    cells: &mut [Cell],
    wanted: &BTreeMap<(String, String), BTreeMap<String, Option<String>>>,
    promotions: &mut Promotions,
    options: &StatusOptions,
) {
    let mut listed: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for c in cells.iter_mut().filter(|c| !c.deployed) {
        let Some(stage) = &c.stage else { continue };
        let repo = match options.repo_map.locate(&c.repo_url) {
            Location::Local(p) => p.display().to_string(),
            Location::Remote(r) => r,
        };
        let branches = listed.entry(repo.clone()).or_insert_with(|| {
            let all = crate::git::branch_names(&repo, &options.auth).unwrap_or_default();
            all.into_iter()
                .filter(|b| !wanted.contains_key(&(repo.clone(), b.clone())))
                .collect()
        });
        for branch in branches.iter() {
            let key = (repo.clone(), branch.clone());
            if !promotions.contains_key(&key) {
                let promoted = crate::git::promotions_on(&repo, branch, &options.auth);
                promotions.insert(key.clone(), promoted.unwrap_or_default());
            }
            if promotions[&key].iter().any(|(s, _)| s == stage) {
                c.earlier_layout = Some(branch.clone());
                break;
            }
        }
    }
}

/// `commit by name <email> (summary)`.
fn described(w: &Write) -> String {
    format!(
        "{} by {} <{}> ({})",
        &w.commit[..w.commit.len().min(12)],
        w.author.name,
        w.author.email,
        w.summary
    )
}

/// The files of `folder` (relative to it) that `built` wrote into the repository at
/// `repo_url`.
fn expected_in<'b>(
    built: &'b Built,
    repo_url: &str,
    folder: &str,
) -> BTreeMap<&'b str, &'b Vec<u8>> {
    let repo = normalize_git(repo_url);
    built
        .iter()
        .filter(|((url, _), _)| normalize_git(url) == repo)
        .filter_map(|((_, path), bytes)| under(folder, path).map(|r| (r, bytes)))
        .collect()
}

/// `path` relative to `folder` (`""`: the root), `None` when outside it.
fn under<'p>(folder: &str, path: &'p str) -> Option<&'p str> {
    if folder.is_empty() {
        Some(path)
    } else {
        path.strip_prefix(folder).and_then(|r| r.strip_prefix('/'))
    }
}

/// A source commit recorded from a checkout with local changes (`<id>-dirty`): no tree holds
/// what was rendered.
fn is_dirty(commit: &str) -> bool {
    commit.ends_with("-dirty")
}

/// The files that differ between what `expected` holds and the folder at the tip: changed,
/// added or removed, sorted.
fn differing_files(expected: &BTreeMap<&str, &Vec<u8>>, tip: &ArtifactSet) -> Vec<String> {
    let mut paths: BTreeSet<&str> = expected.keys().copied().collect();
    paths.extend(tip.paths());
    paths
        .into_iter()
        .filter(|p| expected.get(p).copied() != tip.files.get(*p))
        .map(str::to_string)
        .collect()
}

/// What one `kiln publish` wrote, from the render of its source commit: the whole tree under
/// `spec.source.renderedPath`, or with `--per-environment` each environment's slice on its
/// own branch ([`crate::git::split_by_environment`], as `kiln verify --per-environment`
/// compares).
struct Published<'s> {
    /// The render of the source commit, or this checkout's (borrowed).
    whole: std::borrow::Cow<'s, ArtifactSet>,
    split: Option<crate::git::EnvironmentSplit>,
}

impl<'s> Published<'s> {
    fn new(set: std::borrow::Cow<'s, ArtifactSet>, per_environment: bool) -> Self {
        let split = per_environment.then(|| crate::git::split_by_environment(&set));
        Published { whole: set, split }
    }

    /// The files of `folder` (relative to the rendered path) that publish wrote for
    /// `environment`, relative to the folder.
    fn folder(&self, environment: &str, folder: &str) -> BTreeMap<&str, &Vec<u8>> {
        let set = match &self.split {
            Some(split) => match split.environments.get(environment) {
                Some(s) => s,
                None => return BTreeMap::new(),
            },
            None => &self.whole,
        };
        set.files
            .iter()
            .filter_map(|(path, bytes)| under(folder, path).map(|r| (r, bytes)))
            .collect()
    }
}

/// What a cell's folder holds and the writes that made it, read (the per-cell work that needs
/// nothing from the other cells, done in parallel).
struct CellRead<'f> {
    folder: &'f crate::git::FolderState,
    history: Vec<Write>,
    promotion: Option<Write>,
    /// The message of the writer's last write, read.
    promotion_said: Option<Said>,
    images: Vec<Image>,
}

impl<'f> CellRead<'f> {
    fn new(t: &Target, folder: &'f crate::git::FolderState, subscribed: &Subscribed) -> Self {
        // Each folder tree's images, read once: the tip's tree is usually its last write's.
        let mut images_of: Vec<(Option<&String>, Vec<String>)> = Vec::new();
        let mut deployed = |tree: &'f Option<String>, files: &crate::artifact::ArtifactSet| {
            let at = match images_of
                .iter()
                .position(|(t, _)| t.is_some() && *t == tree.as_ref())
            {
                Some(i) => i,
                None => {
                    images_of.push((tree.as_ref(), crate::git::folder_images(files)));
                    images_of.len() - 1
                }
            };
            images_of[at].1.clone()
        };
        let tip = deployed(&folder.tree, &folder.files);
        let saids: Vec<Said> = folder
            .writes
            .iter()
            .map(|w| read_message(&w.message))
            .collect();
        let history: Vec<Write> = folder
            .writes
            .iter()
            .zip(&saids)
            .map(|(w, said)| write_of(t, subscribed, w, said.clone(), &deployed(&w.tree, &w.files)))
            .collect();
        // The writer's last write is often the newest one: read once.
        let newest = folder
            .writes
            .iter()
            .position(|w| Some(&w.id) == folder.by_writer.as_ref().map(|b| &b.id));
        let promotion_said = match newest {
            Some(i) => saids.get(i).cloned(),
            None => folder.by_writer.as_ref().map(|w| read_message(&w.message)),
        };
        let promotion = match (newest, &folder.by_writer, &promotion_said) {
            (Some(i), ..) => history.get(i).cloned(),
            (None, Some(w), Some(said)) => Some(write_of(
                t,
                subscribed,
                w,
                said.clone(),
                &deployed(&w.tree, &w.files),
            )),
            _ => None,
        };
        let mut images: Vec<Image> = tip.iter().map(|d| Image::parse(d)).collect();
        // The tip is what the last write left: its message completes tags and digests, then
        // the writer's last promotion (under a hand edit), where they agree.
        for said in saids.first().into_iter().chain(&promotion_said) {
            if said.writer == Some(Writer::Promotion) {
                for i in &mut images {
                    i.complete_from(&said.images);
                }
            }
        }
        CellRead {
            folder,
            history,
            promotion,
            promotion_said,
            images,
        }
    }
}

/// The Applications of the render as status targets, filtered.
fn targets(render: &objects::RenderObjects, filter: &StatusFilter) -> Vec<Target> {
    let keep = |list: &[String], v: &str| list.is_empty() || list.iter().any(|x| x == v);
    render
        .applications
        .iter()
        .filter(|app| {
            !app.component.is_empty()
                && keep(&filter.projects, &app.project)
                && keep(&filter.environments, &app.environment)
                && keep(&filter.components, &app.component)
        })
        .map(|app| Target {
            project: app.project.clone(),
            component: app.component.clone(),
            environment: app.environment.clone(),
            application: app.name.clone(),
            repo_url: app.repo_url.clone(),
            branch: match app.target_revision.as_str() {
                "" => "HEAD",
                r => r,
            }
            .to_string(),
            folder: crate::git::normalize_folder(&app.path),
            stage: app
                .authorized_stage
                .split_once(':')
                .and_then(|(p, st)| render.stages.get(&(p.to_string(), st.to_string())))
                .cloned(),
        })
        .collect()
}

/// How many of the render's objects [`status`] reads first, and reads them the way it does
/// (`objects`: Applications and Stages line by line, Warehouses parsed): what
/// `examples/status_bench.rs` times as its first step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RenderRead {
    pub applications: usize,
    pub stages: usize,
    pub warehouses: usize,
}

/// Reads the render's Kargo and Argo CD objects as [`status`] does before anything else.
///
/// Errors: as [`status`]'s read of them ([`StatusError::Objects`]).
pub fn read_render_objects(set: &ArtifactSet) -> Result<RenderRead, StatusError> {
    let render = objects::RenderObjects::read(set)?;
    Ok(RenderRead {
        applications: render.applications.len(),
        stages: render.stages.len(),
        warehouses: render.warehouses.values().map(|o| o.warehouses.len()).sum(),
    })
}

/// The status of every cell the render's Applications deploy (see the module docs). `set` is
/// the in-memory render, `platform` its validated spec (for the environment order and
/// upstreams); `rerender` renders the source commits publishes recorded.
///
/// Errors: [`StatusError::NoApplications`]; a repository that cannot be opened or fetched;
/// [`StatusError::Rebuild`], [`StatusError::Rerender`] when a drift check cannot be made.
pub fn status(
    set: &ArtifactSet,
    platform: &crate::validate::Platform,
    options: &StatusOptions,
    rerender: Rerender<'_>,
) -> Result<StatusReport, StatusError> {
    let render = objects::RenderObjects::read(set)?;
    let targets = targets(&render, &options.filter);
    if targets.is_empty() {
        let f = &options.filter;
        let parts: Vec<String> = [
            ("project", &f.projects),
            ("environment", &f.environments),
            ("component", &f.components),
        ]
        .iter()
        .filter(|(_, v)| !v.is_empty())
        .map(|(k, v)| format!("{k} {}", v.join(",")))
        .collect();
        return Err(StatusError::NoApplications {
            filter: if parts.is_empty() {
                String::new()
            } else {
                format!(" for {}", parts.join(", "))
            },
        });
    }
    // One read per (repository, branch), every folder of it at once, each folder with the
    // Stage that writes it (`None`: kiln's publish).
    let mut wanted: BTreeMap<(String, String), BTreeMap<String, Option<String>>> = BTreeMap::new();
    let location = |url: &str| match options.repo_map.locate(url) {
        Location::Local(p) => p.display().to_string(),
        Location::Remote(u) => u,
    };
    for t in &targets {
        wanted
            .entry((location(&t.repo_url), t.branch.clone()))
            .or_default()
            .entry(t.folder.clone())
            .or_insert_with(|| t.stage_name());
    }
    // The branches are read in parallel, each on its own handle of its repository; the
    // first error in branch order is reported.
    let branches: Vec<Result<crate::git::BranchState, StatusError>> = {
        use rayon::prelude::*;
        let wanted: Vec<_> = wanted.iter().collect();
        wanted
            .par_iter()
            .map(|((repo, branch), writers)| {
                let folders: BTreeSet<String> = writers.keys().cloned().collect();
                let is_writers = |folder: &str, message: &str| {
                    writers
                        .get(folder)
                        .is_some_and(|stage| read_message(message).is_by(stage.as_deref()))
                };
                crate::git::read_branch(
                    repo,
                    branch,
                    &folders,
                    options.past.max(1),
                    &is_writers,
                    &options.auth,
                )
                .map_err(StatusError::from_read)
            })
            .collect()
    };
    let mut read = BTreeMap::new();
    // The promotions of each branch its read walked whole: the skipped-upstream check needs
    // no walk of its own there.
    let mut promotions = Promotions::new();
    for (key, state) in wanted.keys().zip(branches) {
        let mut state = state?;
        if state.promotions_complete {
            promotions.insert(key.clone(), std::mem::take(&mut state.promotions));
        }
        read.insert(key.clone(), state);
    }
    let env_order: Vec<String> = platform
        .environments
        .iter()
        .map(|e| e.name.clone())
        .collect();
    let mut cells = Vec::new();
    // Each project's Warehouse subscriptions, read once (not once per write).
    let subscribed: Subscribed = targets
        .iter()
        .filter_map(|t| t.stage.as_ref())
        .map(|st| st.project.clone())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .map(|p| {
            let subs = render.subscriptions(&p);
            (p, subs)
        })
        .collect();
    // Every Stage and Application whole, parsed only for a rebuild (see `objects`).
    let mut parsed: Option<Objects> = None;
    // What each (Stage, promotion commit) builds, rebuilt once for all the folders it writes.
    let mut rebuilt: BTreeMap<(String, String), Built> = BTreeMap::new();
    // What kiln publish wrote from each source commit, rendered again once.
    let mut published: BTreeMap<String, Published> = BTreeMap::new();
    let rendered_path = crate::git::normalize_folder(&platform.source.rendered_path);
    let none = crate::git::FolderState::default();
    let reads: Vec<CellRead<'_>> = {
        use rayon::prelude::*;
        targets
            .par_iter()
            .map(|t| {
                let folder = read
                    .get(&(location(&t.repo_url), t.branch.clone()))
                    .and_then(|b| b.folders.get(&t.folder))
                    .unwrap_or(&none);
                CellRead::new(t, folder, &subscribed)
            })
            .collect()
    };
    for (t, cell) in targets.iter().zip(reads) {
        let CellRead {
            folder,
            history,
            promotion,
            promotion_said,
            images,
        } = cell;
        let deployed = !folder.files.is_empty();
        let stage_name = t.stage_name();
        let last = history.first();
        // A publish's folder, relative to what publish writes (spec.source.renderedPath),
        // when its source commit can be rendered again.
        let publish_rel = match (&t.stage, &promotion) {
            (None, Some(p)) if !p.source_commit.as_deref().is_some_and(is_dirty) => {
                under(&rendered_path, &t.folder)
            }
            _ => None,
        };
        let drift = match (
            deployed,
            last,
            &t.stage,
            &folder.by_writer,
            &promotion,
            &promotion_said,
            publish_rel,
        ) {
            // Its writer wrote the folder, someone else removed it: the Application now
            // syncs a missing path. Drift, not a cell never deployed.
            (false, Some(w), _, _, Some(p), _, _)
                if !read_message(&folder.writes[0].message).is_by(stage_name.as_deref()) =>
            {
                Some(format!(
                    "{} deleted the folder {} after {}'s write {}{}, which Application {} syncs",
                    described(w),
                    t.folder,
                    stage_name
                        .as_ref()
                        .map_or("kiln publish".to_string(), |n| format!("Stage {n}")),
                    &p.commit[..p.commit.len().min(12)],
                    p.freight
                        .as_ref()
                        .map(|f| format!(" of Freight {f}"))
                        .unwrap_or_default(),
                    t.application
                ))
            }
            (false, ..) | (true, None, ..) => None,
            // A Stage's cell whose folder is, to the tree, what a promotion by `kiln promote`'s
            // runner wrote (its stamp matches its change, which was this folder alone): that
            // runner wrote what the Stage builds from the Freight it recorded, and nothing
            // changed the folder since. No rebuild.
            (true, Some(_), Some(_), Some(raw), Some(_), _, _)
                if raw.stamped && raw.tree.is_some() && raw.tree == folder.tree =>
            {
                None
            }
            // A Stage's cell: the folder against what the Stage builds from the Freight its
            // last promotion recorded, whoever committed since (or mimicked its message).
            (true, Some(w), Some(stage), Some(raw), Some(p), Some(said), _) => {
                let key = (stage_name.clone().unwrap_or_default(), p.commit.clone());
                if !rebuilt.contains_key(&key) {
                    let objects = match parsed {
                        Some(ref o) => o,
                        None => parsed.insert(Objects::from_artifacts(set)?),
                    };
                    let stage = objects.stage(&stage.name, Some(&stage.project))?;
                    let built = rebuild_from(
                        &stage,
                        objects,
                        said,
                        &crate::git::folder_images(&raw.files),
                        options,
                    )
                    .map_err(|message| StatusError::Rebuild {
                        stage: key.0.clone(),
                        commit: p.commit.clone(),
                        message,
                    })?;
                    rebuilt.insert(key.clone(), built);
                }
                let expected = expected_in(&rebuilt[&key], &t.repo_url, &t.folder);
                let differ = differing_files(&expected, &folder.files);
                (!differ.is_empty()).then(|| {
                    format!(
                        "{} differ from what Stage {} builds from Freight {} (last changed by {})",
                        differ.join(", "),
                        key.0,
                        p.freight.as_deref().unwrap_or("?"),
                        described(w)
                    )
                })
            }
            // A publish's cell: the folder against what kiln publish writes from the source
            // commit it recorded (rendered again, as `kiln verify` renders), whoever
            // committed since.
            (true, Some(w), None, _, Some(p), _, Some(rel)) => {
                let commit = p.source_commit.clone().unwrap_or_default();
                if !published.contains_key(&commit) {
                    let rendered = match &p.source_commit {
                        Some(c) => std::borrow::Cow::Owned(rerender(c).map_err(|message| {
                            StatusError::Rerender {
                                commit: c.clone(),
                                message,
                            }
                        })?),
                        None => std::borrow::Cow::Borrowed(set),
                    };
                    published.insert(
                        commit.clone(),
                        Published::new(rendered, options.per_environment),
                    );
                }
                let expected = published[&commit].folder(&t.environment, rel);
                let differ = differing_files(&expected, &folder.files);
                (!differ.is_empty()).then(|| {
                    let from = match &p.source_commit {
                        Some(c) => {
                            format!("source commit {}", c.chars().take(12).collect::<String>())
                        }
                        None => "this checkout (the publish recorded no source commit)".into(),
                    };
                    format!(
                        "{} differ from what kiln publish writes from {from} (last changed by {})",
                        differ.join(", "),
                        described(w)
                    )
                })
            }
            // Nothing to rebuild from (no write by its writer in the branch's history, or a
            // publish from a dirty checkout): judged by who last changed it.
            (true, Some(w), ..) => {
                let by_writer =
                    read_message(&folder.writes[0].message).is_by(stage_name.as_deref());
                let writer = match &stage_name {
                    Some(name) => format!("Stage {name}"),
                    None => "kiln publish".to_string(),
                };
                match &promotion {
                    _ if by_writer => None,
                    Some(_) => Some(format!(
                        "{} changed it after {writer}'s last write, which cannot be rebuilt (a dirty source commit, or a folder outside spec.source.renderedPath)",
                        described(w)
                    )),
                    None => Some(format!("{} wrote it, and {writer} never did", described(w))),
                }
            }
        };
        // The last write by the folder's writer, however old: what the Freight and commits
        // come from (a hand edit on top names none; a folder deleted since runs none).
        let written = promotion
            .as_ref()
            .or_else(|| history.iter().find(|w| w.writer != Writer::Other))
            .filter(|_| deployed);
        cells.push(Cell {
            project: t.project.clone(),
            component: t.component.clone(),
            environment: t.environment.clone(),
            application: t.application.clone(),
            repo_url: crate::git::redact(&t.repo_url),
            branch: t.branch.clone(),
            path: t.folder.clone(),
            stage: stage_name,
            state: if drift.is_some() {
                CellState::Drifted
            } else if !deployed {
                CellState::NotDeployed
            } else {
                CellState::InSync
            },
            images,
            freight: written.and_then(|w| w.freight.clone()),
            source_commit: written.and_then(|w| w.source_commit.clone()),
            app_commits: written.map(|w| w.app_commits.clone()).unwrap_or_default(),
            write_commit: last.map(|w| w.commit.clone()),
            time: last.map(|w| w.time),
            author: last.map(|w| w.author.clone()),
            lag: None,
            drift,
            earlier_layout: None,
            history,
            promotion,
            deployed,
        });
    }
    // A promotion names the source repository's commit it deployed, which a publish made:
    // that commit's `Kiln-App-Commit` trailers name the app-repo commits it was rendered
    // from (one trailer format for publish, history and status).
    if let Some(url) = &platform.source.repo_url {
        let source = location(url);
        let mut said: BTreeMap<String, Said> = BTreeMap::new();
        for c in cells.iter_mut().filter(|c| c.app_commits.is_empty()) {
            let Some(commit) = c.source_commit.clone() else {
                continue;
            };
            c.app_commits = said
                .entry(commit.clone())
                .or_insert_with(|| {
                    crate::git::commit_message(&source, &commit, &options.auth)
                        .map(|m| read_message(&m))
                        .unwrap_or_default()
                })
                .app_commits_of(&c.project, &c.environment, &c.component);
        }
    }
    // Lag: a Kargo cell whose upstream environment was written later with other images.
    let upstreams: BTreeMap<&str, &Vec<String>> = platform
        .environments
        .iter()
        .map(|e| (e.name.as_str(), &e.from))
        .collect();
    // Each cell by (project, component, environment), the first of each.
    let mut at: BTreeMap<(&str, &str, &str), &Cell> = BTreeMap::new();
    for u in &cells {
        at.entry((&u.project, &u.component, &u.environment))
            .or_insert(u);
    }
    // Every lag is judged on the cells as they stand before any is marked lagging.
    let mut lags: Vec<(usize, Lag)> = Vec::new();
    for (index, c) in cells.iter().enumerate().filter(|(_, c)| c.stage.is_some()) {
        for up in upstreams
            .get(c.environment.as_str())
            .map(|v| v.iter())
            .into_iter()
            .flatten()
        {
            let Some(&u) = at.get(&(c.project.as_str(), c.component.as_str(), up.as_str())) else {
                continue;
            };
            // Equal images (or none) still differ by Freight or commit.
            // `deployed`, not the state: a folder deleted by hand is drifted and runs nothing.
            if u.deployed && u.version() == c.version() {
                continue;
            }
            // Upstream moved on: it was written later, or what this cell runs is what
            // upstream ran before (the clock alone cannot tell commits of one second apart).
            let ran_before = u.history.iter().skip(1).any(|w| {
                Version::of(
                    &w.images,
                    w.freight.as_ref(),
                    &w.app_commits,
                    w.source_commit.as_ref(),
                ) == c.version()
            });
            if !u.deployed || (c.deployed && u.time <= c.time && !ran_before) {
                // Not behind: but did the upstream ever run what this cell runs?
                if let Some(message) =
                    skipped_upstream(c, u, &mut promotions, &options.repo_map, &options.auth)?
                {
                    lags.push((
                        index,
                        Lag {
                            upstream: up.clone(),
                            upstream_images: u.images.clone(),
                            message,
                            skipped: true,
                        },
                    ));
                    break;
                }
                continue;
            }
            let same_images = u.version().images == c.version().images;
            let tags = |x: &Cell| {
                if !x.deployed {
                    "nothing".to_string()
                } else if same_images {
                    // What tells them apart: the Freight or commit, after any images.
                    let v = x.version();
                    let tags: Vec<String> = x.images.iter().map(Image::short).collect();
                    [tags.join(","), v.short()]
                        .into_iter()
                        .filter(|t| !t.is_empty())
                        .collect::<Vec<_>>()
                        .join(" ")
                } else {
                    x.images
                        .iter()
                        .map(Image::short)
                        .collect::<Vec<_>>()
                        .join(",")
                }
            };
            lags.push((
                index,
                Lag {
                    upstream: up.clone(),
                    upstream_images: u.images.clone(),
                    message: format!("{up} runs {}, {} {}", tags(u), c.environment, tags(c)),
                    skipped: false,
                },
            ));
            break;
        }
    }
    earlier_layouts(&mut cells, &wanted, &mut promotions, options);
    for (index, lag) in lags {
        let c = &mut cells[index];
        // Running nothing while upstream runs something is lagging too: exit 1, `<lag`. A
        // skipped upstream makes only a cell in sync lagging.
        let lagging = match lag.skipped {
            true => c.state == CellState::InSync,
            false => matches!(c.state, CellState::InSync | CellState::NotDeployed),
        };
        if lagging {
            c.state = CellState::Lagging;
        }
        c.lag = Some(lag);
    }
    cells.sort_by_cached_key(|c| {
        (
            c.project.clone(),
            c.component.clone(),
            env_order
                .iter()
                .position(|e| *e == c.environment)
                .unwrap_or(usize::MAX),
        )
    });
    Ok(StatusReport {
        environments: env_order,
        cells,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn image_references_split_into_repository_tag_and_digest() {
        let i = Image::parse("registry:5000/acme/api:1.2.0@sha256:abc");
        assert_eq!(i.repository, "registry:5000/acme/api");
        assert_eq!(i.tag.as_deref(), Some("1.2.0"));
        assert_eq!(i.digest.as_deref(), Some("sha256:abc"));
        let i = Image::parse("registry:5000/acme/api");
        assert_eq!(
            (i.repository.as_str(), i.tag),
            ("registry:5000/acme/api", None)
        );
        let i = Image::parse("ghcr.io/acme/api:1.2.0@");
        assert_eq!(i.reference, "ghcr.io/acme/api:1.2.0");
        assert_eq!(i.digest, None);
        assert_eq!(
            Image::parse("a/b@sha256:0123456789abcdef").short(),
            "0123456789ab"
        );
    }

    #[test]
    fn promotion_messages_and_publish_trailers_are_read_back() {
        let said = read_message(
            "kiln: promote api to prod\n\nimage: ghcr.io/acme/api:1.2.0@sha256:aa\nsource: https://github.com/acme/platform.git@0123abcd\nsource: https://github.com/acme/api.git@77aa\nfreight: f00d\nstage: shop/api-prod\n",
        );
        assert_eq!(said.writer, Some(Writer::Promotion));
        assert_eq!(said.stage.as_deref(), Some("shop/api-prod"));
        assert_eq!(said.freight.as_deref(), Some("f00d"));
        assert_eq!(said.source_commit.as_deref(), Some("0123abcd"));
        assert_eq!(
            said.app_commits[0].1.repo_url,
            "https://github.com/acme/api.git"
        );
        assert_eq!(said.images, ["ghcr.io/acme/api:1.2.0@sha256:aa"]);
        let said = read_message(
            "kiln: update api (dev)\n\nKiln-Source-Commit: abc\nKiln-Version: 0.1.0\nKiln-App-Commit: https://x.example/app.git@def\n",
        );
        assert_eq!(said.writer, Some(Writer::Publish));
        assert_eq!(said.source_commit.as_deref(), Some("abc"));
        assert_eq!(said.app_commits[0].1.commit, "def");
        assert_eq!(read_message("fix by hand\n").writer, Some(Writer::Other));
        // Each cell's own app commit (issue: app commits per cell), the unattributed chart
        // for every cell.
        let said = read_message(
            "kiln: update worker (dev, prod)\n\nKiln-Version: 0.1.0\nKiln-App-Commit: shop/dev/worker https://x.example/worker.git@d1\nKiln-App-Commit: shop/prod/worker https://x.example/worker.git@p1\nKiln-App-Commit: shop/prod/other https://x.example/other.git@o1\nKiln-App-Commit: https://charts.example#db@sha256:c\n",
        );
        let of = |e: &str| -> Vec<String> {
            said.app_commits_of("shop", e, "worker")
                .iter()
                .map(|c| format!("{}@{}", c.repo_url, c.commit))
                .collect()
        };
        assert_eq!(
            of("prod"),
            [
                "https://x.example/worker.git@p1",
                "https://charts.example#db@sha256:c"
            ]
        );
        assert_eq!(of("dev")[0], "https://x.example/worker.git@d1");
    }

    /// What the benchmark times first is status's own read of the render (Applications and
    /// Stages line by line), and it finds every object the whole parse finds.
    #[test]
    fn the_render_read_counts_what_the_whole_parse_finds() {
        let bank = concat!(env!("CARGO_MANIFEST_DIR"), "/platforms/bank");
        let built =
            crate::pipeline::build(&crate::pipeline::RenderOptions::new(bank), &|_, _| {}).unwrap();
        let parsed = Objects::from_artifacts(&built.set).unwrap();
        let read = read_render_objects(&built.set).unwrap();
        assert_eq!(
            read,
            RenderRead {
                applications: parsed.applications.len(),
                stages: parsed.stages.len(),
                warehouses: parsed.warehouses.len(),
            }
        );
        assert!(read.stages > 0 && read.warehouses > 0);
    }

    #[test]
    fn differing_files_are_changed_added_or_removed_in_the_folder_of_that_repository() {
        let url = "https://github.com/example/deploy.git";
        let built: Built = [
            ((url, "envs/dev/a.yaml"), "a"),
            ((url, "envs/dev/b.yaml"), "b"),
            ((url, "envs/prod/a.yaml"), "x"),
            (
                ("https://github.com/example/other.git", "envs/dev/c.yaml"),
                "c",
            ),
        ]
        .into_iter()
        .map(|((u, p), b)| ((u.to_string(), p.to_string()), b.as_bytes().to_vec()))
        .collect();
        let mut tip = ArtifactSet::new();
        tip.insert("a.yaml", "a");
        tip.insert("b.yaml", "b");
        let differing = |built: &Built, url: &str, folder: &str, tip: &ArtifactSet| {
            differing_files(&expected_in(built, url, folder), tip)
        };
        let same = "https://GitHub.com/example/deploy/";
        assert!(differing(&built, same, "envs/dev", &tip).is_empty());
        tip.insert("a.yaml", "a, by hand");
        tip.insert("z.yaml", "z");
        assert_eq!(
            differing(&built, url, "envs/dev", &tip),
            ["a.yaml", "z.yaml"]
        );
        let mut tip = ArtifactSet::new();
        tip.insert("a.yaml", "a");
        assert_eq!(differing(&built, url, "envs/dev", &tip), ["b.yaml"]);
    }
}
