//! `kiln publish`: commits an [`ArtifactSet`] into a branch (and optional sub-path) of a Git
//! repository and moves the branch forward, never with force.
//!
//! The new tree is built in memory from the branch tip: kiln removes the files its ownership
//! marker lists and no longer generates, writes the generated files and a fresh marker, and
//! keeps every other entry of the tip's tree as is. No working tree is needed.
//!
//! Two transports:
//! - **local** (a path or `file://` URL): objects are written straight into the repository and
//!   the branch is moved with a compare-and-swap under git's ref lock. libgit2's own local
//!   transport force-updates the remote ref without checking its old value
//!   (src/libgit2/transports/local.c `local_push_update_remote_ref`), which would silently lose
//!   a concurrent publisher's commit, so kiln does not use it. When the branch is checked out in
//!   a non-bare repository, kiln also updates the changed files and the index, refusing first if
//!   any of them has local changes.
//! - **network** (https, git, ssh URLs): a scratch bare repository fetches the branch, kiln
//!   commits there and pushes; the server checks the old value (receive-pack), so a moved
//!   branch is rejected rather than overwritten.
//!
//! When the branch moved, kiln fetches, re-applies the artifact set on the new tip and retries,
//! up to `max_attempts` times. Every check runs before the branch moves, so a failed publish
//! leaves refs, index and working tree unchanged (unreferenced objects are harmless and
//! collected by `git gc`).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::Path;

use git2::{Oid, Repository};
use serde::Serialize;

use super::trailers::{self, Classifier, UnitChange};
use super::{
    Attempt, CommitTime, DEFAULT_MAX_ATTEMPTS, GitError, Identity, MARKER_FILE, OwnedMarker,
    Provenance, RemoteAuth, RepoLocation, join_path, lg, network_error, normalize_managed_path,
    open_local, redact, remote_callbacks, validate_rel_path,
};
use crate::artifact::{ArtifactSet, Scope};

/// Everything `publish` needs besides the artifact set.
#[derive(Debug, Clone)]
pub struct PublishOptions {
    /// `--repo`: a local path, a `file://` URL or a network URL.
    pub repo: String,
    /// Branch name without `refs/heads/` (created when missing).
    pub branch: String,
    /// `--path`: sub-directory of the branch kiln manages; `None` is the branch root.
    pub path: Option<String>,
    /// `--adopt`: take over a path that has no kiln marker.
    pub adopt: bool,
    /// Author and committer.
    pub author: Identity,
    /// Commit time (the CLI passes "now").
    pub time: CommitTime,
    /// Trailers: source commit, kiln version, spec digest.
    pub provenance: Provenance,
    /// Credentials for network remotes.
    pub auth: RemoteAuth,
    /// Attempts when the branch keeps moving; at least 1.
    pub max_attempts: u32,
    /// For per-environment publishes: the environment every file belongs to (its paths no
    /// longer name it). Recorded as the `Kiln-Environment` trailer.
    pub environment: Option<String>,
    /// The slice of the render this publish is responsible for (see [`Scope`]): kiln's files
    /// outside it are neither pruned nor disowned, so a filtered publish touches only its
    /// slice, as a filtered `render` does.
    pub scope: Scope,
    /// The source repository's checkout (the platform directory, or any path inside it):
    /// with it, a publish refuses when the branch was last published from a source commit
    /// that is not an ancestor of `provenance.source_commit` ([`GitError::OlderSource`]), so
    /// an older render never lands on a newer one. `None`: no check.
    pub source_repo: Option<std::path::PathBuf>,
    /// Fault injection for tests: stop right after the branch moved, before the checked-out
    /// working tree follows, leaving the state a `kill -9` at that moment leaves.
    #[doc(hidden)]
    pub crash_after_ref_update: bool,
}

impl PublishOptions {
    /// Options with defaults: branch root, no adoption, [`DEFAULT_MAX_ATTEMPTS`].
    pub fn new(
        repo: impl Into<String>,
        branch: impl Into<String>,
        author: Identity,
        time: CommitTime,
        provenance: Provenance,
    ) -> Self {
        Self {
            repo: repo.into(),
            branch: branch.into(),
            path: None,
            adopt: false,
            author,
            time,
            provenance,
            auth: RemoteAuth::default(),
            max_attempts: DEFAULT_MAX_ATTEMPTS,
            environment: None,
            scope: Scope::All,
            source_repo: None,
            crash_after_ref_update: false,
        }
    }
}

/// File counts of a publish, relative to the files kiln owned before.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FileCounts {
    pub added: usize,
    pub changed: usize,
    pub removed: usize,
}

/// What a publish did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PublishOutcome {
    /// The repository, with any password redacted.
    pub repo: String,
    pub branch: String,
    /// Managed path (`""` = branch root).
    pub path: String,
    /// The new commit; `None` when the branch already had this exact content.
    pub commit: Option<String>,
    /// The branch tip the commit builds on (`None` for a new branch).
    pub parent: Option<String>,
    /// Units added, changed, removed.
    pub changes: Vec<UnitChange>,
    pub files: FileCounts,
    /// Attempts used (more than 1 when the branch moved concurrently).
    pub attempts: u32,
}

impl PublishOutcome {
    /// What publishing `managed` into `options.branch` of the repository shown as `display`
    /// did on attempt `attempt`, building on `parent`: the commit `made` (and its plan), or
    /// none when the branch already had this content.
    fn new(
        display: &str,
        managed: &str,
        options: &PublishOptions,
        parent: Option<Oid>,
        attempt: u32,
        made: Option<(Oid, &Plan)>,
    ) -> PublishOutcome {
        PublishOutcome {
            repo: display.to_string(),
            branch: options.branch.clone(),
            path: managed.to_string(),
            commit: made.map(|(c, _)| c.to_string()),
            parent: parent.map(|p| p.to_string()),
            changes: made.map(|(_, p)| p.changes.clone()).unwrap_or_default(),
            files: made.map(|(_, p)| p.files).unwrap_or_default(),
            attempts: attempt,
        }
    }
}

impl fmt::Display for PublishOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let place = if self.path.is_empty() {
            format!("`{}`", self.branch)
        } else {
            format!("`{}` path `{}`", self.branch, self.path)
        };
        match &self.commit {
            None => write!(f, "{place} of {} is up to date: no new commit", self.repo),
            Some(commit) => {
                writeln!(
                    f,
                    "published {} to {place} of {}: {} added, {} changed, {} removed",
                    &commit[..commit.len().min(12)],
                    self.repo,
                    self.files.added,
                    self.files.changed,
                    self.files.removed
                )?;
                for change in &self.changes {
                    writeln!(f, "  {change}")?;
                }
                Ok(())
            }
        }
    }
}

/// Commits `set` into `options.branch` (at `options.path`) of `options.repo` and moves the
/// branch forward (local repositories) or pushes it (network remotes).
///
/// Errors: [`GitError::UnmanagedPath`] (no marker, no `adopt`),
/// [`GitError::UnownedFileInTheWay`], [`GitError::InvalidPath`]/[`GitError::InvalidBranch`],
/// [`GitError::RepositoryNotFound`], [`GitError::RemoteUnreachable`],
/// [`GitError::AuthenticationFailed`], [`GitError::PushRejected`] after `max_attempts`,
/// [`GitError::WorkingTreeConflict`]. On error nothing visible changed.
pub fn publish(set: &ArtifactSet, options: &PublishOptions) -> Result<PublishOutcome, GitError> {
    let refname = format!("refs/heads/{}", options.branch);
    if !is_valid_branch_name(&options.branch) {
        return Err(GitError::InvalidBranch {
            branch: options.branch.clone(),
        });
    }
    let managed = normalize_managed_path(options.path.as_deref())?;
    for path in set.paths() {
        let segments = validate_rel_path(path)?;
        if path == MARKER_FILE {
            return Err(GitError::InvalidPath {
                path: path.to_string(),
                reason: "reserved for kiln's ownership marker",
            });
        }
        // `a` and `a/b` cannot both be files.
        for depth in 1..segments.len() {
            let dir = segments[..depth].join("/");
            if set.files.contains_key(&dir) {
                return Err(GitError::InvalidPath {
                    path: dir,
                    reason: "is both a file and a directory in the render",
                });
            }
        }
    }
    match RepoLocation::parse(&options.repo) {
        RepoLocation::Local(dir) => publish_local(&dir, &refname, &managed, set, options),
        RepoLocation::Remote(url) => publish_remote(&url, &refname, &managed, set, options),
    }
}

/// A branch name as `git check-ref-format --branch` accepts it, and no name that would read as
/// something else: `HEAD` and `@` (git's names for the current commit), names starting with
/// `-` (an option), and `refs/…` (`--branch refs/tags/v1` would create
/// `refs/heads/refs/tags/v1`, not a tag).
pub fn is_valid_branch_name(branch: &str) -> bool {
    !branch.is_empty()
        && branch != "HEAD"
        && branch != "@"
        && !branch.starts_with('-')
        && !branch.starts_with("refs/")
        && git2::Reference::is_valid_name(&format!("refs/heads/{branch}"))
}

/// A planned commit: tree built, message written, not yet referenced.
struct Plan {
    tree: Oid,
    message: String,
    changes: Vec<UnitChange>,
    files: FileCounts,
    /// Paths (relative to the branch root) whose content changes: `Some(bytes)` written,
    /// `None` removed. Used to update a checked-out working tree.
    touched: BTreeMap<String, Option<Vec<u8>>>,
}

/// Builds the new tree on top of `parent` and decides whether a commit is needed.
fn plan_commit(
    repo: &Repository,
    parent: Option<&git2::Commit<'_>>,
    set: &ArtifactSet,
    managed: &str,
    options: &PublishOptions,
) -> Result<Option<Plan>, GitError> {
    let parent_tree = parent
        .map(|c| c.tree())
        .transpose()
        .map_err(lg("reading the branch tip"))?;

    // What is at the managed path today.
    let mut existing: BTreeMap<String, Oid> = BTreeMap::new();
    if let Some(tree) = &parent_tree {
        if managed.is_empty() {
            collect_blobs(tree, &mut existing)?;
        } else {
            match tree.get_path(Path::new(managed)) {
                Ok(entry) if entry.kind() == Some(git2::ObjectType::Tree) => {
                    let sub = repo.find_tree(entry.id()).map_err(lg("reading a tree"))?;
                    collect_blobs(&sub, &mut existing)?;
                }
                Ok(_) => {
                    return Err(GitError::UnownedFileInTheWay {
                        branch: options.branch.clone(),
                        path: managed.to_string(),
                    });
                }
                Err(_) => {}
            }
        }
    }
    let marker_path = join_path(managed, MARKER_FILE);
    let owned: BTreeSet<String> = match existing.get(MARKER_FILE) {
        Some(id) => {
            let blob = repo.find_blob(*id).map_err(lg("reading the marker"))?;
            super::parse_marker(&marker_path, blob.content())?.files
        }
        _ if existing.is_empty() || options.adopt => BTreeSet::new(),
        _ => {
            return Err(GitError::UnmanagedPath {
                branch: options.branch.clone(),
                path: if managed.is_empty() {
                    "/".to_string()
                } else {
                    managed.to_string()
                },
                marker: MARKER_FILE,
            });
        }
    };

    // Never overwrite a file kiln did not write (unless adopting).
    if !options.adopt
        && let Some(path) = set
            .paths()
            .find(|p| existing.contains_key(*p) && !owned.contains(*p))
    {
        return Err(GitError::UnownedFileInTheWay {
            branch: options.branch.clone(),
            path: join_path(managed, path),
        });
    }

    // The "before" side of the change summary: kiln's files, plus, when adopting, the files it
    // is taking over, so adopting identical content reports no change.
    let old: BTreeMap<String, Oid> = existing
        .iter()
        .filter(|(p, _)| {
            (owned.contains(*p) && options.scope.contains(p))
                || (options.adopt && set.files.contains_key(*p))
        })
        .map(|(p, id)| (p.clone(), *id))
        .collect();
    let mut new: BTreeMap<String, Oid> = BTreeMap::new();
    for (path, bytes) in &set.files {
        new.insert(path.clone(), super::blob_id(bytes)?);
    }

    let mut root = match &parent_tree {
        Some(tree) => expand_tree(tree),
        None => BTreeMap::new(),
    };
    let managed_segments: Vec<&str> = if managed.is_empty() {
        Vec::new()
    } else {
        managed.split('/').collect()
    };
    let mut touched: BTreeMap<String, Option<Vec<u8>>> = BTreeMap::new();
    let mut files = FileCounts::default();
    let pruned = |p: &&String| !set.files.contains_key(*p) && options.scope.contains(p);
    for path in owned.iter().filter(pruned) {
        if existing.contains_key(path) {
            files.removed += 1;
            touched.insert(join_path(managed, path), None);
        }
        let segments = join_segments(&managed_segments, path);
        remove_file(repo, &mut root, &segments)?;
    }
    // Owned files outside the slice stay owned (and stay listed) for the next full publish.
    let kept = owned
        .iter()
        .filter(|p| !set.files.contains_key(*p) && !options.scope.contains(p));
    let marker = OwnedMarker::new(set.paths().map(str::to_string).chain(kept.cloned())).to_bytes();
    let generated = set
        .files
        .iter()
        .map(|(p, b)| (p.as_str(), b.as_slice()))
        .chain(std::iter::once((MARKER_FILE, marker.as_slice())));
    for (path, bytes) in generated {
        let full = join_path(managed, path);
        let new_id = match new.get(path) {
            Some(id) => *id,
            None => super::blob_id(bytes)?, // the marker
        };
        match existing.get(path) {
            Some(id) if *id == new_id => continue,
            Some(_) => {
                if path != MARKER_FILE {
                    files.changed += 1;
                }
            }
            None => {
                if path != MARKER_FILE {
                    files.added += 1;
                }
            }
        }
        let id = repo.blob(bytes).map_err(lg("writing a blob"))?;
        let segments = join_segments(&managed_segments, path);
        insert_file(repo, &mut root, &segments, id).map_err(|e| match e {
            InsertError::InTheWay(at) => GitError::UnownedFileInTheWay {
                branch: options.branch.clone(),
                path: at,
            },
            InsertError::Git(e) => e,
        })?;
        touched.insert(full, Some(bytes.to_vec()));
    }
    let tree = write_dir(repo, &root)?.unwrap_or(empty_tree(repo)?);
    if parent_tree.as_ref().map(|t| t.id()) == Some(tree) {
        return Ok(None);
    }

    let classifier = Classifier::new(
        old.keys().chain(new.keys()).map(String::as_str),
        options.environment.as_deref(),
    );
    let changes = trailers::unit_changes(&classifier, &old, &new);
    let images = trailers::images_by_unit(set, &classifier);
    let message = trailers::commit_message(
        &changes,
        &images,
        &options.provenance,
        options.environment.as_deref(),
    );
    Ok(Some(Plan {
        tree,
        message,
        changes,
        files,
        touched,
    }))
}

fn join_segments<'a>(base: &[&'a str], rel: &'a str) -> Vec<&'a str> {
    base.iter().copied().chain(rel.split('/')).collect()
}

/// All blobs (and other non-tree entries) under `tree`, by path.
fn collect_blobs(tree: &git2::Tree<'_>, out: &mut BTreeMap<String, Oid>) -> Result<(), GitError> {
    tree.walk(git2::TreeWalkMode::PreOrder, |dir, entry| {
        if entry.kind() != Some(git2::ObjectType::Tree) {
            out.insert(
                format!("{dir}{}", entry.name().unwrap_or_default()),
                entry.id(),
            );
        }
        git2::TreeWalkResult::Ok
    })
    .map_err(lg("walking a tree"))
}

/// An in-memory tree: entries kept as they are, or directories opened for editing.
enum Node {
    Kept { id: Oid, mode: i32 },
    Dir(Entries),
}

const MODE_TREE: i32 = 0o040000;
const MODE_BLOB: i32 = 0o100644;

/// Directory entries by raw name bytes: names kiln does not generate (even non-UTF-8 ones) are
/// written back exactly as they were.
type Entries = BTreeMap<Vec<u8>, Node>;

fn expand_tree(tree: &git2::Tree<'_>) -> Entries {
    tree.iter()
        .map(|entry| {
            (
                entry.name_bytes().to_vec(),
                Node::Kept {
                    id: entry.id(),
                    mode: entry.filemode(),
                },
            )
        })
        .collect()
}

/// Turns a kept sub-tree into an editable directory; `None` if the node is not a tree.
fn open_dir<'n>(
    repo: &Repository,
    node: &'n mut Node,
) -> Result<Option<&'n mut Entries>, GitError> {
    if let Node::Kept { id, mode } = node {
        if *mode != MODE_TREE {
            return Ok(None);
        }
        let tree = repo.find_tree(*id).map_err(lg("reading a tree"))?;
        *node = Node::Dir(expand_tree(&tree));
    }
    match node {
        Node::Dir(children) => Ok(Some(children)),
        Node::Kept { .. } => Ok(None),
    }
}

enum InsertError {
    InTheWay(String),
    Git(GitError),
}

impl From<GitError> for InsertError {
    fn from(e: GitError) -> Self {
        InsertError::Git(e)
    }
}

fn insert_file(
    repo: &Repository,
    root: &mut Entries,
    segments: &[&str],
    id: Oid,
) -> Result<(), InsertError> {
    let Some((last, dirs)) = segments.split_last() else {
        return Ok(());
    };
    let mut current = root;
    for (i, segment) in dirs.iter().enumerate() {
        let node = current
            .entry(segment.as_bytes().to_vec())
            .or_insert_with(|| Node::Dir(Entries::new()));
        match open_dir(repo, node)? {
            Some(children) => current = children,
            // A file where kiln needs a directory: not kiln's (owned files were validated).
            None => return Err(InsertError::InTheWay(segments[..=i].join("/"))),
        }
    }
    match current.get(last.as_bytes()) {
        // A directory pruned empty in this same publish (kiln's old layout) is no obstacle.
        Some(Node::Dir(children)) if is_empty_dir(children) => {
            current.insert(
                last.as_bytes().to_vec(),
                Node::Kept {
                    id,
                    mode: MODE_BLOB,
                },
            );
            Ok(())
        }
        Some(Node::Dir(_))
        | Some(Node::Kept {
            mode: MODE_TREE, ..
        }) => Err(InsertError::InTheWay(segments.join("/"))),
        _ => {
            current.insert(
                last.as_bytes().to_vec(),
                Node::Kept {
                    id,
                    mode: MODE_BLOB,
                },
            );
            Ok(())
        }
    }
}

/// `true` when a directory holds no file at any depth (Git would not store it).
fn is_empty_dir(children: &Entries) -> bool {
    children.values().all(|node| match node {
        Node::Dir(grandchildren) => is_empty_dir(grandchildren),
        Node::Kept { .. } => false,
    })
}

fn remove_file(repo: &Repository, root: &mut Entries, segments: &[&str]) -> Result<(), GitError> {
    let Some((last, dirs)) = segments.split_last() else {
        return Ok(());
    };
    let mut current = root;
    for segment in dirs {
        let Some(node) = current.get_mut(segment.as_bytes()) else {
            return Ok(());
        };
        match open_dir(repo, node)? {
            Some(children) => current = children,
            None => return Ok(()),
        }
    }
    if let Some(Node::Kept { mode, .. }) = current.get(last.as_bytes())
        && *mode != MODE_TREE
    {
        current.remove(last.as_bytes());
    }
    Ok(())
}

/// Writes an edited directory; `None` when it ended up empty (Git has no empty trees inside a
/// tree, so pruning the last file of a directory removes the directory).
fn write_dir(repo: &Repository, dir: &Entries) -> Result<Option<Oid>, GitError> {
    let mut builder = repo.treebuilder(None).map_err(lg("building a tree"))?;
    for (name, node) in dir {
        match node {
            Node::Kept { id, mode } => {
                builder
                    .insert(name.as_slice(), *id, *mode)
                    .map_err(lg("building a tree"))?;
            }
            Node::Dir(children) => {
                if let Some(id) = write_dir(repo, children)? {
                    builder
                        .insert(name.as_slice(), id, MODE_TREE)
                        .map_err(lg("building a tree"))?;
                }
            }
        }
    }
    if builder.is_empty() {
        return Ok(None);
    }
    builder.write().map(Some).map_err(lg("writing a tree"))
}

fn empty_tree(repo: &Repository) -> Result<Oid, GitError> {
    repo.treebuilder(None)
        .and_then(|b| b.write())
        .map_err(lg("writing the empty tree"))
}

/// The commit the branch points at, if the branch exists.
fn branch_tip<'r>(
    repo: &'r Repository,
    refname: &str,
) -> Result<Option<git2::Commit<'r>>, GitError> {
    match repo.find_reference(refname) {
        Ok(reference) => reference
            .peel_to_commit()
            .map(Some)
            .map_err(lg("reading the branch tip")),
        Err(e) if e.code() == git2::ErrorCode::NotFound => Ok(None),
        Err(e) => Err(lg("reading the branch")(e)),
    }
}

fn make_commit(
    repo: &Repository,
    parent: Option<&git2::Commit<'_>>,
    plan: &Plan,
    options: &PublishOptions,
) -> Result<Oid, GitError> {
    let signature = options.author.signature(options.time)?;
    let tree = repo
        .find_tree(plan.tree)
        .map_err(lg("reading the new tree"))?;
    let parents: Vec<&git2::Commit<'_>> = parent.into_iter().collect();
    repo.commit(None, &signature, &signature, &plan.message, &tree, &parents)
        .map_err(lg("writing the commit"))
}

/// How far back [`last_published_source`] looks for kiln's last publish into the path.
const SOURCE_WALK_LIMIT: usize = 100_000;

/// The newest kiln commit on the first-parent chain from `tip` that changed `managed` (the
/// root: anything), with the source commit it recorded (`-dirty` dropped). Commits others
/// made (Kargo's promotions, hand edits, another platform's publish into another path) are
/// passed over.
fn last_published_source(
    tip: &git2::Commit<'_>,
    managed: &str,
) -> Result<Option<(Oid, Option<String>)>, GitError> {
    let mut commit = Some(tip.clone());
    let mut seen = 0;
    while let Some(c) = commit {
        seen += 1;
        if seen > SOURCE_WALK_LIMIT {
            break;
        }
        let parent = c.parent(0).ok();
        if let Some(trailers) = trailers::parse_message(&String::from_utf8_lossy(c.message_bytes()))
        {
            let tree = c.tree().map_err(lg("reading a commit's tree"))?;
            let at = |t: &git2::Tree<'_>| -> Option<Oid> {
                if managed.is_empty() {
                    Some(t.id())
                } else {
                    t.get_path(Path::new(managed)).ok().map(|e| e.id())
                }
            };
            let before = match &parent {
                Some(p) => at(&p.tree().map_err(lg("reading a commit's tree"))?),
                None => None,
            };
            if at(&tree) != before {
                let source = trailers
                    .source_commit
                    .map(|s| s.trim_end_matches("-dirty").to_string());
                return Ok(Some((c.id(), source)));
            }
        }
        commit = parent;
    }
    Ok(None)
}

/// Refuses a publish whose source commit does not contain the one the branch was last
/// published from ([`GitError::OlderSource`]): the same commit again (a no-op, or a new kiln
/// version) and any descendant pass. Runs on every attempt, against the tip it builds on, so
/// of two concurrent publishers of different commits the older one fails once the newer one
/// landed, whichever started first. A source commit the checkout does not hold (a shallow
/// clone, another repository) is refused too: kiln cannot tell it is older, and guessing
/// wrong is a revert.
fn check_source_order(
    tip: Option<&git2::Commit<'_>>,
    managed: &str,
    options: &PublishOptions,
) -> Result<(), GitError> {
    let (Some(tip), Some(source_dir), Some(publishing)) = (
        tip,
        options.source_repo.as_deref(),
        options.provenance.source_commit.as_deref(),
    ) else {
        return Ok(());
    };
    let publishing = publishing.trim_end_matches("-dirty");
    let Some((kiln_commit, Some(published))) = last_published_source(tip, managed)? else {
        return Ok(());
    };
    if published == publishing {
        return Ok(());
    }
    let refuse = |reason: &str| GitError::OlderSource {
        branch: options.branch.clone(),
        kiln_commit: kiln_commit.to_string(),
        published: published.clone(),
        publishing: publishing.to_string(),
        reason: reason.to_string(),
    };
    let Ok(source) = Repository::discover(source_dir) else {
        return Ok(());
    };
    let (Ok(new), Ok(old)) = (Oid::from_str(publishing), Oid::from_str(&published)) else {
        return Err(refuse(" (not commit ids)"));
    };
    if source.find_commit(old).is_err() {
        return Err(refuse(&format!(
            " ({published} is not in the source repository at `{}`; a shallow clone?)",
            source_dir.display()
        )));
    }
    match source.graph_descendant_of(new, old) {
        Ok(true) => Ok(()),
        _ => Err(refuse("")),
    }
}

/// [`super::push_with_retry`] for a publish into the repository shown as `display`: a branch
/// that kept moving is [`GitError::PushRejected`].
fn retried(
    display: &str,
    options: &PublishOptions,
    attempt: impl FnMut(u32) -> Result<Attempt<PublishOutcome>, GitError>,
) -> Result<PublishOutcome, GitError> {
    super::push_with_retry(options.max_attempts, attempt, |attempts, message| {
        GitError::PushRejected {
            url: display.to_string(),
            branch: options.branch.clone(),
            attempts,
            message,
        }
    })
}

fn publish_local(
    dir: &Path,
    refname: &str,
    managed: &str,
    set: &ArtifactSet,
    options: &PublishOptions,
) -> Result<PublishOutcome, GitError> {
    let repo = open_local(dir)?;
    let display = redact(&dir.display().to_string());
    // kiln publishers into one non-bare repository take turns: the working tree update is part
    // of a publish, and a second publisher would otherwise take the first one's half-written
    // files for local changes. The lock is an OS file lock: a killed publisher releases it.
    let _turn = if repo.is_bare() {
        None
    } else {
        Some(lock_repository(&repo)?)
    };
    if !repo.is_bare() {
        recover_interrupted(&repo, &display, options)?;
    }
    let mut lock_waits = 0;
    retried(&display, options, |attempt| {
        let tip = branch_tip(&repo, refname)?;
        let parent = tip.as_ref().map(|t| t.id());
        let outcome = |made| PublishOutcome::new(&display, managed, options, parent, attempt, made);
        check_source_order(tip.as_ref(), managed, options)?;
        let Some(plan) = plan_commit(&repo, tip.as_ref(), set, managed, options)? else {
            return Ok(Attempt::Done(outcome(None)));
        };
        let commit = make_commit(&repo, tip.as_ref(), &plan, options)?;
        let checked_out = is_checked_out(&repo, refname)?;
        if checked_out {
            check_worktree_clean(&repo, &display, options, &plan)?;
            check_no_symlinks(&repo, dir, &plan)?;
            check_index_unlocked(&repo)?;
            // Written before the branch moves: if kiln dies before the working tree
            // follows, the next publish finds this and finishes the update (see
            // `recover_interrupted`).
            write_journal(&repo, refname, tip.as_ref().map(|t| t.id()), commit)?;
        }
        let log = format!("kiln publish: {}", first_line(&plan.message));
        // Compare-and-swap: only move the branch if it still points where we built on.
        let moved = super::move_branch(&repo, refname, commit, tip.as_ref().map(|t| t.id()), &log);
        if moved.is_err() && checked_out {
            clear_journal(&repo);
        }
        match moved {
            Ok(_) => {
                if tip.is_none() {
                    point_head_at_first_branch(&repo, refname)?;
                }
                if options.crash_after_ref_update {
                    return Ok(Attempt::Done(outcome(Some((commit, &plan)))));
                }
                if checked_out {
                    update_worktree(&repo, dir, &plan.touched)?;
                    clear_journal(&repo);
                }
                Ok(Attempt::Done(outcome(Some((commit, &plan)))))
            }
            // Another writer holds the ref lock right now: wait for it, but not forever: a
            // `.lock` file left by a killed git or kiln would block every writer. After the
            // wait it is reported as what it is.
            Err(e) if e.code() == git2::ErrorCode::Locked && lock_waits < MAX_LOCK_WAITS => {
                lock_waits += 1;
                Ok(Attempt::Busy)
            }
            Err(e)
                if e.code() == git2::ErrorCode::Locked && stale_lock(&repo, refname).is_some() =>
            {
                let (path, age_seconds) = stale_lock(&repo, refname).unwrap_or_default();
                Err(GitError::StaleLock {
                    path,
                    branch: options.branch.clone(),
                    age_seconds,
                })
            }
            Err(e)
                if matches!(
                    e.code(),
                    git2::ErrorCode::Modified | git2::ErrorCode::Exists | git2::ErrorCode::Locked
                ) =>
            {
                Ok(Attempt::Moved(e.message().to_string()))
            }
            Err(e) => Err(lg("moving the branch")(e)),
        }
    })
}

/// The lock file of `refname` and its age in seconds, when it exists.
fn stale_lock(repo: &Repository, refname: &str) -> Option<(std::path::PathBuf, u64)> {
    let path = repo.path().join(format!("{refname}.lock"));
    let modified = std::fs::metadata(&path).ok()?.modified().ok()?;
    let age = std::time::SystemTime::now()
        .duration_since(modified)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    Some((path, age))
}

/// When kiln creates the first branch of a bare repository whose HEAD names a branch that
/// does not exist (`master` by default), HEAD is pointed at the new branch, so `git clone`
/// checks it out. A non-bare repository's HEAD is its checkout and is left alone.
fn point_head_at_first_branch(repo: &Repository, refname: &str) -> Result<(), GitError> {
    if !repo.is_bare() {
        return Ok(());
    }
    let head = repo.find_reference("HEAD").map_err(lg("reading HEAD"))?;
    let Some(target) = head.symbolic_target().ok().flatten().map(str::to_string) else {
        return Ok(());
    };
    if target == refname || repo.find_reference(&target).is_ok() {
        return Ok(());
    }
    let others = repo
        .branches(Some(git2::BranchType::Local))
        .map_err(lg("listing branches"))?
        .flatten()
        .filter_map(|(b, _)| b.get().name().ok().map(str::to_string))
        .any(|name| name != refname);
    if !others {
        repo.set_head(refname)
            .map_err(lg("pointing HEAD at the new branch"))?;
    }
    Ok(())
}

/// Takes kiln's publish lock of a non-bare repository (`.git/kiln-publish.lock`, an OS file
/// lock held until the returned file is dropped or the process dies).
fn lock_repository(repo: &Repository) -> Result<std::fs::File, GitError> {
    let path = repo.path().join("kiln-publish.lock");
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|source| GitError::Io {
            operation: "open the publish lock",
            path: path.clone(),
            source,
        })?;
    file.lock().map_err(|source| GitError::Io {
        operation: "lock",
        path,
        source,
    })?;
    Ok(file)
}

const JOURNAL: &str = "kiln-publish-pending";

/// Records `refname old new` before the branch moves (see `recover_interrupted`).
fn write_journal(
    repo: &Repository,
    refname: &str,
    old: Option<Oid>,
    new: Oid,
) -> Result<(), GitError> {
    let path = repo.path().join(JOURNAL);
    let old = old.unwrap_or(Oid::ZERO_SHA1);
    std::fs::write(&path, format!("{refname} {old} {new}\n")).map_err(|source| GitError::Io {
        operation: "write",
        path,
        source,
    })
}

fn clear_journal(repo: &Repository) {
    let _ = std::fs::remove_file(repo.path().join(JOURNAL));
}

/// Finishes a publish that was killed after moving the checked-out branch but before its
/// working tree and index followed: the branch holds the new commit, the files the old one.
/// The files that differ between the two commits are brought to the new commit when they
/// still hold the old content (or already the new); anything else is someone's change and is
/// reported, never overwritten. Runs under the publish lock, before anything else.
fn recover_interrupted(
    repo: &Repository,
    display: &str,
    options: &PublishOptions,
) -> Result<(), GitError> {
    let path = repo.path().join(JOURNAL);
    let Ok(text) = std::fs::read_to_string(&path) else {
        return Ok(());
    };
    let mut parts = text.split_whitespace();
    let (Some(refname), Some(old), Some(new)) = (parts.next(), parts.next(), parts.next()) else {
        clear_journal(repo);
        return Ok(());
    };
    let (Ok(old), Ok(new)) = (Oid::from_str(old), Oid::from_str(new)) else {
        clear_journal(repo);
        return Ok(());
    };
    let tip = branch_tip(repo, refname)?.map(|c| c.id());
    // The branch never moved (killed before), or moved on since: nothing of ours to finish.
    if tip != Some(new) || !is_checked_out(repo, refname)? {
        clear_journal(repo);
        return Ok(());
    }
    let tree_of = |id: Oid| -> Result<Option<git2::Tree<'_>>, GitError> {
        if id.is_zero() {
            return Ok(None);
        }
        let commit = repo.find_commit(id).map_err(lg("reading a commit"))?;
        commit
            .tree()
            .map(Some)
            .map_err(lg("reading a commit's tree"))
    };
    let (old_tree, new_tree) = (tree_of(old)?, tree_of(new)?);
    let diff = repo
        .diff_tree_to_tree(old_tree.as_ref(), new_tree.as_ref(), None)
        .map_err(lg("comparing the interrupted publish"))?;
    let workdir = repo
        .workdir()
        .ok_or_else(|| lg("finding the working tree")(git2::Error::from_str("bare")))?
        .to_path_buf();
    let blob = |id: Oid| -> Result<Option<Vec<u8>>, GitError> {
        if id.is_zero() {
            return Ok(None);
        }
        Ok(Some(
            repo.find_blob(id)
                .map_err(lg("reading a blob"))?
                .content()
                .to_vec(),
        ))
    };
    let mut touched = BTreeMap::new();
    let mut conflicts = Vec::new();
    for delta in diff.deltas() {
        let Some(file) = delta.new_file().path().or(delta.old_file().path()) else {
            continue;
        };
        let rel = file.to_string_lossy().replace('\\', "/");
        let before = blob(delta.old_file().id())?;
        let after = blob(delta.new_file().id())?;
        let on_disk = std::fs::read(workdir.join(&rel)).ok();
        if on_disk == before || on_disk == after {
            touched.insert(rel, after);
        } else {
            conflicts.push(rel);
        }
    }
    if !conflicts.is_empty() {
        return Err(GitError::WorkingTreeConflict {
            repo: display.to_string(),
            branch: options.branch.clone(),
            paths: conflicts.join(", "),
        });
    }
    let plan_paths: Vec<String> = touched.keys().cloned().collect();
    for rel in &plan_paths {
        check_path_has_no_symlink(&workdir, rel)?;
    }
    remove_own_index_lock(repo, &path);
    check_index_unlocked(repo)?;
    update_worktree(repo, &workdir, &touched)?;
    clear_journal(repo);
    Ok(())
}

/// git's and libgit2's lock on the index of `repo`.
fn index_lock(repo: &Repository) -> std::path::PathBuf {
    repo.path().join("index.lock")
}

/// A lock younger than this may belong to a git process at work (git holds the index lock
/// for the length of one command); an older one, made during kiln's interrupted update, was
/// left by the kill.
const INDEX_LOCK_SETTLED: std::time::Duration = std::time::Duration::from_secs(10);

/// Removes `index.lock` when it is the one a killed kiln publish left (issue 39, item 13): the
/// publish journal `journal` (kiln's marker of its own unfinished update, read under the
/// publish lock) is there, the lock was made after it (during that update's index write) and
/// has not changed for [`INDEX_LOCK_SETTLED`]. Any other lock is left to
/// [`check_index_unlocked`] to report.
fn remove_own_index_lock(repo: &Repository, journal: &Path) {
    let lock = index_lock(repo);
    let modified = |p: &Path| std::fs::symlink_metadata(p).and_then(|m| m.modified()).ok();
    let (Some(started), Some(locked)) = (modified(journal), modified(&lock)) else {
        return;
    };
    let settled = std::time::SystemTime::now()
        .duration_since(locked)
        .is_ok_and(|age| age >= INDEX_LOCK_SETTLED);
    if locked >= started && settled {
        let _ = std::fs::remove_file(&lock);
    }
}

/// Refuses, before anything changes, when the index is locked: libgit2 would otherwise fail
/// at the end of the update with a generic "failed to create locked file".
fn check_index_unlocked(repo: &Repository) -> Result<(), GitError> {
    let path = index_lock(repo);
    let Ok(meta) = std::fs::symlink_metadata(&path) else {
        return Ok(());
    };
    let age_seconds = meta
        .modified()
        .ok()
        .and_then(|m| std::time::SystemTime::now().duration_since(m).ok())
        .map_or(0, |d| d.as_secs());
    Err(GitError::IndexLocked { path, age_seconds })
}

/// Refuses when a file kiln is about to write or remove in a checked-out working tree lies
/// below a symbolic link, or is one: the same rule as the directory writer (`src/write.rs`),
/// so an untracked `deploy/web -> /victim` never sends kiln's files elsewhere.
fn check_no_symlinks(repo: &Repository, dir: &Path, plan: &Plan) -> Result<(), GitError> {
    let workdir = repo.workdir().unwrap_or(dir).to_path_buf();
    for path in plan.touched.keys() {
        check_path_has_no_symlink(&workdir, path)?;
    }
    Ok(())
}

fn check_path_has_no_symlink(workdir: &Path, rel: &str) -> Result<(), GitError> {
    let mut checked = BTreeSet::new();
    crate::write::check_no_symlinked_dir(workdir, rel, &mut checked).map_err(|e| match e {
        crate::write::WriteError::SymlinkInPath { path } => GitError::SymlinkInWorktree { path },
        other => GitError::Io {
            operation: "inspect",
            path: workdir.join(rel),
            source: std::io::Error::other(other.to_string()),
        },
    })?;
    let file = workdir.join(rel);
    if std::fs::symlink_metadata(&file).is_ok_and(|m| m.file_type().is_symlink()) {
        return Err(GitError::SymlinkInWorktree {
            path: file.display().to_string(),
        });
    }
    Ok(())
}

/// How often a local publish waits for another writer's ref lock (10 ms each).
const MAX_LOCK_WAITS: u32 = 200;

fn first_line(message: &str) -> &str {
    message.lines().next().unwrap_or_default()
}

fn is_checked_out(repo: &Repository, refname: &str) -> Result<bool, GitError> {
    if repo.is_bare() {
        return Ok(false);
    }
    let head = repo.find_reference("HEAD").map_err(lg("reading HEAD"))?;
    Ok(head.symbolic_target().ok().flatten() == Some(refname))
}

/// Refuses when a file kiln is about to write or remove has local changes (staged, unstaged or
/// untracked), so kiln never clobbers someone's work.
fn check_worktree_clean(
    repo: &Repository,
    display: &str,
    options: &PublishOptions,
    plan: &Plan,
) -> Result<(), GitError> {
    let mut dirty = Vec::new();
    for path in plan.touched.keys() {
        match repo.status_file(Path::new(path)) {
            Ok(status) if status.is_empty() => {}
            Err(e) if e.code() == git2::ErrorCode::NotFound => {}
            _ => dirty.push(path.clone()),
        }
    }
    if dirty.is_empty() {
        Ok(())
    } else {
        Err(GitError::WorkingTreeConflict {
            repo: display.to_string(),
            branch: options.branch.clone(),
            paths: dirty.join(", "),
        })
    }
}

/// The temporary file a working-tree file is written to before it is renamed into place.
fn temp_name(file: &Path) -> std::path::PathBuf {
    let name = file
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    file.with_file_name(format!(".{name}.kiln-publish-tmp"))
}

/// Writes a working-tree file whole or not at all (issue 39, item 12): the bytes go to a
/// temporary file beside it (a deterministic name: the one a killed publish left is replaced,
/// never piled up), which is then renamed over it. A publish killed mid-write leaves the old
/// file (and a temporary one), never a truncated file, so the next publish, finding the
/// journal, sees the old content and finishes the update (`recover_interrupted`).
fn write_by_rename(file: &Path, bytes: &[u8]) -> Result<(), GitError> {
    use std::io::Write;
    let tmp = temp_name(file);
    let io = |operation: &'static str, path: &Path| {
        let path = path.to_path_buf();
        move |source| GitError::Io {
            operation,
            path,
            source,
        }
    };
    // A leftover (or a link someone put there) is removed, then the name is created anew.
    match std::fs::remove_file(&tmp) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(io("remove", &tmp)(e)),
    }
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&tmp)
        .map_err(io("create", &tmp))?;
    f.write_all(bytes).map_err(io("write", &tmp))?;
    f.sync_all().map_err(io("sync", &tmp))?;
    drop(f);
    std::fs::rename(&tmp, file).map_err(io("rename", file))
}

/// Brings the checked-out files and the index in line with the new commit (only the paths kiln
/// changed; other files are not looked at).
fn update_worktree(
    repo: &Repository,
    dir: &Path,
    touched: &BTreeMap<String, Option<Vec<u8>>>,
) -> Result<(), GitError> {
    let workdir = repo.workdir().unwrap_or(dir).to_path_buf();
    let mut index = repo.index().map_err(lg("opening the index"))?;
    // Removals first: a pruned directory may be where a new file goes.
    let mut ordered: Vec<(&String, &Option<Vec<u8>>)> = touched.iter().collect();
    ordered.sort_by_key(|(_, content)| content.is_some());
    for (path, content) in ordered {
        let file = workdir.join(path);
        match content {
            Some(bytes) => {
                if let Some(parent) = file.parent() {
                    std::fs::create_dir_all(parent).map_err(|source| GitError::Io {
                        operation: "create directory",
                        path: parent.to_path_buf(),
                        source,
                    })?;
                }
                write_by_rename(&file, bytes)?;
                index
                    .add_path(Path::new(path))
                    .map_err(lg("updating the index"))?;
            }
            None => {
                match std::fs::remove_file(&file) {
                    Ok(()) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                    Err(source) => {
                        return Err(GitError::Io {
                            operation: "remove",
                            path: file,
                            source,
                        });
                    }
                }
                // Drop directories the prune emptied, as git does on checkout.
                let mut parent = file.parent();
                while let Some(p) = parent {
                    if p == workdir || std::fs::remove_dir(p).is_err() {
                        break;
                    }
                    parent = p.parent();
                }
                index
                    .remove_path(Path::new(path))
                    .map_err(lg("updating the index"))?;
            }
        }
    }
    index.write().map_err(lg("writing the index"))
}

fn publish_remote(
    url: &str,
    refname: &str,
    managed: &str,
    set: &ArtifactSet,
    options: &PublishOptions,
) -> Result<PublishOutcome, GitError> {
    let display = redact(url);
    let temp = tempfile::tempdir().map_err(|source| GitError::Io {
        operation: "create a temporary directory in",
        path: std::env::temp_dir(),
        source,
    })?;
    let repo = Repository::init_bare(temp.path()).map_err(lg("creating a scratch repository"))?;
    let mut remote = repo
        .remote_anonymous(url)
        .map_err(|e| network_error(url, &e))?;
    let tracking = format!("refs/remotes/origin/{}", options.branch);
    let local = "refs/heads/kiln-publish";
    retried(&display, options, |attempt| {
        // Forget the previous view, so a branch deleted remotely is seen as deleted.
        if let Ok(mut old) = repo.find_reference(&tracking) {
            old.delete().map_err(lg("resetting the fetched branch"))?;
        }
        let mut fetch = git2::FetchOptions::new();
        fetch.remote_callbacks(remote_callbacks(&options.auth));
        // FETCH_HEAD would record the URL (and any password in it) on disk.
        fetch.update_fetchhead(false);
        remote
            .fetch(&[format!("+{refname}:{tracking}")], Some(&mut fetch), None)
            .map_err(|e| network_error(url, &e))?;
        let tip = branch_tip(&repo, &tracking)?;
        let parent = tip.as_ref().map(|t| t.id());
        let outcome = |made| PublishOutcome::new(&display, managed, options, parent, attempt, made);
        check_source_order(tip.as_ref(), managed, options)?;
        let Some(plan) = plan_commit(&repo, tip.as_ref(), set, managed, options)? else {
            return Ok(Attempt::Done(outcome(None)));
        };
        let commit = make_commit(&repo, tip.as_ref(), &plan, options)?;
        repo.reference(local, commit, true, "kiln publish")
            .map_err(lg("recording the commit"))?;

        // No leading `+`: a non-fast-forward is refused, never forced.
        match super::push_ref(&mut remote, &options.auth, &format!("{local}:{refname}")) {
            Ok(None) => Ok(Attempt::Done(outcome(Some((commit, &plan))))),
            Ok(Some(status)) => Ok(Attempt::Moved(status)),
            Err(e) if e.code() == git2::ErrorCode::NotFastForward => {
                Ok(Attempt::Moved(e.message().to_string()))
            }
            Err(e) => Err(network_error(url, &e)),
        }
    })
}

/// Per-environment slices of an artifact set (for teams without Kargo): the files of each
/// environment's component directories, with the environment segment dropped from their paths
/// (`web/dev/api/x.yaml` → `web/api/x.yaml` in `dev`), plus everything not tied to one
/// environment (Kargo, Argo CD, other files) in `shared`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EnvironmentSplit {
    pub environments: BTreeMap<String, ArtifactSet>,
    pub shared: ArtifactSet,
}

/// Splits `set` per environment (see [`EnvironmentSplit`]). Component directories are
/// recognised as in [`Classifier`]: a directory with a kustomization, named
/// `…/<project>/<environment>/<component>`.
pub fn split_by_environment(set: &ArtifactSet) -> EnvironmentSplit {
    let classifier = Classifier::new(set.paths(), None);
    let mut split = EnvironmentSplit::default();
    for (path, bytes) in &set.files {
        match classifier.component_depth(path) {
            Some(depth) if depth >= 2 => {
                let mut segments: Vec<&str> = path.split('/').collect();
                let environment = segments.remove(depth - 2).to_string();
                split
                    .environments
                    .entry(environment)
                    .or_default()
                    .insert(segments.join("/"), bytes.clone());
            }
            _ => split.shared.insert(path.clone(), bytes.clone()),
        }
    }
    split
}

/// Where per-environment publishes go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SplitMode {
    /// Each environment to branch `<prefix><env>` (Kargo's convention is `stage/`), at
    /// `options.path`.
    Branches { prefix: String },
    /// Each environment to `options.path/<env>` of `options.branch`.
    Paths,
}

/// Publishes each environment of `set` separately (see [`split_by_environment`]): first the
/// shared files to `options.branch`/`options.path` (when there are any; done first because
/// their marker sits above the per-environment paths in [`SplitMode::Paths`]), then one publish
/// per environment in name order. Each publish is atomic on its own; the first error stops the
/// run and is returned, earlier publishes stay.
pub fn publish_per_environment(
    set: &ArtifactSet,
    options: &PublishOptions,
    mode: &SplitMode,
) -> Result<Vec<PublishOutcome>, GitError> {
    let split = split_by_environment(set);
    let mut outcomes = Vec::new();
    if !split.shared.is_empty() {
        outcomes.push(publish(&split.shared, options)?);
    }
    for (environment, env_set) in &split.environments {
        let mut env_options = options.clone();
        env_options.environment = Some(environment.clone());
        // A filtered render's slice of this environment: the component directories it
        // rendered there (their paths without the environment segment, as in the branch).
        if options.scope != Scope::All {
            env_options.scope = Scope::Dirs(
                env_set
                    .paths()
                    .filter_map(|p| p.rsplit_once('/').map(|(d, _)| format!("{d}/")))
                    .collect(),
            );
        }
        match mode {
            SplitMode::Branches { prefix } => {
                env_options.branch = format!("{prefix}{environment}");
            }
            SplitMode::Paths => {
                let base = normalize_managed_path(options.path.as_deref())?;
                env_options.path = Some(join_path(&base, environment));
            }
        }
        outcomes.push(publish(env_set, &env_options)?);
    }
    Ok(outcomes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(repo: &Path) -> PublishOptions {
        PublishOptions::new(
            repo.display().to_string(),
            "main",
            Identity {
                name: "kiln".into(),
                email: "kiln@example.com".into(),
            },
            CommitTime {
                seconds: 1_700_000_000,
                offset_minutes: 0,
            },
            Provenance {
                source_commit: None,
                kiln_version: "0.1.0".into(),
                spec_digest: None,
                sources: Vec::new(),
            },
        )
    }

    fn set(files: &[(&str, &str)]) -> ArtifactSet {
        let mut s = ArtifactSet::new();
        for (p, b) in files {
            s.insert(*p, *b);
        }
        s
    }

    #[test]
    fn split_moves_environment_out_of_paths() {
        let s = set(&[
            ("web/dev/api/kustomization.yaml", "a"),
            ("web/prod/api/kustomization.yaml", "b"),
            ("web/kargo/warehouse.yaml", "c"),
        ]);
        let split = split_by_environment(&s);
        assert_eq!(
            split.environments["dev"].paths().collect::<Vec<_>>(),
            ["web/api/kustomization.yaml"]
        );
        assert_eq!(
            split.environments["prod"].files["web/api/kustomization.yaml"],
            b"b"
        );
        assert_eq!(
            split.shared.paths().collect::<Vec<_>>(),
            ["web/kargo/warehouse.yaml"]
        );
    }

    #[test]
    fn publish_into_bare_repo_and_rerun_is_a_no_op() {
        let dir = tempfile::tempdir().unwrap();
        Repository::init_bare(dir.path()).unwrap();
        let s = set(&[("web/dev/api/kustomization.yaml", "resources: []\n")]);
        let first = publish(&s, &options(dir.path())).unwrap();
        assert!(first.commit.is_some());
        assert_eq!(first.files.added, 1);
        let second = publish(&s, &options(dir.path())).unwrap();
        assert_eq!(second.commit, None);
        assert_eq!(second.parent, first.commit);
    }

    #[test]
    fn owned_directory_can_become_a_file() {
        let dir = tempfile::tempdir().unwrap();
        Repository::init_bare(dir.path()).unwrap();
        publish(&set(&[("a/b/c.yaml", "x")]), &options(dir.path())).unwrap();
        let outcome = publish(&set(&[("a/b", "now a file")]), &options(dir.path())).unwrap();
        assert_eq!(outcome.files.removed, 1);
        assert_eq!(outcome.files.added, 1);
        let err = publish(&set(&[("a", "f"), ("a/b", "g")]), &options(dir.path())).unwrap_err();
        assert!(matches!(err, GitError::InvalidPath { .. }), "{err:?}");
    }

    /// Issue 39, item 16: a `--path` git would read as something else, or that is not a
    /// clean relative path, is refused before anything is written.
    #[test]
    fn publish_path_refuses_git_files_blank_segments_and_control_characters() {
        let dir = tempfile::tempdir().unwrap();
        Repository::init_bare(dir.path()).unwrap();
        for bad in [
            ".gitmodules",
            "x/.gitattributes",
            ".GITIGNORE",
            "//",
            "a//b",
            "a\nb",
            " deploy",
            "deploy ",
            "a/ b /c",
        ] {
            let mut o = options(dir.path());
            o.path = Some(bad.to_string());
            let err = publish(&set(&[("a.yaml", "x")]), &o).unwrap_err();
            assert!(
                matches!(err, GitError::InvalidPath { .. }),
                "{bad:?}: {err:?}"
            );
        }
        let repo = Repository::open_bare(dir.path()).unwrap();
        assert!(
            repo.references().unwrap().next().is_none(),
            "nothing was committed"
        );
        for good in ["deploy", "/deploy/", "envs/prod"] {
            let mut o = options(dir.path());
            o.path = Some(good.to_string());
            publish(&set(&[("a.yaml", "x")]), &o).unwrap();
        }
    }

    #[test]
    fn marker_file_name_is_reserved() {
        let dir = tempfile::tempdir().unwrap();
        Repository::init_bare(dir.path()).unwrap();
        let err = publish(&set(&[(MARKER_FILE, "x")]), &options(dir.path())).unwrap_err();
        assert!(matches!(err, GitError::InvalidPath { .. }), "{err:?}");
    }

    #[test]
    fn invalid_branch_is_rejected() {
        let dir = tempfile::tempdir().unwrap();
        Repository::init_bare(dir.path()).unwrap();
        let mut o = options(dir.path());
        o.branch = "bad..name".into();
        let err = publish(&set(&[("a", "b")]), &o).unwrap_err();
        assert!(matches!(err, GitError::InvalidBranch { .. }), "{err:?}");
    }
}
